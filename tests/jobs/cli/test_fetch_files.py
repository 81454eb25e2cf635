"""What `ragjudge fetch` downloads of a repository: only what the engine loads (its weights in one format, config,
tokenizer; a tokenizer repository's tokenizer), against the loopback Hub stand-in; a snapshot holding that is
cached for fetch, plan, `ragjudge models` (weight_problems) and the manifest alike; and plan and fetch count the
same repositories for the 45-model sweep."""
from __future__ import annotations

from pathlib import Path

from hub_cache import offline_hub_cache
from hub_server import HubRepo, fake_hub
from sweeps import write_sweep

from jobs.cli import main
from jobs.cli.fetch import sweep_models
from jobs.config import ModelConfig
from jobs.engines.preflight import weight_problems
from jobs.engines.weights import cached_commit, hub_weights, hub_weights_of
from jobs.loading import load_sweep
from jobs.plan import plan_downloads

REPO = Path(__file__).resolve().parents[3]


def _files(repo: str, sizes: dict[str, int]) -> dict[str, bytes]:
    """Files of about these sizes, each with contents of its own (the cache keeps one blob per content)."""
    return {name: f"{repo}/{name}".encode().ljust(size, b".") for name, size in sizes.items()}


LOADED = _files("full", {"config.json": 0, "generation_config.json": 0, "tokenizer.json": 0,
                         "tokenizer_config.json": 0, "special_tokens_map.json": 0, "model.safetensors": 3000})
# Beside the safetensors: a .bin copy of the same weights, Meta's original checkpoint, and files no engine reads.
FULL = {**LOADED, **_files("full", {"pytorch_model.bin": 3000, "original/consolidated.00.pth": 5000,
                                    "original/params.json": 0, "original/tokenizer.model": 0, "README.md": 0,
                                    ".gitattributes": 0})}
BIN_ONLY = _files("bin-only", {"config.json": 0, "tokenizer.json": 0, "pytorch_model.bin": 2000})
CHAT = _files("chat", {"config.json": 0, "tokenizer.json": 0, "tokenizer.model": 0, "tokenizer_config.json": 0,
                       "README.md": 0, "model.safetensors": 8000})
MODELS = ['{name: rm, path: "org/full", kind: discriminative, engine: transformers, tokenizer: "org/chat"}',
          '{name: old, path: "org/bin-only", kind: implicit, engine: vllm, vllm: {enforce_eager: true}}']


def test_only_what_each_engine_loads_is_fetched_and_then_counts_as_cached_everywhere(tmp_path, monkeypatch, capsys):
    repos = {"org/full": HubRepo(FULL), "org/bin-only": HubRepo(BIN_ONLY), "org/chat": HubRepo(CHAT)}
    with fake_hub(repos, tmp_path / "hf", monkeypatch) as hub:
        sweep = load_sweep(str(write_sweep(tmp_path, "files", MODELS)), [])
        rm, old = sweep.models["rm"], sweep.models["old"]
        assert weight_problems(rm, hub=True) and not any(d.cached for d in plan_downloads(sweep.models.values()))

        assert main(["fetch", str(tmp_path / "conf" / "sweeps" / "files.yaml")]) == 0
        out = capsys.readouterr().out
        assert set(hub.downloads) == {f"org/full/{name}" for name in LOADED} | {
            "org/bin-only/config.json", "org/bin-only/pytorch_model.bin", "org/bin-only/tokenizer.json",  # no safetensors
            "org/chat/config.json", "org/chat/tokenizer.json", "org/chat/tokenizer.model",  # its tokenizer alone
            "org/chat/tokenizer_config.json"}
        loaded = sum(map(len, LOADED.values()))
        tokenizer = sum(len(CHAT[name]) for name in ("config.json", "tokenizer.json", "tokenizer.model",
                                                     "tokenizer_config.json"))
        fetched = loaded + sum(map(len, BIN_ONLY.values())) + tokenizer
        assert f"to fetch: 3 of 3 repositories, {fetched / 1e3:.1f} kB" in out

        assert main(["fetch", str(tmp_path / "conf" / "sweeps" / "files.yaml")]) == 0
        again = capsys.readouterr().out
        assert "to fetch: 0 of 3 repositories, 0.0 kB (3 cached, 0 cannot be fetched)" in again
        assert f"cached org/full: {loaded / 1e3:.1f} kB, commit {hub.repos['org/full'].commit}" in again
        planned = {d.repo: d for d in plan_downloads(sweep.models.values())}
        assert planned["org/full"].cached and planned["org/full"].bytes == loaded  # the bytes fetch counts
        assert planned["org/chat"].cached and planned["org/chat"].bytes == tokenizer  # not its weights
        assert weight_problems(rm, hub=True) == {} and weight_problems(old, hub=True) == {}
        assert cached_commit(hub_weights_of(rm, "path")) == hub.repos["org/full"].commit
        # Loaded as the model's own weights rather than as a tokenizer, org/chat is not complete here.
        chat = ModelConfig(name="chat", path="org/chat", kind="discriminative", engine="transformers")
        assert "path" in weight_problems(chat, hub=True)


def test_plan_and_fetch_count_the_same_repositories_for_the_45_model_sweep(tmp_path, monkeypatch):
    offline_hub_cache(tmp_path, monkeypatch)  # an empty cache: no repository of this machine's counts as cached
    sweep = load_sweep(str(REPO / "conf" / "sweeps" / "rag_rewardbench_45.yaml"), [])
    fetched = [w.what for w in hub_weights(sweep_models(sweep))]
    planned = plan_downloads(sweep.models.values())
    assert [d.repo for d in planned] == fetched
    assert len(fetched) == 38 and len(set(fetched)) == 38
    tokenizer = next(d for d in planned if d.repo == "01-ai/Yi-34B-Chat")  # starling_rm_34b's tokenizer only
    assert tokenizer.users == ("models.starling_rm_34b.tokenizer",) and tokenizer.bytes is None
