"""The retrieval flow's rewrite step (jobs.flow.ranked.rewrite_queries) on the stand-in engine: no Ray, no
weights. The benchmark leaves llm_rewrite queries None; the flow asks its rewriter once, keeps the answers in
the answer store beside the runs and reads them back through the benchmark."""
from __future__ import annotations

import pytest
from bundled_data import CORPUS, RETRIEVAL

from benchmarks.options import typed_options
from benchmarks.protocol import benchmark
from jobs.config import ConfigError
from jobs.engines.stand_in.engine import stand_in_reply
from jobs.flow.ranked import rewrite_queries, rewriter_config
from jobs.store.answers import ANSWERS, AnswerStore
from jobs.store.run_root import RunRoot

STAND_IN = {"name": "echo", "path": "none", "kind": "generative", "engine": "stand_in"}


def govt_rows(options):
    bench = benchmark("mtrag_retrieval")
    rows, problems = bench.queries([CORPUS, RETRIEVAL], "govt", options, limit=3)
    assert problems == []
    return bench, rows


def test_rewrites_are_asked_once_cached_and_read_back(tmp_path):
    bench = benchmark("mtrag_retrieval")
    options = typed_options(bench.Options, {"domains": ["govt"], "strategies": ["lastturn", "llm_rewrite"],
                                            "rewriter": STAND_IN, "rewrite_max_tokens": 12})
    bench, rows = govt_rows(options)
    assert [r["query"] is None for r in rows] == [False] * 3 + [True] * 3
    logs: list[str] = []
    first = RunRoot(str(tmp_path), "first")
    done, info = rewrite_queries(first, bench, options, rows, logs.append, AnswerStore(first))
    assert (info["rewriter"], info["asked"], info["fallback_to_last_turn"], info["engine_errors"]) == ("echo", 3, 0, 0)
    assert info["cache"].startswith(str(tmp_path / ANSWERS))
    assert done[:3] == rows[:3] and [set(r) for r in done] == [set(rows[0])] * 6  # no `turns` left for search
    request = bench.rewrite_request(rows[3], options)
    assert request["max_tokens"] == 12
    assert done[3]["query"] == stand_in_reply(request)  # one line, no label: taken as it is
    second = RunRoot(str(tmp_path), "second")
    again, info = rewrite_queries(second, bench, options, rows, logs.append, AnswerStore(second))
    assert again == done and info["asked"] == 0
    uncached, info = rewrite_queries(second, bench, options, rows, logs.append)  # `ragjudge run --no-cache`
    assert uncached == done and info["asked"] == 3 and info["cache"] is None
    assert logs == ["rewrites with echo: 3 queries to rewrite",
                    "rewrites with echo: 3 queries to rewrite", "3 answers of echo from the answer store, 0 to ask",
                    "rewrites with echo: 3 queries to rewrite"]


def test_no_rewrite_no_rewriter(tmp_path):
    bench = benchmark("mtrag_retrieval")
    options = typed_options(bench.Options, {"domains": ["govt"], "strategies": ["rewrite"]})
    bench, rows = govt_rows(options)
    assert bench.rewriter(options) is None
    assert rewrite_queries(RunRoot(str(tmp_path), "r"), bench, options, rows) == (rows, {})


def test_the_rewriter_must_be_generative():
    assert rewriter_config(STAND_IN).engine == "stand_in"
    with pytest.raises(ConfigError, match="options.rewriter: bm25 is a retriever model"):
        rewriter_config({"name": "bm25", "path": "bm25s", "kind": "retriever", "engine": "bm25"})
