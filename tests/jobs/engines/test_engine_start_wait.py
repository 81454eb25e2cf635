"""An engine's start is a bounded wait (issue 64): while Ray cannot place it, a line says what it needs and what
the cluster has free; past `cluster.engine_start_s` the cells waiting for it fail with one line naming why, the
sweep's other cells go on, and the run ends non-zero."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest
from sweeps import write_sweep
from worker_models import worker_of

from jobs.engines.host import EngineHost
from jobs.engines.waiting import WaitTimeout, shortfall
from jobs.loading import load_sweep
from jobs.sweep.pipeline import run_sweep

TINY = '{name: NAME, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers, batch_size: 4'


def test_the_line_says_what_the_engine_needs_and_what_the_cluster_has_free():
    assert shortfall({"CPU": 1.0, "GPU": 4.0}, {"CPU": 6.0, "GPU": 2.0, "memory": 1e9}) == (
        "needs 4 GPU, 1 CPU; the cluster has 2 GPU, 6 CPU free")
    assert shortfall({"CPU": 64.0, "GPU": 0.0}, {}) == "needs 64 CPU; the cluster has 0 CPU free"
    assert shortfall({"CPU": 0.5, "GPU": 0.0, "TPU": 8.0}, {"CPU": 0.25}) == (
        "needs 0.5 CPU, 8 TPU; the cluster has 0.25 CPU, 0 TPU free")
    # enough in all, not on any one node: an actor (or a STRICT_PACK group) is placed on one
    assert shortfall({"CPU": 3.0}, {"CPU": 3.0}, [{"CPU": 2.0}, {"CPU": 1.0}]) == (
        "needs 3 CPU; the cluster has 3 CPU free, at most 2 CPU on one node")


@pytest.mark.integration
def test_an_engine_ray_cannot_place_fails_its_start_in_time_and_says_why_while_it_waits(ray_session, tmp_path):
    sweep = load_sweep(write_sweep(tmp_path, "huge", [TINY.replace("NAME", "huge") + ", num_cpus: 64}"],
                                   f'root: "{tmp_path / "results"}"'))
    model = sweep.models["huge"]
    lines: list[str] = []
    host = EngineHost(log=lines.append, start_s=3.0)
    host.every = 1.0
    began = time.monotonic()
    with pytest.raises(WaitTimeout) as failed:
        host.server(model, worker_of(model), worker_of(model).path, "score")
    took = time.monotonic() - began
    assert 3.0 <= took < 10.0, took
    said = str(failed.value)
    assert said.startswith("engine huge-score for huge did not start in 3 s (cluster.engine_start_s): Ray could "
                           "not place it; needs 64 CPU; the cluster has "), said
    assert "\n" not in said
    waiting = [line for line in lines if "waiting for room" in line]
    assert waiting and waiting[0].startswith("engine huge-score waiting for room: 1 s of 3 s; needs 64 CPU; "
                                             "the cluster has "), lines
    assert lines[-1] == f"ERROR {said}"
    again = time.monotonic()
    with pytest.raises(WaitTimeout, match="did not start in 3 s"):  # a later cell of the run: at once
        host.server(model, worker_of(model), worker_of(model).path, "score")
    assert time.monotonic() - again < 1.0
    host.close()


@pytest.mark.integration
def test_a_cell_whose_engine_cannot_be_placed_fails_with_its_reason_and_the_others_finish(ray_session, tmp_path):
    models = [TINY.replace("NAME", "fits") + "}", TINY.replace("NAME", "huge") + ", num_cpus: 64}"]
    # without the answer store: the second model's answers are the first's, and it would start no engine
    sweep = load_sweep(write_sweep(tmp_path, "shrunk", models, f'root: "{tmp_path / "results"}", answer_cache: false'))
    sweep = replace(sweep, cluster=replace(sweep.cluster, engine_start_s=45.0))  # the tiny engine starts in 10 s here
    lines: list[str] = []
    outcomes = {o.model: o for o in run_sweep(sweep, log=lines.append)}
    assert outcomes["fits"].status == "done", outcomes["fits"].message
    assert outcomes["huge"].status == "failed"
    assert outcomes["huge"].message.startswith(
        ": WaitTimeout: engine huge-score for huge did not start in 45 s (cluster.engine_start_s): Ray could not "
        "place it; needs 64 CPU"), outcomes["huge"].message


@pytest.mark.integration
def test_what_ray_cannot_place_is_named_with_each_shape_and_the_clusters_free_resources(ray_session):
    """The progress line's words for a sweep that moves nothing (jobs.sweep.progress): the demand Ray's autoscaler
    sees, by shape, against what is free; nothing once it is placed or gone."""
    import re

    import ray

    from jobs.engines.waiting import unplaced_demand

    too_big = ray.remote(num_cpus=64)(lambda: None)
    refs = [too_big.remote(), too_big.remote()]
    try:
        expected = r"Ray cannot place 2 tasks or actors yet \(2 x 64 CPU\); the cluster has \d+(\.\d+)? CPU free"
        deadline, said = time.time() + 60, None
        # the autoscaler's view lags the tasks: a second or so, one task before the other under load
        while time.time() < deadline and not (said and re.fullmatch(expected, said)):
            said = unplaced_demand()
            time.sleep(0.5)
        assert said is not None and re.fullmatch(expected, said), said
    finally:
        for ref in refs:
            ray.cancel(ref, force=True)
    deadline = time.time() + 60
    while time.time() < deadline and unplaced_demand() is not None:
        time.sleep(0.5)
    assert unplaced_demand() is None
