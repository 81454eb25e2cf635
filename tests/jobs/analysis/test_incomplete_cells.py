"""A cell manifest.json says is scored whose stored rows are missing, cut short or fewer than it recorded is a
one-line error naming the part, with a non-zero exit, and the report marks the model instead of dropping it
(issue 42, item 4); an unreadable manifest is one line too, never a traceback."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from jobs.cli import main
from scripts.synthetic_run import build_run

MODEL = "synthetic-rm-01"


def _run(tmp_path):
    root = build_run(str(tmp_path), "r", models=3, items=40)
    manifest = root.read_json("manifest.json")
    for cell in manifest["cells"].values():  # as a sweep records it now: the rows each table got
        cell["rows"] = {"predictions": 40, "errors": 0}
    root.write_json("manifest.json", manifest)
    part = tmp_path / "r" / root.partition("predictions", "rag_rewardbench", MODEL) / "part-0.parquet"
    assert part.is_file()
    return root, part


def _report(tmp_path, capsys) -> tuple[int, str, str]:
    code = main(["report", str(tmp_path / "r")])
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    return code, printed.out, printed.err


def _marked(tmp_path, why: str) -> None:
    board = json.loads((tmp_path / "r" / "report" / "leaderboard.json").read_text())
    [entry] = board["incomplete"]
    assert entry["benchmark"] == "rag_rewardbench" and entry["model"] == MODEL and why in entry["problem"]
    assert MODEL not in {m["model"] for m in board["benchmarks"]["rag_rewardbench"]["models"]}
    assert len(board["benchmarks"]["rag_rewardbench"]["models"]) == 2  # the others are still scored
    page = (tmp_path / "r" / "report" / "index.html").read_text()
    assert f"{MODEL}: NOT SCORED" in page


def test_a_deleted_part_is_named_and_the_model_marked_not_dropped(tmp_path, capsys):
    _, part = _run(tmp_path)
    part.unlink()
    code, out, err = _report(tmp_path, capsys)
    assert code == 1
    [line] = err.strip().splitlines()
    assert f"rag_rewardbench x {MODEL}" in line and "no part; manifest.json says the cell is done with 40" in line
    assert f"{MODEL}: NOT SCORED" in out
    _marked(tmp_path, "no part")


def test_a_truncated_part_is_named_and_the_model_marked(tmp_path, capsys):
    _, part = _run(tmp_path)
    part.write_bytes(part.read_bytes()[:300])
    code, _, err = _report(tmp_path, capsys)
    assert code == 1
    [line] = err.strip().splitlines()
    assert str(part) in line and "cannot be read" in line
    _marked(tmp_path, "cannot be read")


def test_a_part_short_of_the_recorded_rows_is_named(tmp_path, capsys):
    # same file, fewer rows: whole and readable, but not what the cell stored
    _, part = _run(tmp_path)
    pq.write_table(pq.read_table(part).slice(0, 25), part)
    code, _, err = _report(tmp_path, capsys)
    assert code == 1 and "holds 25 rows; manifest.json says the cell is done with 40" in err
    _marked(tmp_path, "holds 25 rows")


def test_a_whole_run_reports_with_exit_zero(tmp_path, capsys):
    _run(tmp_path)
    code, _, err = _report(tmp_path, capsys)
    assert code == 0 and err == ""
    assert "incomplete" not in json.loads((tmp_path / "r" / "report" / "leaderboard.json").read_text())


def test_a_cut_manifest_is_one_line_naming_it(tmp_path, capsys):
    _run(tmp_path)
    manifest = tmp_path / "r" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:100])
    code, _, err = _report(tmp_path, capsys)
    assert code == 1
    [line] = err.strip().splitlines()
    assert str(manifest) in line and "cannot be read" in line and "JSONDecodeError" in line


def test_aggregate_checks_a_runs_parts_against_its_manifest(tmp_path, capsys):
    _, part = _run(tmp_path)
    table = str(tmp_path / "r" / "predictions")
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", table]) == 0
    capsys.readouterr()
    part.write_bytes(part.read_bytes()[:300])  # cut short: skipped with its name, and the exit says so
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", table]) == 1
    err = capsys.readouterr().err
    assert f"skipped {part}" in err
    assert f"0 readable rows of model {MODEL}; manifest.json says the cell is done with 40" in err
    part.unlink()  # gone: nothing to skip, and only the manifest knows it was there
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", table]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"model {MODEL}; manifest.json says the cell is done with 40" in line
