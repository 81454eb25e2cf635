"""`ragjudge fetch` against a Hub stand-in on loopback (tests/hub_server.py) with the real huggingface_hub client:
an empty cache filled, a second fetch that fetches nothing, gated repositories with and without a token, the
disk checked before any byte, and `--pin` writing the commits into model files (an unreachable Hub:
test_fetch_bounded.py; which files: test_fetch_files.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

from hub_server import HubRepo, fake_hub
from sweeps import write_sweep

from jobs.cli import main
from jobs.config import ModelConfig
from jobs.engines import weights as weights_module
from jobs.engines.preflight import model_problems
from jobs.loading import load_model

RM = {"config.json": b'{"model_type": "llama"}', "model.safetensors": b"w" * 4096}
BASE = {"config.json": b'{"model_type": "base"}', "model.safetensors": b"b" * 2048}
TOKENIZER = {"tokenizer.json": b'{"t": 1}'}
TOKEN = "hf_TestTokenValue123"  # what a leak would look like in any output


def _repos(**extra: HubRepo) -> dict[str, HubRepo]:
    return {"org/rm": HubRepo(RM), "org/base": HubRepo(BASE), "org/tok": HubRepo(TOKENIZER), **extra}


def _sweep(tmp_path: Path, *models: str) -> str:
    return str(write_sweep(tmp_path, "fetch", list(models) or [
        '{name: rm, path: "org/rm", kind: discriminative, engine: transformers, tokenizer: "org/tok"}',
        '{name: policy, path: "org/rm", kind: implicit, reference: "org/base", vllm: {enforce_eager: true}}',
        '{name: tiny, path: "builtin:tiny-random-classifier", kind: discriminative}',
        '{name: judge, path: "gpt-x", kind: api, engine: http, api: {base_env: B, key_env: K}}']))


def test_fetch_fills_an_empty_cache_then_says_cached(tmp_path, monkeypatch, capsys):
    with fake_hub(_repos(), tmp_path / "hf", monkeypatch) as hub:
        sweep = _sweep(tmp_path)
        assert main(["fetch", sweep]) == 0
        first = capsys.readouterr().out
        assert "skip models.tiny.path: builtin:tiny-random-classifier is a built-in model" in first
        assert "skip judge: engine http loads no weights here" in first
        for repo in ("org/rm", "org/base", "org/tok"):
            assert f"fetched {repo}: " in first and f"commit {hub.repos[repo].commit}" in first
        size = sum(map(len, [*RM.values(), *BASE.values(), *TOKENIZER.values()]))  # 6,183 bytes
        assert f"to fetch: 3 of 3 repositories, {size / 1e3:.1f} kB" in first
        assert f"fetched org/rm: {sum(map(len, RM.values())) / 1e3:.1f} kB in " in first
        assert all(count == 1 for count in hub.downloads.values()) and len(hub.downloads) == 5
        snapshot = tmp_path / "hf" / "models--org--rm" / "snapshots" / hub.repos["org/rm"].commit
        assert (snapshot / "model.safetensors").read_bytes() == RM["model.safetensors"]

        assert main(["fetch", sweep]) == 0
        second = capsys.readouterr().out
        assert f"cached org/rm: {sum(map(len, RM.values())) / 1e3:.1f} kB, commit {hub.repos['org/rm'].commit}" in second
        assert "fetching" not in second and "to fetch: 0 of 3 repositories" in second
        assert all(count == 1 for count in hub.downloads.values())  # nothing asked twice


def test_a_gated_repository_needs_a_token_and_the_token_is_never_printed(tmp_path, monkeypatch, capsys):
    with fake_hub(_repos(**{"org/gated": HubRepo(RM, token=TOKEN)}), tmp_path / "hf", monkeypatch) as hub:
        sweep = _sweep(tmp_path, '{name: g, path: "org/gated", kind: discriminative}',
                       '{name: rm, path: "org/rm", kind: discriminative}')
        assert main(["fetch", sweep]) == 1
        out = capsys.readouterr().out
        assert ("cannot fetch org/gated (models.g.path): 'org/gated' is a gated repository and no Hugging Face "
                "token is set") in out and "HF_TOKEN" in out
        assert "fetched org/rm" in out and not any(key.startswith("org/gated") for key in hub.downloads)
        assert "to fetch: 1 of 2 repositories, 4.1 kB (0 cached, 1 cannot be fetched)" in out
        assert "ragjudge fetch: 1 of 2 repositories not fetched (org/gated), the reason for each above" in out

        monkeypatch.setenv("HF_TOKEN", "hf_WrongToken")
        assert main(["fetch", sweep]) == 1
        assert "the token set (HF_TOKEN) has no access" in (out := capsys.readouterr().out)
        assert "hf_WrongToken" not in out

        monkeypatch.setenv("HF_TOKEN", TOKEN)
        assert main(["fetch", sweep]) == 0
        out = capsys.readouterr().out
        assert "fetched org/gated" in out and TOKEN not in out


def test_preflight_fails_a_gated_repository_without_a_token_before_any_engine(tmp_path, monkeypatch):
    with fake_hub(_repos(**{"org/gated": HubRepo(RM, token=TOKEN)}), tmp_path / "hf", monkeypatch):
        gated = ModelConfig(name="g", path="org/gated", kind="discriminative")
        problems = model_problems(gated, gpus_per_node=0)
        assert [p for p in problems if "gated" in p] == [
            ("models.g.path: 'org/gated' is a gated repository and no Hugging Face token is set: accept its terms "
             "on the Hub and set HF_TOKEN to a token of that account")]
        assert not [p for p in model_problems(ModelConfig(name="rm", path="org/rm", kind="discriminative"), 0)
                    if "gated" in p]
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        assert not [p for p in model_problems(gated, 0) if "gated" in p]


def test_nothing_is_fetched_when_the_cache_disk_cannot_hold_it(tmp_path, monkeypatch, capsys):
    with fake_hub(_repos(), tmp_path / "hf", monkeypatch) as hub:
        real = shutil.disk_usage
        monkeypatch.setattr(weights_module.shutil, "disk_usage",
                            lambda path: real(path)._replace(free=5000))  # a disk with 5 kB left
        assert main(["fetch", _sweep(tmp_path)]) == 1
        out = capsys.readouterr().out
        assert "ragjudge fetch: 6.2 kB do not fit in the 5.0 kB free: nothing fetched" in out
        assert not hub.downloads


def test_pin_writes_each_model_files_commit_and_keeps_the_rest(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf" / "models"
    conf.mkdir(parents=True)
    (conf / "rm.yaml").write_text("# a reward model\nname: rm\npath: org/rm  # the hub id\nkind: discriminative\n"
                                  "engine: transformers\n")
    (conf / "base.yaml").write_text("name: base\npath: org/base\nrevision: main\nkind: implicit\n")
    with fake_hub(_repos(), tmp_path / "hf", monkeypatch) as hub:
        sweep = write_sweep(tmp_path, "pins", ["rm", "base"])
        assert main(["fetch", str(sweep)]) == 0
        assert "2 model files load hub weights at no commit sha (rm, base)" in capsys.readouterr().out
        assert main(["fetch", str(sweep), "--pin"]) == 0
        out = capsys.readouterr().out
        rm, base = hub.repos["org/rm"].commit, hub.repos["org/base"].commit
        assert f"pinned rm: revision {rm} in {conf / 'rm.yaml'}" in out
        assert f"pinned base: revision {base} (was main)" in out
        assert (conf / "rm.yaml").read_text() == (
            f"# a reward model\nname: rm\npath: org/rm  # the hub id\nrevision: {rm}  # pinned by ragjudge fetch "
            "--pin\nkind: discriminative\nengine: transformers\n")
        assert load_model("base", "test", [tmp_path / "conf"]).revision == base
        assert main(["fetch", str(sweep), "--pin"]) == 0
        out = capsys.readouterr().out
        assert f"rm: revision {rm} already pinned" in out and "cached org/rm" in out
