"""Admission of concurrent cells (jobs.engines.demand, jobs.sweep.admission), without Ray: demands, fitting, order and the thread pool."""
from __future__ import annotations

import itertools
import threading
import time

from jobs.config import ModelConfig
from jobs.engines.demand import STAGE_CPUS, Need, cell_need, engine_demand, total
from jobs.engines.vllm.settings import ServeSettings
from jobs.sweep.admission import fits, next_cell, run_concurrently


def model(**kw) -> ModelConfig:
    return ModelConfig(name="m", path="p", kind="generative", **kw)


_ENGINES = itertools.count()


def need(cpu: float, gpu: float, engine: str | None = None) -> Need:
    """A cell of no stages of its own whose engine `engine` (default: its own, unshared) holds cpu/gpu."""
    return Need(stage={"CPU": 0.0, "GPU": 0.0}, engines={engine or f"e{next(_ENGINES)}": {"CPU": cpu, "GPU": gpu}})


def test_engine_demand_counts_ranks_and_replicas():
    assert engine_demand(model()) == {"CPU": 1.0, "GPU": 0.0}
    # A 70B judge: 2 engines of 4 tensor-parallel GPUs each, one CPU per rank.
    assert engine_demand(model(num_gpus=1, tensor_parallel_size=4, min_actors=2)) == {"CPU": 8.0, "GPU": 8.0}
    # A fractional GPU on a transformers scorer on one device is what its actor asks Ray for; split over 4 devices
    # (jobs.engines.transformers.devices) its one actor holds 4 whole GPUs.
    assert engine_demand(model(engine="transformers", num_gpus=0.5)) == {"CPU": 1.0, "GPU": 0.5}
    assert engine_demand(model(engine="transformers", num_gpus=0.5, tensor_parallel_size=4)) == {"CPU": 1.0, "GPU": 4.0}
    assert engine_demand(model(serve=ServeSettings(shared=True), num_gpus=1, tensor_parallel_size=8)) == {"CPU": 0.0, "GPU": 0.0}


def test_cells_of_one_model_count_its_engine_once_and_their_stages_each():
    generator = ModelConfig(name="g", path="p", kind="generative", engine="vllm", num_gpus=1, num_cpus=2)
    judge = ModelConfig(name="j", path="q", kind="generative", engine="vllm", num_gpus=1, tensor_parallel_size=4)
    # two cells of the generator, one of which also routes to the judge: g (2 CPUs, 1 GPU) + j (4 + 4) once each
    assert total([cell_need([generator]), cell_need([generator, judge])]) == {
        "CPU": 2 * STAGE_CPUS + 2 + 4, "GPU": 1.0 + 4.0}
    assert total([cell_need([generator])]) == {"CPU": STAGE_CPUS + 2, "GPU": 1.0}


def test_fits_against_what_is_already_running():
    capacity = {"CPU": 16.0, "GPU": 8.0}
    assert fits(need(4.5, 4.0), [need(4.5, 4.0)], capacity)
    assert not fits(need(4.5, 4.0), [need(4.5, 4.0), need(1.5, 1.0)], capacity)
    assert not fits(need(12.0, 0.0), [need(4.5, 0.0)], capacity)  # CPUs count too
    # the same 8-GPU engine twice is one engine: a second cell of that model fits beside the first
    assert fits(need(8.0, 8.0, "judge"), [need(8.0, 8.0, "judge")], capacity)


def test_next_cell_backfills_and_never_waits_on_an_empty_cluster():
    capacity = {"CPU": 16.0, "GPU": 8.0}
    big, small = need(8.5, 8.0), need(1.5, 1.0)
    assert next_cell([big, small], [], capacity) == 0
    assert next_cell([big, small], [need(1.5, 1.0)], capacity) == 1  # the big one waits, the small runs
    assert next_cell([big], [small], capacity) is None
    assert next_cell([need(1.0, 16.0)], [], capacity) == 0  # too big for any node: let Ray say so
    assert next_cell([], [], capacity) is None


def test_cells_run_side_by_side_up_to_the_capacity_and_results_keep_their_order():
    lock, state = threading.Lock(), {"now": 0, "peak": 0}

    def run(cell):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return f"done {cell[0]}"

    cells = [("a", 2.0), ("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 2.0)]
    results = run_concurrently(cells, lambda c: need(c[1], 0.0), run, lambda: {"CPU": 4.0, "GPU": 0.0})
    assert results == [f"done {c[0]}" for c in cells]
    assert state["peak"] == 2  # 4 CPUs hold two cells of 2

    state["peak"] = 0
    run_concurrently(cells, lambda c: need(0.0, 0.0), run, lambda: {"CPU": 4.0, "GPU": 0.0},
                     max_concurrent=3)
    assert state["peak"] == 3  # the configured limit binds before the resources do


def test_models_run_longest_first_by_cells_served_then_size_ties_in_sweep_order():
    from jobs.sweep.pipeline import longest_first

    def sized(name, params_b=None):
        return ModelConfig(name=name, path="p", kind="generative", params_b=params_b)

    small, big, judge, unsized, twin = sized("small", 8.0), sized("big", 70.0), sized("judge", 0.1), sized("u"), \
        sized("twin", 8.0)
    # Each list is one cell's users: its own model, then the judges it routes to (a judge of itself counts once).
    cells = [["small"], ["big"], ["judge", "judge"], ["u", "judge"], ["twin"], ["small", "judge"]]
    order = longest_first([small, big, judge, unsized, twin], cells)
    assert [m.name for m in order] == ["judge", "small", "big", "twin", "u"]


def test_a_node_that_joins_while_a_cell_runs_admits_the_waiting_cell_before_that_cell_ends(monkeypatch):
    """The first cell ends only once the second has started: without re-reading the cluster while the first
    runs, the second would wait for it forever (here: until the 10 s guard, and the order would say so)."""
    monkeypatch.setattr("jobs.sweep.admission.RECHECK_S", 0.05)
    second_started = threading.Event()
    events, reads = [], []

    def run(cell: str) -> str:
        events.append(f"start {cell}")
        if cell == "a":
            second_started.wait(timeout=10)
        else:
            second_started.set()
        events.append(f"end {cell}")
        return cell

    def capacity() -> dict[str, float]:
        """One CPU for the first two reads (a admitted, b refused), two once the node has joined."""
        reads.append(1)
        return {"CPU": 2.0 if len(reads) > 2 else 1.0, "GPU": 0.0}

    assert run_concurrently(["a", "b"], lambda _: need(1.0, 0.0), run, capacity) == ["a", "b"]
    assert events.index("start b") < events.index("end a")
