"""A cell's metrics from its shards' reducer states (jobs.flow.cell_metrics): with the driver connected to Ray
each state is in the object store (the driver holds references only) and one task summarizes them, to the same
metrics as in the driver's own memory; shards merge in order, so an item seen again in a later shard counts once,
with its later value, whatever order the shards' states came in (a shard the driver walks after a Ray task
walked the others: jobs.flow.shard_tasks)."""
import pytest

from benchmarks.protocol import benchmark
from jobs.flow.cell_metrics import CellMetrics, summarized
from jobs.flow.reducers import reducer_of

pytestmark = pytest.mark.integration

SHARDS = [
    [("a", 1.0, "helpful-x"), ("b", 0.0, "helpful-x"), ("d", 1.0, "reason-y")],
    [("c", 1.0, "helpful-x")],
    [("a", 0.0, "helpful-x")],  # item a again (a resumed run read it twice): its later value counts
]


def _rows(shard):
    return [{"item_id": f"rag_rewardbench/{key}", "subset": subset, "correct": correct, "error": None,
             "truncated": False} for key, correct, subset in shard]


def test_shard_states_live_in_the_object_store_and_a_task_summarizes_them_as_the_driver_would(ray_session):
    ray = ray_session
    spec = benchmark("rag_rewardbench")
    cell = CellMetrics(spec, remote=True)
    for index in (2, 0):  # shard 2 first: merged in the order they came, item a would keep shard 0's value
        cell.add(index, _rows(SHARDS[index]))
    cell.add_reduced(1, ray.put(reducer_of(spec).reduced(_rows(SHARDS[1]))))  # shard 1 last, reduced elsewhere
    assert cell.remote and len(cell.states) == 3
    assert all(isinstance(state, ray.ObjectRef) for state in cell.states.values())  # not the rows' keys and values

    metrics = cell.summarize(resamples=50)
    reducer = reducer_of(spec)
    assert metrics == summarized(spec, 50, *(reducer.reduced(_rows(shard)) for shard in SHARDS))
    # By hand: helpful-x has a (0, the later value), b (0) and c (1); reason-y has d (1).
    assert metrics["subsets"]["helpful-x"]["n"] == 3
    assert metrics["subsets"]["helpful-x"]["accuracy"] == pytest.approx(1 / 3)
    assert metrics["subsets"]["reason-y"]["accuracy"] == 1.0
    assert metrics["n"] == 4
