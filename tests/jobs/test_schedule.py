"""Admission of concurrent cells (jobs.schedule), without Ray: demands, fitting, order and the thread pool."""
from __future__ import annotations

import threading
import time

from jobs.config import ModelConfig
from jobs.schedule import STAGE_CPUS, cell_demand, fits, next_cell, rounds_demand, run_concurrently


def model(**kw) -> ModelConfig:
    return ModelConfig(name="m", path="p", kind="generative", **kw)


def test_demand_counts_engine_ranks_actors_and_the_cells_own_stages():
    assert cell_demand(model()) == {"CPU": STAGE_CPUS + 1.0, "GPU": 0.0}
    # A 70B judge: 2 engines of 4 tensor-parallel GPUs each, one CPU per rank.
    assert cell_demand(model(num_gpus=1, tensor_parallel_size=4, min_actors=2)) == {"CPU": 0.5 + 8, "GPU": 8.0}
    # A fractional GPU on a transformers scorer is what its actor asks Ray for; no ranks there.
    assert cell_demand(model(engine="transformers", num_gpus=0.5, tensor_parallel_size=4)) == {"CPU": 1.5, "GPU": 0.5}
    assert cell_demand(model(shared=True, num_gpus=1, tensor_parallel_size=8)) == {"CPU": 0.5, "GPU": 0.0}


def test_fits_against_what_is_already_running():
    capacity = {"CPU": 16.0, "GPU": 8.0}
    assert fits({"CPU": 4.5, "GPU": 4.0}, [{"CPU": 4.5, "GPU": 4.0}], capacity)
    assert not fits({"CPU": 4.5, "GPU": 4.0}, [{"CPU": 4.5, "GPU": 4.0}, {"CPU": 1.5, "GPU": 1.0}], capacity)
    assert not fits({"CPU": 12.0, "GPU": 0.0}, [{"CPU": 4.5, "GPU": 0.0}], capacity)  # CPUs count too


def test_next_cell_backfills_and_never_waits_on_an_empty_cluster():
    capacity = {"CPU": 16.0, "GPU": 8.0}
    big, small = {"CPU": 8.5, "GPU": 8.0}, {"CPU": 1.5, "GPU": 1.0}
    assert next_cell([big, small], [], capacity) == 0
    assert next_cell([big, small], [{"CPU": 1.5, "GPU": 1.0}], capacity) == 1  # the big one waits, the small runs
    assert next_cell([big], [small], capacity) is None
    assert next_cell([{"CPU": 1.0, "GPU": 16.0}], [], capacity) == 0  # too big for any node: let Ray say so
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
    results = run_concurrently(cells, lambda c: {"CPU": c[1], "GPU": 0.0}, run, lambda: {"CPU": 4.0, "GPU": 0.0})
    assert results == [f"done {c[0]}" for c in cells]
    assert state["peak"] == 2  # 4 CPUs hold two cells of 2

    state["peak"] = 0
    run_concurrently(cells, lambda c: {"CPU": 0.0, "GPU": 0.0}, run, lambda: {"CPU": 4.0, "GPU": 0.0},
                     max_concurrent=3)
    assert state["peak"] == 3  # the configured limit binds before the resources do


def test_a_cell_with_judges_holds_the_most_any_of_its_engines_needs():
    generator = ModelConfig(name="g", path="p", kind="generative", engine="vllm", num_gpus=1, num_cpus=2)
    judge = ModelConfig(name="j", path="q", kind="generative", engine="vllm", num_gpus=1, tensor_parallel_size=4)
    api = ModelConfig(name="a", path="gpt", kind="api", engine="http", num_cpus=1)
    # rounds run one engine after another: generator (2 CPUs + stages, 1 GPU), judge (4 ranks: 4 GPUs, 4 CPUs)
    assert rounds_demand([generator, judge]) == {"CPU": STAGE_CPUS + 4, "GPU": 4.0}
    assert rounds_demand([generator, api]) == cell_demand(generator)
    assert rounds_demand([generator]) == cell_demand(generator)
