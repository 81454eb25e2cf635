"""The chaos harness's own checks (tests/chaos_checks.py) on hand-made seeds: a bound that is too tight fails a
seed whose run was whole, one too loose lets a real duplicate through."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import chaos_checks as checks


def _seed(*faults: tuple[str, dict]) -> SimpleNamespace:
    return SimpleNamespace(failures=[], schedule=[SimpleNamespace(kind=kind, fired_at_s=1.0, detail=detail)
                                                  for kind, detail in faults])


def test_a_sigterm_may_leave_every_running_cells_api_requests_unstored():
    # quick seed 3 under load: SIGTERM with the API judge's cells running, 164 answered, 144 stored. Each of the
    # 3 benchmarks' cells has its own actor with 4 tasks of 4 requests out: 3 x 16 = 48, not one cell's 16.
    seed = _seed(("driver_term", {"driver": 0}))
    assert checks.bound(seed, "api_judge") == 48
    counted = {"api_judge": {"asked": 164, "stored": 144, "duplicates": 20, "bound": 48}}
    assert checks.duplicates_bounded(counted) == []


def test_duplicates_beyond_the_faults_bound_are_a_problem():
    seed = _seed(("engine_kill", {"model": "tiny_tf2"}))  # a fault on another model: nothing of the API's
    assert checks.bound(seed, "api_judge") == 0
    [problem] = checks.duplicates_bounded({"api_judge": {"asked": 145, "stored": 144, "duplicates": 1, "bound": 0}})
    assert problem.startswith("duplicates api_judge: 1 requests answered and not stored")


def test_a_sweep_written_under_a_relative_folder_names_data_that_exists(tmp_path, monkeypatch):
    # `tests/chaos_seeds.py results/chaos.json` (a relative path, as `make chaos` gives it): every run's driver
    # stopped at once on "rr_synthetic.data: .../work/results/.../work/synthetic.jsonl does not exist".
    import chaos_world as world
    from omegaconf import OmegaConf

    monkeypatch.chdir(tmp_path)
    sweep = OmegaConf.load(world.write_sweep(Path("results") / "seed-1-work"))
    for benchmark in sweep.benchmarks:
        [data] = benchmark.data
        assert Path(data).is_absolute() and Path(data).is_file(), (benchmark.name, data)


def test_every_drawn_pick_is_a_rank_below_one():
    # full seed 15 drew node_remove with pick 0.9995+ rounded to 1.0: choices[int(1.0 * 2)], an IndexError that
    # ended the harness.
    import chaos

    picks = {seed: [f.pick for f in chaos.draw_schedule(seed, chaos.kinds_of("full"))] for seed in range(1, 201)}
    assert all(0 <= pick < 1 for seed_picks in picks.values() for pick in seed_picks), picks[15]
    assert picks[15][-1] == 0.999


def test_a_seed_run_from_another_folder_hands_its_harness_absolute_paths(tmp_path, monkeypatch):
    # The harness process runs in the checkout's root: a relative output path given from another folder would
    # be written there and looked for here, and the seed would fail as "the harness exited 0".
    import subprocess

    import chaos

    commands = []

    class Harness:
        returncode = 0

        def __init__(self, command, **_):
            commands.append(command)

        def communicate(self, timeout=None):
            return "", None

    monkeypatch.setattr(subprocess, "Popen", Harness)
    monkeypatch.chdir(tmp_path)
    chaos.run_seed(7, Path("runs"), "quick", 1)
    [clean_run] = commands  # the clean run found no output, so the seed stopped there
    out = Path(clean_run[2])
    assert out.is_absolute() and out.parent == tmp_path / "runs", clean_run


def test_a_cell_an_earlier_driver_left_running_is_no_failure_of_a_driver_stopped_before_it():
    # full seed 21: driver 0 SIGKILLed mid-cell (its cells "running"), driver 2 started after it and SIGTERMed
    # 1.6 s later, before it took the run: the cells still show driver 0's entries, which driver 2 could not
    # touch, and were counted as driver 2's failures without a reason.
    from chaos_run import failed

    earlier = {"status": "running", "started_at": 1000.0}
    assert not failed(earlier, "SIGTERM", driver_started=1080.0)
    # a cell the stopped driver did start, left running without a word: a failure (it should say interrupted)
    assert failed({"status": "running", "started_at": 1081.0}, "SIGTERM", driver_started=1080.0)
    assert not failed({"status": "running", "started_at": 1081.0}, "SIGKILL", driver_started=1080.0)
    assert not failed({"status": "interrupted", "started_at": 1081.0}, "SIGTERM", driver_started=1080.0)
    assert failed({"status": "failed", "started_at": 1081.0, "error": "x"}, None, driver_started=1080.0)


def test_a_second_part_corruption_never_picks_the_part_the_first_overwrote():
    # full seed 38: two part_corrupt faults, the second's pick landed on the first's part (garbage, not yet
    # quarantined), and counting its rows ended the harness with ArrowInvalid.
    from chaos_run import part_to_corrupt

    prefix = "seed/run/requests/benchmark=b/model=m/"
    keys = [f"{prefix}part-s00000-0001-000000{i}.parquet" for i in range(2)]
    first = part_to_corrupt(keys, {"b/m"}, set(), 0.308)
    assert first == keys[0]
    assert part_to_corrupt(keys, {"b/m"}, {first}, 0.375) == keys[1]
    assert part_to_corrupt(keys, {"b/m"}, set(keys), 0.375) is None
    assert part_to_corrupt(keys, {"other/m"}, set(), 0.5) is None  # only a running cell's parts
