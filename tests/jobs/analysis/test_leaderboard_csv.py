"""report/leaderboard.csv: leaderboard.json's models, one row per (benchmark, model), with each cell's failed and
bad rows from its metrics.json and a model the report could not score marked, not left out (issue 61)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from benchmarks import protocol
from jobs.analysis.board import CSV_COLUMNS, leaderboard_csv, leaderboard_of
from jobs.analysis.report import write_report
from jobs.analysis.report_view import BenchmarkView
from scripts.synthetic_run import build_run


def _outcomes(right: int, items: int = 20) -> dict[str, float]:
    return {f"i{k:02d}": float(k < right) for k in range(items)}


def _views() -> list[BenchmarkView]:
    pairs = BenchmarkView("my_pairs", "rag_rewardbench", resamples=200,
                          outcomes={"judge": _outcomes(18), "rm": _outcomes(9)},
                          metrics=[{"model": "judge", "n": 20, "n_errors": 2, "n_bad_rows": 3},
                                   {"model": "rm", "n": 20, "n_errors": 0, "n_bad_rows": 0},
                                   {"model": "cut", "n": 20, "n_errors": 1, "n_bad_rows": 4}],
                          over_budget={"judge": "2 of 40 requests failed"},
                          incomplete={"cut": "predictions/...: no part"})
    other = BenchmarkView("bianbench", "bianbench", resamples=200, outcomes={"judge": _outcomes(12, 10)},
                          metrics=[{"model": "judge", "n": 10, "n_errors": 0}])  # a run before n_bad_rows
    return [pairs, other]


def _csv_rows(text: str) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames) == CSV_COLUMNS
    return list(reader)


def _number(text: str) -> float | None:
    return float(text) if text else None


def test_the_csv_is_the_boards_numbers_a_row_per_benchmark_and_model():
    board = json.loads(json.dumps(leaderboard_of(_views())))  # as leaderboard.json holds it
    rows = _csv_rows(leaderboard_csv(board))
    assert [(r["benchmark"], r["model"], r["status"]) for r in rows] == [
        ("my_pairs", "judge", "over error budget"), ("my_pairs", "rm", "scored"), ("my_pairs", "cut", "not scored"),
        ("bianbench", "judge", "scored")]
    models = {(b, m["model"]): m for b, bench in board["benchmarks"].items() for m in bench["models"]}
    for row in rows[:2] + rows[3:]:
        entry = models[row["benchmark"], row["model"]]
        assert _number(row["score"]) == entry["score"]
        assert [_number(row["ci95_low"]), _number(row["ci95_high"])] == entry["ci95"]
        assert (int(row["rank"]), row["group"], int(row["n"])) == (entry["rank"], entry["group"], entry["n"])
        assert int(row["missing"]) == entry.get("missing", 0)
        assert [row["n_errors"], row["n_bad_rows"]] == [str(entry.get(k, "")) for k in ("n_errors", "n_bad_rows")]
    assert (rows[0]["n_errors"], rows[0]["n_bad_rows"], rows[0]["problem"]) == ("2", "3", "2 of 40 requests failed")
    assert (rows[1]["n_errors"], rows[1]["n_bad_rows"], rows[1]["problem"]) == ("0", "0", "")
    assert rows[3]["n_bad_rows"] == ""  # its metrics.json has none: not a made-up 0
    cut = rows[2]
    assert (cut["score"], cut["rank"], cut["n"], cut["n_bad_rows"], cut["problem"]) == (
        "", "", "", "4", "predictions/...: no part")


def test_leaderboard_json_carries_each_models_failed_and_bad_rows():
    board = leaderboard_of(_views())
    models = {m["model"]: m for m in board["benchmarks"]["my_pairs"]["models"]}
    assert (models["judge"]["n_errors"], models["judge"]["n_bad_rows"]) == (2, 3)
    assert (models["rm"]["n_errors"], models["rm"]["n_bad_rows"]) == (0, 0)
    assert board["incomplete"] == [{"benchmark": "my_pairs", "model": "cut", "problem": "predictions/...: no part",
                                    "n_errors": 1, "n_bad_rows": 4}]
    assert "n_bad_rows" not in board["benchmarks"]["bianbench"]["models"][0]


@pytest.fixture
def report_stub(monkeypatch):
    class Paper:
        def table_text(self, metrics):
            return "PAPER"

        def table_html(self, metrics):
            return None

    monkeypatch.setattr(protocol, "benchmark", lambda name: Paper())


def test_ragjudge_report_writes_the_csv_beside_the_json(tmp_path, report_stub):
    root = build_run(str(tmp_path), "r", models=2, items=20)
    write_report(root, out=lambda line: None)
    board = json.loads(Path(root.path("report/leaderboard.json")).read_text())
    rows = _csv_rows(Path(root.path("report/leaderboard.csv")).read_text())
    assert [(r["benchmark"], r["model"]) for r in rows] == [
        (b, m["model"]) for b, bench in board["benchmarks"].items() for m in bench["models"]]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"scored"}
    assert [_number(r["score"]) for r in rows] == [m["score"] for m in board["benchmarks"]["rag_rewardbench"]["models"]]
