"""The planner's schedule against schedules worked out by hand: one engine per model, tensor-parallel groups
on 8-GPU nodes, makespan beside its two lower bounds."""
import pytest

from jobs.plan.estimate import CellPlan, engine_jobs
from jobs.plan.placement import EngineJob, node_sizes, schedule


def job(name: str, gpus: int, start_s: float, work_s: float) -> EngineJob:
    return EngineJob(name, gpus, start_s, work_s)


def test_gpus_make_full_nodes_then_one_with_the_rest():
    assert node_sizes(8) == [8] and node_sizes(12) == [8, 4] and node_sizes(3) == [3]
    assert node_sizes(16) == [8, 8]
    with pytest.raises(ValueError):
        node_sizes(0)


def test_one_node_longest_first_and_a_short_job_backfills_before_a_wide_one():
    jobs = [job("D", 2, 50, 150), job("E", 8, 100, 100), job("A", 4, 100, 900), job("B", 4, 100, 400),
            job("C", 2, 50, 250)]
    plan = schedule(jobs, 8)
    # By hand, longest first A(1000 s) B(500) C(300), then E and D (200 each, wider first):
    # A and B fill the node at 0; C starts when B ends (500); E needs all 8 GPUs, free only when A ends
    # (1000); D fits at 500 beside A and C (4 + 2 + 2 = 8) and ends at 700, before E: a backfill.
    assert [(p.job.name, p.begin_s) for p in plan.placements] == [
        ("A", 0.0), ("B", 0.0), ("C", 500.0), ("E", 1000.0), ("D", 500.0)]
    assert plan.makespan_s == 1200.0
    assert plan.busy_gpu_s == 4 * 1000 + 4 * 500 + 2 * 300 + 8 * 200 + 2 * 200 == 8600
    assert plan.lower_bound_s == 8600 / 8 and plan.longest.name == "A"
    assert plan.start_gpu_s == 4 * 100 + 4 * 100 + 2 * 50 + 8 * 100 + 2 * 50 == 1800
    assert plan.idle_gpu_s == 8 * 1200 - 8600


def test_groups_stay_on_one_node_and_a_group_wider_than_any_node_is_not_placed():
    plan = schedule([job("X", 8, 0, 100), job("Y", 4, 0, 100), job("Z", 4, 0, 50), job("W", 16, 0, 10)], 12)
    assert plan.node_gpus == [8, 4]
    # X takes node 0 whole; Y fits only node 1; Z (4) waits for the first of them to end at 100, node 0 first.
    assert [(p.job.name, p.node, p.begin_s) for p in plan.placements] == [("X", 0, 0.0), ("Y", 1, 0.0),
                                                                         ("Z", 0, 100.0)]
    assert plan.makespan_s == 150.0 and [j.name for j in plan.unplaced] == ["W"]


def test_a_model_starts_one_engine_for_all_its_cells_and_a_shared_reference_one_more():
    def cell(bench, model, hours, gpus=1, start_s=100.0, reference=None, kind="discriminative"):
        return CellPlan(bench, model, kind, 10, 100, 0, 1e15, hours, "chars/4", "", gpus=gpus,
                        start_s=start_s, reference=reference)

    plans = [cell("rag_rewardbench", "m", 1.0, gpus=2), cell("bianbench", "m", 0.5, gpus=2),
             cell("rag_rewardbench", "r1", 1.0, reference="org/base", kind="implicit"),
             cell("rag_rewardbench", "r2", 2.0, reference="org/base", kind="implicit", start_s=120.0),
             cell("rag_rewardbench", "api", 0.0, start_s=0.0, kind="api"),
             CellPlan("bianbench", "broken", "generative", 0, 0, 0, 0.0, 0.0, "", "", problem="no data")]
    jobs = {j.name: j for j in engine_jobs(plans)}
    assert sorted(jobs) == ["m", "org/base (reference)", "r1", "r2"]  # none for the API judge or a problem
    # m: 1.5 GPU-hours over its 2-GPU group, one 100 s start for both benchmarks.
    assert (jobs["m"].gpus, jobs["m"].start_s, jobs["m"].work_s) == (2, 100.0, 1.5 * 3600 / 2)
    assert jobs["m"].cells == ("rag_rewardbench x m", "bianbench x m")
    # Half of each implicit cell is its reference's pass; both share one reference engine.
    assert (jobs["r1"].work_s, jobs["r2"].work_s) == (1800.0, 3600.0)
    ref = jobs["org/base (reference)"]
    assert ref.work_s == 1800.0 + 3600.0 and ref.start_s == 120.0 and len(ref.cells) == 2
