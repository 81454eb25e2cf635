"""Tensor parallel through the placement-group code (issue 28, item 4), on vLLM's CPU build: one CPU bundle per
rank, STRICT_PACK, the engine actor inside the group and its two rank processes on the group's CPUs. Its
scores equal the demo's single-rank classifier on the same pairs, which one rank would also give: the engine's
ranks (VllmServer.ranks) say that two processes ran, each holding half of the weights."""
from __future__ import annotations

from pathlib import Path

import pytest
from sweeps import write_sweep
from worker_models import worker_of

from actors.built_in_models import TINY_CLASSIFIER, resolve_model
from jobs.engines.base import engine_of
from jobs.engines.host import EngineHost
from jobs.loading import load_sweep
from jobs.store.run_root import open_run
from jobs.sweep.pipeline import run_sweep

pytestmark = pytest.mark.integration
TP2 = ('{name: tiny_tp2, path: "builtin:tiny-random-classifier", kind: discriminative, engine: vllm, '
       'tensor_parallel_size: 2, max_model_len: 4096, batch_size: 8, vllm: {enforce_eager: true}}')


def test_the_placement_group_has_a_cpu_bundle_per_rank_on_one_node(ray_session, tmp_path):
    ray = ray_session
    sweep = load_sweep(write_sweep(tmp_path, "tp", [TP2], f'root: "{tmp_path / "results"}"'))
    model = sweep.models["tiny_tp2"]
    options, group = engine_of(model).placement(model, worker_of(model))
    try:
        assert group.bundle_specs == [{"CPU": 1.0}, {"CPU": 1.0}]
        assert ray.util.placement_group_table(group)["strategy"] == "STRICT_PACK"
        assert options["scheduling_strategy"].placement_group is group and options["num_cpus"] == 0
    finally:
        ray.util.remove_placement_group(group)


def _checkpoint_weights(folder: str) -> int:
    """The weights in a checkpoint's safetensors files: what a single rank holds."""
    from safetensors.torch import load_file

    return sum(t.numel() for file in Path(folder).glob("*.safetensors") for t in load_file(file).values())


def test_two_ranks_on_cpu_score_as_one(ray_session, demo, tmp_path, monkeypatch):
    ray, stop, ranks = ray_session, EngineHost._stop, []

    def read_ranks_then_stop(host: EngineHost, name: str) -> None:
        """The engine's ranks, asked while it still runs: the host stops it at the end of the sweep."""
        if name in host._servers:
            ranks.extend(ray.get(host._servers[name][0].ranks.remote(), timeout=120))
        stop(host, name)

    monkeypatch.setattr(EngineHost, "_stop", read_ranks_then_stop)
    _, demo_run, _ = demo
    sweep = load_sweep(write_sweep(tmp_path, "tp", [TP2], f'root: "{tmp_path / "results"}"'))
    [outcome] = run_sweep(sweep, log=lambda line: None)
    assert outcome.status == "done", outcome.message
    assert [r["rank"] for r in ranks] == [0, 1] and {r["world_size"] for r in ranks} == {2}, ranks
    assert len({r["pid"] for r in ranks}) == 2, ranks  # two rank processes
    weights = _checkpoint_weights(resolve_model(TINY_CLASSIFIER))
    for rank in ranks:  # half the embeddings and layers each; the norms and the 128-weight head on both
        assert rank["weights"] == pytest.approx(weights / 2, rel=0.01), (rank, weights)
    print(f"tensor parallel: ranks {ranks}, one rank's weights {weights}")
    run = open_run(str(tmp_path / "results" / "tp"))
    one = {r["request_id"]: r["score"] for r in demo_run.read_rows("requests", "rag_rewardbench", "tiny_classifier")}
    two = {r["request_id"]: r["score"] for r in run.read_rows("requests", "rag_rewardbench", "tiny_tp2")}
    assert len(two) == 12 and two.keys() == one.keys()
    for request, score in two.items():
        assert score == pytest.approx(one[request], abs=1e-4), request
