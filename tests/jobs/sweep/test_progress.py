"""jobs.sweep.progress with a fake clock: when status.json is written, what the log and the terminal show."""
import io
import json
import time

import pytest

from jobs.cli import main
from jobs.store.run_root import RunRoot
from jobs.sweep.progress import Progress, cell_line, format_status


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """A RunRoot stand-in that keeps every status.json written."""

    run = "r"

    def __init__(self) -> None:
        self.writes: list[dict] = []

    def write_json(self, relpath, obj):
        assert relpath == "status.json"
        self.writes.append(json.loads(json.dumps(obj)))

    def uri(self, relpath=""):
        return f"mem://{relpath}"


def test_status_json_on_each_change_and_at_most_every_5_seconds():
    clock, root, log = Clock(), Recorder(), []
    progress = Progress(root, log.append, interactive=False, clock=clock)
    progress.cell_started("rag/m1", total_requests=1000)
    assert len(root.writes) == 1 and root.writes[0]["cells"]["rag/m1"]["status"] == "running"
    for _ in range(40):  # 40 updates over 4 s: no write
        clock.now += 0.1
        progress.advanced("rag/m1", 10)
    assert len(root.writes) == 1
    clock.now += 1.0  # 5 s since the last write
    progress.advanced("rag/m1", 10)
    assert len(root.writes) == 2
    cell = root.writes[-1]["cells"]["rag/m1"]
    assert cell["done"] == 410 and cell["requests_per_s"] == pytest.approx(410 / 5.0)
    assert cell["eta_s"] == pytest.approx(590 / 82.0)
    progress.cell_finished("rag/m1", "done")  # a state change: written at once
    assert len(root.writes) == 3 and root.writes[-1]["counts"] == {"done": 1}


def test_a_later_round_raises_the_total():
    clock, root = Clock(), Recorder()
    progress = Progress(root, lambda _: None, interactive=False, clock=clock)
    progress.cell_started("gen/m", total_requests=100)
    clock.now += 10
    progress.advanced("gen/m", 100)
    progress.more_requests("gen/m", 300)  # the judges' round: written at once, ETA from the rate so far
    cell = root.writes[-1]["cells"]["gen/m"]
    assert (cell["done"], cell["total"], cell["eta_s"]) == (100, 400, pytest.approx(30.0))


def test_a_line_every_30_seconds_when_not_a_terminal():
    clock, log = Clock(), []
    progress = Progress(None, log.append, interactive=False, clock=clock)
    progress.cell_started("rag/m1", total_requests=300, done=100)  # resumed: 100 answered before
    progress.cell_started("bian/m2", total_requests=50)
    assert log == []
    clock.now += 10
    progress.advanced("rag/m1", 50)  # first update logs at once
    assert log == ["rag/m1  150/300 (50%)  5.0 req/s  ETA 0m30s", "bian/m2  0/50 (0%)  - req/s  ETA ?"]
    for _ in range(29):
        clock.now += 1
        progress.advanced("bian/m2", 1)
    assert len(log) == 2
    clock.now += 1
    progress.advanced("bian/m2", 1)
    assert len(log) == 4 and log[-1] == "bian/m2  30/50 (60%)  0.8 req/s  ETA 0m27s"  # 30 in 40 s; 20 to go


def test_skipped_cells_make_one_line():
    log, root = [], Recorder()
    progress = Progress(root, log.append, interactive=False, clock=Clock())
    keys = [f"bianbench/classifier-{i}" for i in range(12)]
    line = progress.skipped(keys, "no protocol for discriminative models")
    assert log == [line]
    assert line == ("skipped 12 cells: no protocol for discriminative models (bianbench/classifier-0, "
                    "bianbench/classifier-1, bianbench/classifier-2 and 9 more)")
    assert root.writes[-1]["counts"] == {"skipped": 12} and len(root.writes[-1]["skipped"]) == 12
    assert progress.skipped([]) is None and len(log) == 1


def test_terminal_lines_are_redrawn_in_place():
    clock, log, screen = Clock(), [], io.StringIO()
    progress = Progress(None, log.append, interactive=True, stream=screen, clock=clock)
    progress.cell_started("rag/m1", total_requests=100)
    assert screen.getvalue() == "rag/m1  [                    ] 0/100 (0%)  - req/s  ETA ?\n"
    clock.now += 2
    progress.advanced("rag/m1", 50)
    redrawn = "\x1b[1F\x1b[Jrag/m1  [##########          ] 50/100 (50%)  25.0 req/s  ETA 0m02s\n"
    assert screen.getvalue().endswith(redrawn)
    clock.now += 0.1
    progress.advanced("rag/m1", 10)  # within 0.5 s of the last redraw: nothing drawn
    assert "60/100" not in screen.getvalue()
    progress.message("a log line")  # cleared, logged, redrawn below it
    assert log == ["a log line"]
    line = cell_line("rag/m1", progress.cells["rag/m1"], bar=True)
    assert "60/100" in line and screen.getvalue().endswith("\x1b[J" + line + "\n")
    progress.cell_finished("rag/m1", "done")
    progress.close()
    assert screen.getvalue().endswith("\x1b[1F\x1b[J")


def test_status_command_reads_status_json(tmp_path, capsys):
    clock = Clock()
    root = RunRoot(str(tmp_path), "night")
    progress = Progress(root, lambda _: None, interactive=False, clock=clock)
    progress.cell_started("rag_rewardbench/m1", total_requests=2970, done=0)
    clock.now += 60
    progress.advanced("rag_rewardbench/m1", 812)
    progress.cell_started("rag_rewardbench/m2", total_requests=10)
    progress.cell_finished("rag_rewardbench/m2", "failed")
    status = root.read_json("status.json")
    assert format_status(status, now=clock.now + 5) == (
        "run night: 1 failed, 1 running (status.json written 0m05s ago)\n"
        "  rag_rewardbench/m1  812/2970 (27%)  13.5 req/s  ETA 2m39s\n"
        "  rag_rewardbench/m2: failed")
    assert main(["status", root.path()]) == 0
    assert "rag_rewardbench/m1  812/2970 (27%)" in capsys.readouterr().out
    assert main(["status", root.path(), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cells"]["rag_rewardbench/m1"]["done"] == 812
    assert main(["status", str(tmp_path / "other")]) == 2
    capsys.readouterr()
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: night\n")
    assert main(["status", str(sweep)]) == 2  # a file, not a run folder: one line saying what to give
    assert capsys.readouterr().err == (f"ragjudge status: {sweep} is a file, not a run folder; give the run's "
                                       "folder, ROOT/RUN (its sweep's storage.root and storage.run, e.g. "
                                       "results/demo)\n")


def test_status_names_the_cells_over_their_error_budget_and_why(tmp_path):
    clock = Clock()
    root = RunRoot(str(tmp_path), "night")
    progress = Progress(root, lambda _: None, interactive=False, clock=clock)
    progress.cell_started("rag_rewardbench/m1", total_requests=12)
    progress.cell_finished("rag_rewardbench/m1", "failed_errors", "6 of 12 requests failed (50.0% > max_error_rate 2%)")
    assert format_status(root.read_json("status.json"), now=clock.now) == (
        "run night: 1 failed_errors (status.json written 0m00s ago)\n"
        "  rag_rewardbench/m1: failed_errors: 6 of 12 requests failed (50.0% > max_error_rate 2%)")


def test_calls_for_a_cell_never_started_do_not_raise():
    root = Recorder()
    progress = Progress(root, lambda _: None, interactive=False, clock=Clock())
    progress.cell_finished("rag/cached", "cached")
    progress.advanced("rag/other", 3)
    assert root.writes[-1]["cells"]["rag/cached"]["status"] == "cached"
    assert progress.cells["rag/other"]["done"] == 3


def test_a_failing_status_write_does_not_stop_the_sweep():
    class Broken(Recorder):
        def write_json(self, relpath, obj):
            raise OSError("bucket gone")

    log = []
    progress = Progress(Broken(), log.append, interactive=False, clock=Clock())
    progress.cell_started("a/b", 10)
    progress.cell_finished("a/b", "done")
    assert log == ["progress: cannot write mem://status.json: bucket gone"]  # said once


def test_the_rate_is_the_last_minutes_and_a_stalled_cell_has_no_eta():
    clock, log = Clock(), []
    progress = Progress(None, log.append, interactive=False, clock=clock)
    progress.cell_started("rag/m1", total_requests=1000)
    clock.now += 60
    progress.advanced("rag/m1", 600)  # 10 a second in the first minute
    clock.now += 60
    progress.advanced("rag/m1", 60)  # 1 a second in the second: since the cell started it would be 5.5
    cell = progress.cells["rag/m1"]
    assert cell["requests_per_s"] == pytest.approx(1.0) and cell["eta_s"] == pytest.approx(340.0)
    clock.now += 60
    progress.tick()  # a minute without an answer: no pace, no ETA, and a line all the same
    assert (cell["requests_per_s"], cell["eta_s"]) == (0.0, None)
    assert log[-1] == "rag/m1  660/1000 (66%)  0.0 req/s  ETA ?"


def test_tick_logs_every_30_seconds_without_answers():
    clock, log = Clock(), []
    progress = Progress(None, log.append, interactive=False, clock=clock)
    progress.cell_started("gen/m", total_requests=8)
    progress.tick()
    assert log == ["gen/m  0/8 (0%)  - req/s  ETA ?"]
    clock.now += 29
    progress.tick()
    assert len(log) == 1
    clock.now += 1
    progress.tick()
    assert len(log) == 2


def test_a_ticking_progress_logs_while_no_answer_comes():
    log = []
    progress = Progress(None, log.append, interactive=False, log_every=1.0, ticking=True)
    progress.cell_started("gen/m", total_requests=8)
    deadline = time.monotonic() + 20
    while len(log) < 2 and time.monotonic() < deadline:  # the thread's, not an answer's
        time.sleep(0.1)
    progress.close()
    assert len(log) >= 2 and all(line == "gen/m  0/8 (0%)  - req/s  ETA ?" for line in log)


def test_a_slow_cell_shows_requests_a_minute():
    cell = {"done": 8, "total": 44, "requests_per_s": 8 / 200, "eta_s": 36 * 25.0}
    assert cell_line("utility/judge", cell) == "utility/judge  8/44 (18%)  2.4 req/min  ETA 15m00s"
    assert cell_line("utility/judge", {**cell, "requests_per_s": 0.0, "eta_s": None}).endswith("0.0 req/s  ETA ?")


def test_a_sweep_that_moves_nothing_says_what_ray_cannot_place_once_a_minute_and_not_before():
    """Past STALL_S (60 s) with no running cell advancing, a line of what waits for room, then one a minute;
    an answer starts the minute again; nothing is said where nothing waits (Ray placed it all: a slow model)."""
    clock, log = Clock(), []
    waiting: list[str | None] = ["Ray cannot place 3 tasks or actors yet (3 x 0.25 CPU); the cluster has 0 CPU free"]
    progress = Progress(None, log.append, interactive=False, clock=clock, unplaced=lambda: waiting[0])
    progress.cell_started("rag/m1", total_requests=10)

    def stalls() -> list[str]:
        return [line for line in log if line.startswith("nothing answered")]

    clock.now += 59.9
    progress._say_what_stalls()
    assert stalls() == []  # the boundary: 59.9 s is not yet a minute
    clock.now += 0.1
    progress._say_what_stalls()
    assert stalls() == [("nothing answered for 60 s: Ray cannot place 3 tasks or actors yet (3 x 0.25 CPU); the "
                         "cluster has 0 CPU free; a cell's dataset that moves nothing for 3600 s fails (Ray Data's "
                         "limit)")]
    clock.now += 30
    progress._say_what_stalls()
    assert len(stalls()) == 1  # once a minute, not each tick
    clock.now += 30
    progress._say_what_stalls()
    assert len(stalls()) == 2 and stalls()[1].startswith("nothing answered for 120 s: ")
    progress.advanced("rag/m1")
    clock.now += 59
    progress._say_what_stalls()
    assert len(stalls()) == 2  # an answer came 59 s ago
    waiting[0] = None
    clock.now += 120
    progress._say_what_stalls()
    assert len(stalls()) == 2
    progress.cell_finished("rag/m1", "done")
    waiting[0] = "Ray cannot place 1 task or actor yet (1 x 1 CPU); the cluster has 0 CPU free"
    clock.now += 600
    progress._say_what_stalls()
    assert len(stalls()) == 2  # no running cell: nothing of ours waits
