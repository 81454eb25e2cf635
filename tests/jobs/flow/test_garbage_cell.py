"""Garbage in, through a whole cell (issue 16 item 7): a data file of good rows among line and field garbage
runs as a sweep runs it (jobs.sweep.cell.run_cell, the stand-in engine, no Ray): the cell finishes, every good row
is asked and scored, and every bad row is stored in errors/ naming file and row, never sent to the model.
mtRAG generation is left out: its cell starts a Ray BERTScore stage (its loader is in test_garbage_in)."""
from __future__ import annotations

import pytest
from garbage import field_garbage, interleave, line_garbage
from garbage_loaders import ITEM_LOADERS
from stand_in import run, stand_in_engine

from benchmarks.protocol import benchmark
from jobs.config import BenchmarkConfig


@pytest.mark.parametrize("loader", [loader for loader in ITEM_LOADERS if loader.module != "mtrag_generation"],
                         ids=lambda loader: loader.name)
def test_good_rows_are_scored_beside_garbage(loader, tmp_path, monkeypatch):
    calls = stand_in_engine(monkeypatch)
    good = loader.good()
    bad = [line for _, line in line_garbage()] + [
        line for kind, _, line in field_garbage(loader.good_rows()[0], loader.fields, loader.id_field,
                                                loader.fresh_id) if kind not in loader.tolerated]
    content, _, bad_at = interleave(good, bad)
    path = tmp_path / f"data{loader.suffix}"
    path.write_bytes(content)
    bench = BenchmarkConfig(name="b", module=loader.module, data=[str(path)], bootstrap_resamples=10)
    root, outcome = run(tmp_path, bench)
    assert outcome.status == "done", outcome.message
    errors = root.read_rows("errors", "b", "judge")
    named = {row for row in bad_at if any(f"{path}: row {row}:" in (e.get("error") or "") for e in errors)}
    assert named == set(bad_at)
    asked = {request.split("#")[0] for call in calls for request in call}
    good_ids = {item["item_id"] for item in benchmark(loader.module).load_items(str(path))
                if not item.get("error")}
    assert asked == good_ids  # every good item asked, no bad one
    scored = {r["item_id"] for r in root.read_rows("predictions", "b", "judge") if not r.get("error")}
    assert scored == good_ids
    print(f"garbage-in {loader.name} through a cell: {len(bad)} bad rows in errors/, {len(good_ids)} good "
          "items scored")
