"""Weights ahead of engines (jobs.engines.prefetch) against the loopback Hub stand-in: one download at a time in
the engines' order, an engine that starts early brought to the front, two engines on the same weights served by
one download fetching only what the engine loads, an engine's wait said while it lasts, a failed fetch named to
the cell; and, on Ray, a sweep whose second model's engine starts from a
local copy fetched while the first model's cell ran."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from hub_server import HubRepo, fake_hub
from sweeps import write_sweep
from worker_models import worker_of

from actors.worker_model import WorkerModel
from jobs.config import ModelConfig
from jobs.engines.prefetch import Prefetch, WeightsUnavailable
from jobs.engines.weights import hub_weights
from jobs.loading import load_sweep
from jobs.sweep.pipeline import run_sweep

FILES = {"config.json": b"{}", "model.safetensors": b"w" * 1024}


def _model(name: str, path: str, **settings) -> ModelConfig:
    return ModelConfig(name=name, path=path, kind="discriminative", engine="transformers", **settings)


def test_downloads_go_one_at_a_time_in_order_and_an_early_engine_jumps_the_queue(tmp_path, monkeypatch):
    repos = {"org/a": HubRepo(FILES, delay_s=1.0), "org/b": HubRepo({"config.json": b'{"b": 1}'}),
             "org/c": HubRepo({"config.json": b'{"c": 1}'})}
    with fake_hub(repos, tmp_path / "hf", monkeypatch) as hub:
        lines: list[str] = []
        models = [_model("a", "org/a"), _model("b", "org/b"), _model("c", "org/c")]
        prefetch = Prefetch(hub_weights(models), lines.append, every_s=0.2)
        while not hub.downloads:  # until org/a's files are downloading (1 s each)
            time.sleep(0.05)
        folder = prefetch.local("org/c", None)  # c's engine starts first: c goes next, before b
        assert folder == str(tmp_path / "hf" / "models--org--c" / "snapshots" / repos["org/c"].commit)
        assert any(line.startswith("an engine waits for org/c to download: ") for line in lines)  # while org/a's ran
        assert prefetch.local("org/b", None).endswith(repos["org/b"].commit)
        done = [line.split()[1].rstrip(":") for line in lines if line.startswith("prefetched")]
        assert done == ["org/a", "org/c", "org/b"]
        assert prefetch.local("someone/else", None) == "someone/else"  # no hub weights of the sweep
        assert all(count == 1 for count in hub.downloads.values())


def test_two_engines_on_weights_still_downloading_wait_for_that_one_download(tmp_path, monkeypatch):
    beside = {"pytorch_model.bin": b"b" * 1024, "original/consolidated.00.pth": b"p" * 1024}  # no engine reads them
    with fake_hub({"org/a": HubRepo({**FILES, **beside}, delay_s=1.0), "org/tok": HubRepo({"tokenizer.json": b"{}"})},
                  tmp_path / "hf", monkeypatch) as hub:
        model = _model("a", "org/a", tokenizer="org/tok")
        prefetch = Prefetch(hub_weights([model]), lambda line: None)
        settings = worker_of(model)
        got: list[tuple[WorkerModel, str]] = []
        engines = [threading.Thread(target=lambda: got.append(prefetch.localized(model, settings, "org/a")))
                   for _ in range(2)]
        for engine in engines:
            engine.start()
        for engine in engines:
            engine.join(timeout=30)
        snapshot = str(tmp_path / "hf" / "models--org--a" / "snapshots" / hub.repos["org/a"].commit)
        assert [(s.path, path) for s, path in got] == [(snapshot, snapshot)] * 2
        assert got[0][0].tokenizer.endswith(hub.repos["org/tok"].commit) and settings.path == "org/a"  # a copy
        assert dict(hub.downloads) == {"org/a/config.json": 1, "org/a/model.safetensors": 1, "org/tok/tokenizer.json": 1}


def test_weights_that_cannot_be_fetched_fail_the_engine_that_needs_them_with_the_reason(tmp_path, monkeypatch):
    with fake_hub({"org/gated": HubRepo(FILES, token="hf_x")}, tmp_path / "hf", monkeypatch):
        prefetch = Prefetch(hub_weights([_model("g", "org/gated")]), lambda line: None)
        with pytest.raises(WeightsUnavailable, match="org/gated: GatedRepoError"):
            prefetch.local("org/gated", None)


@pytest.mark.integration
def test_the_next_models_weights_download_while_the_current_engine_runs(ray_session, tmp_path, monkeypatch):
    """Model B's repository takes DELAY_S to download; the sweep runs one cell at a time, A's first. B's engine
    starts from the local snapshot fetched while A's cell ran: it begins less than DELAY_S after A's cell ends,
    and its own start holds no download."""
    from actors.built_in_models import TINY_CLASSIFIER, resolve_model

    delay_s = 20.0
    folder = resolve_model(TINY_CLASSIFIER)
    files = {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}
    repos = {"org/a": HubRepo(files), "org/b": HubRepo({**files, "README.md": b"model b"}, delay_s=delay_s)}
    with fake_hub(repos, tmp_path / "hf", monkeypatch):
        sweep = write_sweep(tmp_path, "prefetch", [
            '{name: a, path: "org/a", kind: discriminative, engine: transformers, batch_size: 4}',
            '{name: b, path: "org/b", kind: discriminative, engine: transformers, batch_size: 4}'],
            storage=f'root: "{tmp_path}/results"')
        outcomes = run_sweep(load_sweep(sweep, ["max_concurrent_cells=1"]))
        assert [o.status for o in outcomes] == ["done", "done"]
    manifest = json.loads((tmp_path / "results" / "prefetch" / "manifest.json").read_text())
    a_ended = manifest["cells"]["rag_rewardbench/a"]["finished_at"]
    b_engine = next(e for e in manifest["engines"] if e["model"] == "b")
    assert b_engine["starts"] == 1 and b_engine["start_s"] < delay_s
    assert b_engine["start_times"][0]["began"] - a_ended < delay_s
    assert manifest["weights"]["b"]["path"] == {"hub": "org/b", "commit": repos["org/b"].commit}


def test_on_a_cluster_of_other_machines_engines_wait_for_the_download_then_load_by_hub_id(tmp_path, monkeypatch):
    with fake_hub({"org/a": HubRepo(FILES, delay_s=0.5)}, tmp_path / "hf", monkeypatch) as hub:
        model = _model("a", "org/a")
        prefetch = Prefetch(hub_weights([model]), lambda line: None, localize=False)
        settings, path = prefetch.localized(model, worker_of(model), "org/a")
        assert (settings.path, path) == ("org/a", "org/a")  # a folder of this disk may not be on theirs
        assert hub.downloads["org/a/model.safetensors"] == 1  # and the cache holds it before the engine starts
