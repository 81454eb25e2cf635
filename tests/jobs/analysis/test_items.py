"""Issue 30, item 2: items across models, with hand-computed difficulty and label-noise candidates, the heat map's
merged runs, report/items.jsonl and `ragjudge items`."""
import json
from pathlib import Path

import pytest

from jobs.analysis.items import format_items, item_rows, items_summary, top_third
from jobs.analysis.items_page import _runs, heatmap, outcome_class
from jobs.analysis.report import write_report
from jobs.cli import main
from scripts.synthetic_run import build_run

RANKING = ["A", "B", "C", "D", "E", "F"]  # best first: the top third is A, B
OUTCOMES = {
    "A": {"x": 0.0, "y": 1.0, "z": 0.0, "w": 0.0},
    "B": {"x": 0.0, "y": 0.0, "z": 0.5},
    "C": {"x": 1.0, "y": 0.0, "z": 1.0, "w": 1.0},
    "D": {"x": 1.0, "y": 0.0},
    "E": {"x": 1.0, "y": 0.0},
    "F": {"x": 1.0, "y": 0.0},
}
SUBSETS = {"x": "s1", "y": "s1", "z": "s2", "w": "s2"}


def test_difficulty_and_label_noise_by_hand():
    rows = item_rows("b", OUTCOMES, SUBSETS, RANKING)
    # y: 1/6; w: (0 + 1) / 2; z: (0 + 0.5 + 1) / 3; x: 4/6. Ties in difficulty by id (w before z).
    assert [(r["item_id"], r["difficulty"], r["n_models"]) for r in rows] == [
        ("y", pytest.approx(1 / 6), 6), ("w", 0.5, 2), ("z", 0.5, 3), ("x", pytest.approx(2 / 3), 6)]
    by_id = {r["item_id"]: r for r in rows}
    # top third A, B: x 0 and 0 -> candidate; y 1 and 0 -> 0.5, not below; z 0 and 0.5 -> 0.25 -> candidate;
    # w: only A of the top third scored it -> too few to say
    assert {i: (r["top_third_accuracy"], r["label_noise"]) for i, r in by_id.items()} == {
        "x": (0.0, True), "y": (0.5, False), "z": (0.25, True), "w": (0.0, False)}
    assert by_id["z"]["correct"] == {"A": 0.0, "B": 0.5, "C": 1.0} and by_id["z"]["subset"] == "s2"
    summary = items_summary(rows, RANKING)
    assert summary == {"n": 4, "top_third": ["A", "B"], "label_noise": [
        {"item_id": "z", "subset": "s2", "difficulty": 0.5, "top_third_accuracy": 0.25},
        {"item_id": "x", "subset": "s1", "difficulty": pytest.approx(2 / 3), "top_third_accuracy": 0.0}]}
    assert top_third(["a", "b", "c", "d"]) == ["a", "b"] and top_third(["a"]) == ["a"]
    text = format_items(rows, RANKING, hardest=1)
    assert "b: 4 items x 6 models; top third: A, B; 2 label-noise candidates" in text
    assert text.endswith("Hardest 1 items\nitem  subset  difficulty %  models  top third %\n"
                         "y     s1              16.7       6         50.0")
    assert "z     s2              50.0       3         25.0\nx     s1              66.7       6          0.0" in text


def test_heat_map_merges_runs_of_equal_cells():
    assert _runs(["right", "right", None, "wrong", "right"], "right") == [(0, 2), (4, 1)]
    assert [outcome_class(v) for v in (1.0, 0.5, 1 / 3, 0.0, None)] == ["right", "partly", "partly", "wrong", None]
    rows = [{"item_id": "p", "difficulty": 1.0, "correct": {"A": 1.0, "B": 1.0}},
            {"item_id": "q", "difficulty": 0.5, "correct": {"A": 1.0, "B": 0.0}},
            {"item_id": "r", "difficulty": 0.0, "correct": {"A": 0.0}}]
    svg = heatmap(["A", "B"], rows, "t")
    # 3 items -> 8 px cells after the 200 px names; A: right p, q (one run), wrong r; B (y 10): right p, wrong q
    assert '<path fill="#2e7d32" d="M200,0h16v9h-16z">' in svg and '<path fill="#c62828" d="M216,0h8v9h-8z">' in svg
    assert '<path fill="#2e7d32" d="M200,10h8v9h-8z">' in svg and '<path fill="#c62828" d="M208,10h8v9h-8z">' in svg
    assert svg.count("<path") == 4  # B's r is not scored: grey background, no path


@pytest.fixture(scope="module")
def run_root(tmp_path_factory):
    root = build_run(str(tmp_path_factory.mktemp("runs")), "r", models=6, items=60)
    write_report(root, out=lambda line: None)
    return root


def test_report_writes_every_item_and_the_summary(run_root):
    rows = [json.loads(line) for line in Path(run_root.path("report/items.jsonl")).read_text().splitlines()]
    assert len(rows) == 60 and {len(r["correct"]) for r in rows} <= {5, 6}  # a model's failed item is left out
    board = json.loads(Path(run_root.path("report/leaderboard.json")).read_text())["benchmarks"]["rag_rewardbench"]
    assert board["items"]["n"] == 60
    assert board["items"]["top_third"] == [m["model"] for m in board["models"][:2]]
    assert [c["item_id"] for c in board["items"]["label_noise"]] == [r["item_id"] for r in rows if r["label_noise"]]


def test_items_command_prints_and_writes_jsonl(run_root, tmp_path, capsys):
    out = tmp_path / "items.jsonl"
    assert main(["items", run_root.path(), "--benchmark", "rag_rewardbench", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rag_rewardbench: 60 items x 6 models" in printed and f"All 60 items: {out}" in printed
    assert out.read_text() == Path(run_root.path("report/items.jsonl")).read_text()
    assert main(["items", run_root.path(), "--benchmark", "nope"]) == 2
    assert "no scored benchmark 'nope'" in capsys.readouterr().err
    assert main(["items", str(tmp_path / "missing"), "--benchmark", "x"]) == 2
