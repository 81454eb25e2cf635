"""A judged cell reads its items in shards (jobs.flow.judged_cell.SHARD_ITEMS) and holds one shard at a time: cut into
shards it scores exactly as in one, stores each shard's answers under the shard's own part names, asks nothing
twice when a run killed in a later shard resumes, and counts parts named before shards existed as the first
shard's. The registered stand-in engine answers instantly (stand_in.py), as a judge that picks a response by
a hash of the request, so the metrics mix right and wrong verdicts."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from stand_in import run, stand_in_engine

from benchmarks.rag_rewardbench import synthetic
from jobs.config import BenchmarkConfig
from jobs.flow import judged_cell

PAIRS_PER_SUBSET = 4  # Table 4's 22 subset shapes: 88 pairs, 6 of them with an empty response at this scale
PAIRS, REQUESTS = 82, 164  # the good ones, both orders each
BAD_LINE = 26  # a line that is no JSON, among the pairs: a bad row of the shard it falls in
SHARD = 20  # 89 lines: 5 shards, the bad line in the second


def pick(request, model) -> str:
    """A judge's text: Choose 1, Choose 2 or no verdict, by the request id's hash."""
    return ["Choose 1", "Choose 2", "no idea"][hashlib.sha256(request["request_id"].encode()).digest()[0] % 3]


@pytest.fixture
def bench(tmp_path) -> BenchmarkConfig:
    pairs = [json.dumps(p) for p in synthetic.generate(scale=0.02, max_pairs=PAIRS_PER_SUBSET)]
    lines = pairs[:BAD_LINE - 1] + ["{not json"] + pairs[BAD_LINE - 1:]
    data = tmp_path / "pairs.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(data)], bootstrap_resamples=50)


def _cell(tmp_path: Path, bench: BenchmarkConfig, run_name: str):
    root, outcome = run(tmp_path / "results", bench, run_name=run_name)
    rows = sorted(root.read_rows("predictions", bench.name, "judge"), key=lambda r: r["item_id"])
    errors = sorted(root.read_rows("errors", bench.name, "judge"), key=lambda r: r["item_id"])
    return root, outcome, rows, errors


def test_a_cell_cut_into_shards_scores_as_it_does_in_one(tmp_path, bench, monkeypatch):
    calls = stand_in_engine(monkeypatch, pick)
    _, whole, whole_rows, whole_errors = _cell(tmp_path, bench, "whole")
    assert whole.status == "done" and len(whole_rows) == PAIRS
    assert any(e["item_id"].endswith(f"pairs.jsonl:{BAD_LINE}") for e in whole_errors)  # and rows without verdicts
    assert 0.2 < sum(r["correct"] for r in whole_rows) / PAIRS < 0.8  # right and wrong verdicts both
    calls.clear()
    monkeypatch.setattr(judged_cell, "SHARD_ITEMS", SHARD)
    root, sharded, rows, errors = _cell(tmp_path, bench, "sharded")
    assert sharded.status == "done"
    assert sharded.metrics == whole.metrics  # every number, the bootstrap intervals and n_bad_rows included
    assert [{**r, "model": None} for r in rows] == [{**r, "model": None} for r in whole_rows]
    assert errors == whole_errors
    # one shard's items in each engine call, and a call never mixes two
    shard_of = _shards(bench)
    called = [{shard_of[r.split("/", 1)[1].rsplit("#", 1)[0]] for r in call} for call in calls]
    assert [len(shards) for shards in called] == [1] * len(calls) and len(calls) == 5
    parts = root.list_parts("requests", bench.name, "judge")
    assert sorted({p.split("-")[0] for p in parts}) == [f"s{k:05d}" for k in range(5)]
    assert root.list_parts("predictions", bench.name, "judge") == [f"{k:06d}" for k in range(5)]
    failed = {shard_of[e["item_id"].split("/", 1)[1]] for e in errors if e["item_id"].split("/", 1)[1] in shard_of}
    assert root.list_parts("errors", bench.name, "judge") == [f"{k:06d}" for k in sorted(failed | {1})]


def _shards(bench: BenchmarkConfig) -> dict[str, int]:
    """Each pair's shard: line i (from 0) of the data file is in shard i // SHARD."""
    lines = Path(bench.data[0]).read_text().splitlines()
    return {json.loads(line)["id"]: i // SHARD for i, line in enumerate(lines) if line != "{not json"}


def test_a_run_killed_in_a_later_shard_resumes_asking_nothing_twice(tmp_path, bench, monkeypatch):
    stand_in_engine(monkeypatch, pick)
    _, whole, rows, _ = _cell(tmp_path, bench, "whole")
    shard_of = _shards(bench)
    before = 2 * sum(shard_of[r["item_id"].split("/", 1)[1]] < 2 for r in rows)  # shards 0 and 1's requests
    monkeypatch.setattr(judged_cell, "SHARD_ITEMS", SHARD)
    asked: list[str] = []
    dying = {"left": before + 7}  # answers before the engine dies: all of shards 0 and 1, 7 of shard 2

    def dies(request, model):
        asked.append(request["request_id"])
        dying["left"] -= 1
        if dying["left"] < 0:
            raise RuntimeError("engine died")
        return pick(request, model)

    stand_in_engine(monkeypatch, dies)
    root, first, _, _ = _cell(tmp_path, bench, "killed")
    assert first.status == "failed" and "engine died" in first.message
    stored = [a["request_id"] for a in root.read_rows("requests", bench.name, "judge")]
    assert len(stored) == before + 6  # parts of 2 (flush_every): the 7th answer of shard 2 was not stored
    asked.clear()
    dying["left"] = 10_000
    root, again, _, _ = _cell(tmp_path, bench, "killed")
    assert again.status == "done" and again.metrics == whole.metrics
    assert not set(asked) & set(stored) and len(asked) == REQUESTS - len(stored)
    answers = [a["request_id"] for a in root.read_rows("requests", bench.name, "judge")]
    assert sorted(answers) == sorted(set(answers)) and len(answers) == REQUESTS  # each request stored once


def test_parts_stored_before_shards_existed_are_the_first_shards(tmp_path, bench, monkeypatch):
    stand_in_engine(monkeypatch, pick)
    root, whole, _, _ = _cell(tmp_path, bench, "old")
    shard_of = _shards(bench)
    first_shard = [a for a in root.read_rows("requests", bench.name, "judge")  # shard 0's pairs, both orders
                   if shard_of[a["item_id"].split("/", 1)[1]] == 0]
    assert len(first_shard) >= 30
    root.clear("requests", bench.name, "judge")
    root.write_rows("requests", bench.name, "judge", first_shard, part="0001-0000000")  # the old name
    root.write_json("manifest.json", {"run": "old", "cells": {}, "attempts": 1})  # forget the cell was done
    monkeypatch.setattr(judged_cell, "SHARD_ITEMS", SHARD)
    calls = stand_in_engine(monkeypatch, pick)
    root, again, _, _ = _cell(tmp_path, bench, "old")
    asked = {r for call in calls for r in call}
    assert again.status == "done" and again.metrics == whole.metrics
    assert not asked & {a["request_id"] for a in first_shard} and len(asked) == REQUESTS - len(first_shard)


class _CountedCell(judged_cell.JudgedCell):
    """A cell of ten items in shards of two, counting the items its data gave."""

    read = 0

    def items(self):
        for n in range(10):
            type(self).read += 1
            yield {"item_id": str(n)}


@pytest.mark.parametrize(("wanted", "shards", "read"), [(None, [0, 1, 2, 3, 4], 10), ([1], [1], 4), ((), [], 0),
                                                         ([3, 0], [0, 3], 8)])
def test_map_shards_reads_no_item_past_the_last_shard_it_wants(wanted, shards, read):
    cell = _CountedCell(None, None, None, "generative", None, None, 2)
    _CountedCell.read = 0
    step = lambda shard, items: (shard, [i["item_id"] for i in items])
    if wanted is None:
        walked = []
        cell.for_each_shard(lambda shard, items: walked.append(step(shard, items)))
    else:
        walked = cell.map_shards(step, wanted)
    assert walked == [(s, [str(2 * s), str(2 * s + 1)]) for s in shards]
    assert _CountedCell.read == read  # a cell whose shards were all walked elsewhere reads no item again
