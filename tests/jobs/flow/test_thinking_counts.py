"""A thinking judge's traces counted shard by shard (jobs.flow.thinking_counts)."""
from __future__ import annotations

from jobs.flow.thinking_counts import ThinkingCounts


def test_unfinished_traces_over_the_answers_that_had_one_across_shards():
    first = ThinkingCounts().add([{"thinking_finished": True}, {"thinking_finished": False},
                                  {"thinking_finished": None, "error": "api: HTTP 500"}, {}])
    second = ThinkingCounts().add([{"thinking_finished": False}, {"thinking_finished": True}])
    assert first.merge(second).summary() == {"traces": 4, "unfinished": 2, "unfinished_thinking_rate": 0.5,
                                             "thinking_tokens": None, "accuracy_by_thinking_quartile": None}
    assert ThinkingCounts().add([{"thinking_finished": None}]).summary() == {
        "traces": 0, "unfinished": 0, "unfinished_thinking_rate": None, "thinking_tokens": None,
        "accuracy_by_thinking_quartile": None}


def test_thinking_tokens_of_the_counted_traces_across_shards_with_linear_percentiles():
    first = ThinkingCounts().add([
        {"thinking_finished": True, "thinking_tokens": 10},
        {"thinking_finished": False, "thinking_tokens": 40},  # a cut trace's tokens were spent too
        {"thinking_finished": True, "thinking_tokens": None},  # an API that reports no reasoning_tokens
        {"thinking_finished": None, "thinking_tokens": 99, "error": "api: HTTP 500"},  # no trace: not counted
    ])
    second = ThinkingCounts().add([{"thinking_finished": True, "thinking_tokens": 30},
                                   {"thinking_finished": True, "thinking_tokens": 20}])
    summary = first.merge(second).summary()
    # 10, 20, 30, 40: the p95 sits 0.85 of the way from 30 to 40 (0.95 x 3 = 2.85); nearest rank would say 40
    assert summary["thinking_tokens"] == {"counted": 4, "mean": 25.0, "p50": 25.0, "p95": 38.5}
    assert (summary["traces"], summary["unfinished"]) == (5, 1)
    repeated = ThinkingCounts().add([{"thinking_finished": True, "thinking_tokens": 7}] * 3).summary()
    assert repeated["thinking_tokens"] == {"counted": 3, "mean": 7.0, "p50": 7.0, "p95": 7.0}


def _item(item_id: str, *tokens: int | None) -> list[dict]:
    return [{"item_id": item_id, "thinking_finished": True, "thinking_tokens": t} for t in tokens]


def test_accuracy_by_quartile_of_each_items_thinking_tokens_across_shards():
    # items' tokens (both requests summed): 10, 20, 30, 40; linear quartile edges 17.5, 25, 32.5, 40
    first = ThinkingCounts().add(_item("a", 4, 6) + _item("b", 15, 5) + _item("x", 3, None),  # x: one uncounted
                                 [{"item_id": "a", "correct": 1.0}, {"item_id": "b", "correct": 0.0},
                                  {"item_id": "x", "correct": 1.0}])
    second = ThinkingCounts().add(_item("c", 30, 0) + _item("d", 20, 20) + _item("e", 1, 1),
                                  [{"item_id": "c", "correct": 0.5}, {"item_id": "d", "correct": 1.0},
                                   {"item_id": "e", "correct": None}])  # e: not scored
    quartiles = first.merge(second).summary()["accuracy_by_thinking_quartile"]
    assert quartiles == [{"tokens_from": 10.0, "tokens_to": 17.5, "n": 1, "accuracy": 1.0},
                         {"tokens_from": 17.5, "tokens_to": 25.0, "n": 1, "accuracy": 0.0},
                         {"tokens_from": 25.0, "tokens_to": 32.5, "n": 1, "accuracy": 0.5},
                         {"tokens_from": 32.5, "tokens_to": 40.0, "n": 1, "accuracy": 1.0}]
    tied = ThinkingCounts().add(_item("a", 8) + _item("b", 8), [{"item_id": "a", "correct": 1.0},
                                                                {"item_id": "b", "correct": 0.0}]).summary()
    assert [q["n"] for q in tied["accuracy_by_thinking_quartile"]] == [2, 0, 0, 0]  # all on the first edge
    assert ThinkingCounts().add(_item("a", 8)).summary()["accuracy_by_thinking_quartile"] is None  # no rows
