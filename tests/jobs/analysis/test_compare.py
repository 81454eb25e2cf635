"""`ragjudge compare RUN_A RUN_B`: score per run, the paired test, and the items that flipped."""
import json
import shutil

import pytest

from jobs.analysis.compare import compare_runs
from jobs.analysis.significance import mcnemar_exact
from jobs.cli import main
from jobs.store.run_root import RunRoot
from scripts.synthetic_run import build_run

SCORER = "synthetic-rm-00"  # discriminative: 0/1 outcomes


@pytest.fixture
def runs(tmp_path):
    """Run B is run A with 30 of SCORER's items changed: 25 right -> wrong, 5 wrong -> right."""
    a = build_run(str(tmp_path), "night1", models=3, items=90)
    shutil.copytree(a.path(), tmp_path / "night2")
    b = RunRoot(str(tmp_path), "night2")
    rows = b.read_rows("predictions", "rag_rewardbench", SCORER)
    right = [r for r in rows if r["correct"] == 1.0][:25]
    wrong = [r for r in rows if r["correct"] == 0.0][:5]
    for r in right + wrong:
        r["correct"] = 1.0 - r["correct"]
    b.clear("predictions", "rag_rewardbench", SCORER)
    b.write_rows("predictions", "rag_rewardbench", SCORER, rows, part="0")
    return a, b, {r["item_id"] for r in right + wrong}


def test_compare_finds_the_flipped_items(runs):
    a, b, changed = runs
    diffs, notes = compare_runs(a, b)
    assert notes == []
    by_model = {d.model: d for d in diffs}
    assert set(by_model) == {"synthetic-rm-00", "synthetic-rm-01", "synthetic-rm-02"}
    moved = by_model[SCORER]
    assert {f["item_id"] for f in moved.flipped} == changed
    assert (moved.a_only, moved.b_only, moved.test) == (25, 5, "mcnemar_exact")
    assert moved.p_value == mcnemar_exact(25, 5)
    assert moved.difference == pytest.approx(-20 / moved.n)
    for model in ("synthetic-rm-01", "synthetic-rm-02"):  # unchanged: nothing flipped, p = 1
        assert by_model[model].flipped == [] and by_model[model].p_value == 1.0
        assert by_model[model].difference == 0.0
    assert moved.p_holm == pytest.approx(min(1.0, 3 * moved.p_value))


def test_compare_one_model_and_cells_of_one_run(runs):
    a, b, _ = runs
    manifest = b.read_json("manifest.json")
    manifest["cells"]["rag_rewardbench/synthetic-rm-01"]["status"] = "failed"
    b.write_json("manifest.json", manifest)
    diffs, notes = compare_runs(a, b)
    assert [d.model for d in diffs] == ["synthetic-rm-00", "synthetic-rm-02"]
    assert notes == ["rag_rewardbench x synthetic-rm-01: finished in night1 only"]
    only, _ = compare_runs(a, b, model=SCORER)
    assert [d.model for d in only] == [SCORER]


def test_compare_command(runs, tmp_path, capsys):
    a, b, changed = runs
    out = tmp_path / "flips.jsonl"
    assert main(["compare", a.path(), b.path(), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "30 items flipped; the first 20:" in printed
    prefix = "  rag_rewardbench x synthetic-rm-00: "
    shown = [line for line in printed.splitlines() if line.startswith(prefix)]
    assert len(shown) == 20
    flips = [json.loads(line) for line in out.read_text().splitlines()]
    assert {f["item_id"] for f in flips} == changed
    assert all(f["a"] != f["b"] for f in flips)
    assert main(["compare", a.path(), str(tmp_path / "nope")]) == 2
