"""A thinking judge's traces counted shard by shard (jobs.flow.thinking_counts)."""
from __future__ import annotations

from jobs.flow.thinking_counts import ThinkingCounts


def test_unfinished_traces_over_the_answers_that_had_one_across_shards():
    first = ThinkingCounts().add([{"thinking_finished": True}, {"thinking_finished": False},
                                  {"thinking_finished": None, "error": "api: HTTP 500"}, {}])
    second = ThinkingCounts().add([{"thinking_finished": False}, {"thinking_finished": True}])
    assert first.merge(second).summary() == {"traces": 4, "unfinished": 2, "unfinished_thinking_rate": 0.5}
    assert ThinkingCounts().add([{"thinking_finished": None}]).summary() == {
        "traces": 0, "unfinished": 0, "unfinished_thinking_rate": None}
