"""The report's end holds a bounded share of a run's rows (issue 65, docs/measurements.md#the-reports-driver-memory):
the item viewer reads the data and the rows of at most VIEWER_ITEMS items of a benchmark and says so on the
page, and the response texts the bias columns measure are measured part by part, never made Python rows."""
import json
from pathlib import Path

import pyarrow as pa

from jobs.analysis import cell_rows, item_viewer, report
from jobs.analysis.cell_rows import PartRows, add_rows
from jobs.analysis.report import write_report
from jobs.analysis.response_pairs import MEASURES, TEXTS, measured, measured_pairs, response_pairs
from jobs.flow import walk
from jobs.store import RunRoot
from jobs.store.parquet_rows import joined_rows
from scripts.synthetic_run import build_run


def _data(folder: Path, n: int) -> str:
    pairs = [{"id": f"p{k:02d}", "subset": "helpful-alpha", "prompt": f"Where does the river Ix{k} flow?",
              "chosen": f"North, river Ix{k}.", "reject": f"South, river Ix{k}.", "chosen_model": "model-a",
              "reject_model": "model-b"} for k in range(n)]
    path = folder / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return str(path)


def _index(root: RunRoot) -> dict:
    text = Path(root.path("report/viewer/index.js")).read_text(encoding="utf-8").strip().removesuffix(";")
    return json.loads(text.removeprefix("window.RAGJUDGE_ITEMS="))["benchmarks"][0]


def test_the_viewer_reads_and_holds_only_its_first_items(tmp_path, monkeypatch):
    root = build_run(str(tmp_path / "runs"), "r", models=2, data=_data(tmp_path, 12))
    read_rows, rows_made, items_read = RunRoot.read_rows, [], []

    def counted_rows(self, *args, **kwargs):
        rows = read_rows(self, *args, **kwargs)
        if kwargs.get("columns") is None:  # the viewer's reads (the report's own pick columns)
            rows_made.append(len(rows))
        return rows

    def counted_items(*args, **kwargs):
        for item in walk_items(*args, **kwargs):
            items_read.append(item["item_id"])
            yield item

    walk_items = walk.read_items
    monkeypatch.setattr(RunRoot, "read_rows", counted_rows)
    monkeypatch.setattr(walk, "read_items", counted_items)
    monkeypatch.setattr(item_viewer, "VIEWER_ITEMS", 5)
    report = write_report(root, out=lambda text: None)
    entry = _index(root)
    ids = [f"rag_rewardbench/p{k:02d}" for k in range(12)]
    assert entry["items"] == ids[:5] and all(len(o) == 5 for o in entry["outcomes"])
    assert items_read == ids[:5]  # the data is read no further than the items the viewer holds
    assert rows_made == [5, 5]  # each model's rows of the other items never became Python rows
    chunks = [json.loads(p.read_text().split(",", 1)[1].removesuffix(");\n"))
              for p in Path(root.path("report/viewer")).glob("b0-c*.js")]
    assert sorted(i for chunk in chunks for i in chunk) == ids[:5]
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    assert "rag_rewardbench: the viewer holds the first 5 of its 12 items" in page
    assert report.leaderboard["benchmarks"]["rag_rewardbench"]["models"][0]["n"] == 12  # the board counts all


def test_a_run_within_the_cap_is_shown_whole_without_a_note(tmp_path):
    root = build_run(str(tmp_path / "runs"), "r", models=2, data=_data(tmp_path, 12))
    write_report(root, out=lambda text: None)
    assert len(_index(root)["items"]) == 12
    assert "the viewer holds the first" not in Path(root.path("report/index.html")).read_text(encoding="utf-8")


def test_measured_parts_give_the_pairs_the_texts_give_and_hold_no_text():
    part = pa.table({"item_id": ["a", "a", "b", "c", "d", "e"], "chosen": ["xx", "longer", None, "", "ü€", "q"],
                     "reject": ["yyy", "z", "w", "r", "ab", None], "chosen_model": ["m1", "m2", None, "m3", None, "m"],
                     "reject_model": ["n1", None, "n2", None, "n4", "n"]})
    count = len
    rows = part.to_pylist()
    for tokens in (None, lambda text: 10 * count(text)):
        shaped = measured(tokens)(part)
        assert not set(TEXTS) & set(shaped.column_names) and set(MEASURES[:2]) <= set(shaped.column_names)
        assert measured_pairs(shaped.to_pylist()) == response_pairs(rows, tokens)
    odd = pa.table({"item_id": ["a"], "chosen": ["x"], "reject": ["y"], "chosen_model": [3]})  # not text
    assert measured_pairs(measured()(odd).to_pylist()) == response_pairs(odd.to_pylist()) == {}
    half = pa.table({"item_id": ["a"], "chosen": ["x"]})  # no reject column
    assert measured_pairs(measured()(half).to_pylist()) == response_pairs(half.to_pylist()) == {}


def test_part_rows_are_the_rows_read_rows_makes_a_batch_at_a_time(monkeypatch):
    parts = [pa.table({"item_id": ["a", "b", "c"], "x": [1, 2, 3]}), pa.table({"item_id": ["d"], "y": ["z"]})]
    monkeypatch.setattr(cell_rows, "BATCH", 2)
    rows = PartRows(parts)
    assert len(rows) == 4 and list(rows) == list(rows) == joined_rows(parts)  # each pass makes them again


def test_the_report_folds_each_cell_from_its_parts_not_a_list_of_rows(tmp_path, monkeypatch):
    root = build_run(str(tmp_path / "runs"), "r", models=2, items=30)
    folded = []

    def spied(view, model, rows):
        folded.append(type(rows))
        add_rows(view, model, rows)

    monkeypatch.setattr(report, "add_rows", spied)
    board = report.load_report(root).leaderboard
    assert folded == [PartRows, PartRows]
    monkeypatch.undo()
    assert report.load_report(root).leaderboard == board
