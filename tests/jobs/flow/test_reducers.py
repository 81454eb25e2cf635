"""The reducer of item rows (jobs.flow.reducers) on inputs where its rules and their nearest variants differ:
shards merged in turn with a measure the first ones lack, rows added after a shard was compacted, rows
without a subset, and each bound of a stored prediction row's `correct`."""
from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from jobs.flow.reducers import GroupRows, SubsetReducer, row_problem


def _measures(row):
    return {name: row.get(name) for name in ("x", "y")}


def _plain(groups):
    return {name: {group: list(pairs) for group, pairs in by_group.items()} for name, by_group in groups.items()}


def test_three_shards_merged_in_turn_keep_each_measure_beside_its_row():
    """The third shard brings a measure the first two lack: the merged rows before it must count as its rows
    without a value (a merge that forgot the first shard's rows would put y beside the wrong keys)."""
    reducer = SubsetReducer(_measures)
    first = reducer.reduced([{"item_id": "a", "x": 1.0}, {"item_id": "b", "x": 0.0}])
    second = reducer.reduced([{"item_id": "c", "x": 0.5}])
    third = reducer.reduced([{"item_id": "d", "x": 1.0, "y": 0.25}, {"item_id": "a", "y": 0.75}])
    state = reducer.merge(reducer.merge(first, second), third)
    assert _plain(reducer.finalize(state)) == {
        "x": {"": [("a", 1.0), ("b", 0.0), ("c", 0.5), ("d", 1.0)]},  # a's later row has no x: its x stays
        "y": {"": [("a", 0.75), ("d", 0.25)]}}


def test_rows_added_after_a_compaction_are_kept():
    reducer = SubsetReducer(_measures)
    state = reducer.reduced([{"item_id": "a", "x": 1.0, "subset": "s"}])  # compacted
    reducer.accumulate(state, {"item_id": "b", "x": 0.0, "subset": "s"})
    reducer.accumulate(state, {"item_id": "a", "x": 0.5, "subset": "s"})  # the last value of a key wins
    assert _plain(reducer.finalize(state)) == {"x": {"s": [("a", 0.5), ("b", 0.0)]}}


def test_a_row_without_a_subset_is_in_the_empty_group():
    reducer = SubsetReducer(_measures)
    groups = reducer.reduce([{"item_id": "a", "x": 1.0}, {"item_id": "b", "x": 0.0, "subset": None},
                             {"item_id": "c", "x": 1.0, "subset": "t"}])
    assert _plain(groups) == {"x": {"": [("a", 1.0), ("b", 0.0)], "t": [("c", 1.0)]}}


def test_a_group_without_rows_has_no_keys():
    keys = GroupRows().all_keys()
    assert keys.type == pa.string() and len(keys) == 0


SPEC = SimpleNamespace(name="bench", measures=lambda row: {"correct": row.get("correct"), "n": row.get("n")})


@pytest.mark.parametrize("correct", [None, 0, 1, 0.0, 0.5, 1.0])
def test_a_prediction_row_with_correct_in_0_1_is_good(correct):
    assert row_problem(SPEC, {"item_id": "a", "correct": correct}) is None


@pytest.mark.parametrize("correct", [True, False, "1", -0.1, 1.5, 2.0, float("nan")])
def test_a_prediction_row_with_correct_outside_0_1_or_no_number_is_refused(correct):
    assert row_problem(SPEC, {"item_id": "a", "correct": correct}) == \
        f"key 'correct': {correct!r} is not a number in [0, 1]"


@pytest.mark.parametrize("item_id", [None, 3, b"a"])
def test_a_prediction_row_without_a_text_item_id_is_refused(item_id):
    assert row_problem(SPEC, {"item_id": item_id, "correct": 1}) == "key 'item_id': missing or not text"


def test_a_measure_that_raises_or_is_no_number_is_named():
    def measures(row):
        return {"score": row["score"]}

    spec = SimpleNamespace(name="bench", measures=measures)
    assert row_problem(spec, {"item_id": "a"}) == "not a bench prediction row (KeyError: 'score')"
    assert row_problem(spec, {"item_id": "a", "score": "high"}) == "key 'score': 'high' is not a number"
    assert row_problem(spec, {"item_id": "a", "score": "0.5"}) is None  # a number as text reduces
