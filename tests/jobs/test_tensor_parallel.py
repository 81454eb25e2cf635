"""Tensor parallel through the placement-group code (issue 28, item 4), on vLLM's CPU build: one CPU bundle per
rank, STRICT_PACK, the engine actor inside the group and its two rank processes on the group's CPUs. Its
scores equal the demo's single-rank classifier on the same pairs."""
from __future__ import annotations

import pytest
from sweeps import write_sweep

from jobs.config import to_dict
from jobs.engines import engine_of
from jobs.loading import load_sweep
from jobs.store.run_root import open_run
from jobs.sweep.pipeline import run_sweep

pytestmark = pytest.mark.integration
TP2 = ('{name: tiny_tp2, path: "builtin:tiny-random-classifier", kind: discriminative, engine: vllm, '
       'tensor_parallel_size: 2, max_model_len: 4096, batch_size: 8, enforce_eager: true}')


def test_the_placement_group_has_a_cpu_bundle_per_rank_on_one_node(ray_session, tmp_path):
    ray = ray_session
    sweep = load_sweep(write_sweep(tmp_path, "tp", [TP2], f'root: "{tmp_path / "results"}"'))
    model = sweep.models["tiny_tp2"]
    options, group = engine_of(model).placement(model, to_dict(model))
    try:
        assert group.bundle_specs == [{"CPU": 1.0}, {"CPU": 1.0}]
        assert ray.util.placement_group_table(group)["strategy"] == "STRICT_PACK"
        assert options["scheduling_strategy"].placement_group is group and options["num_cpus"] == 0
    finally:
        ray.util.remove_placement_group(group)


def test_two_ranks_on_cpu_score_as_one(demo, tmp_path):
    _, demo_run, _ = demo
    sweep = load_sweep(write_sweep(tmp_path, "tp", [TP2], f'root: "{tmp_path / "results"}"'))
    [outcome] = run_sweep(sweep, log=lambda line: None)
    assert outcome.status == "done", outcome.message
    run = open_run(str(tmp_path / "results" / "tp"))
    one = {r["request_id"]: r["score"] for r in demo_run.read_rows("requests", "rag_rewardbench", "tiny_classifier")}
    two = {r["request_id"]: r["score"] for r in run.read_rows("requests", "rag_rewardbench", "tiny_tp2")}
    assert len(two) == 12 and two.keys() == one.keys()
    for request, score in two.items():
        assert score == pytest.approx(one[request], abs=1e-4), request
