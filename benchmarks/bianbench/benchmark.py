"""Bi'anBench (seeds/bian_hallucination.txt; rules in PROTOCOLS.md 2) behind the benchmark contract.

RAG hallucination detection: a judge reads a context and an answer (QA, summary, data-to-text output or
translation) and says PASS (faithful to the context) or FAIL. Three splits: EN (13,301 rows), ZH (7,757) and
CF (1,934, counterfactual QA in both languages). The paper samples every judgement three times (temperature
0.8, top-p 0.7) and reports the mean, so `expand` makes one request per run and `combine` one row per run.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

from benchmarks.bianbench.fields import BENCHMARK, KINDS
from benchmarks.bianbench.load import load_items
from benchmarks.bianbench.metrics import group_key, measures, row_key, summarize
from benchmarks.bianbench.options import Options, value_problems
from benchmarks.bianbench.prompts import check_items, template_problems
from benchmarks.bianbench.requests import expand
from benchmarks.bianbench.rows import combine
from benchmarks.bianbench.tables import table_text
from benchmarks.protocol import Answer, Benchmark, Groups, Item, Request, Row


class BianBench(Benchmark):
    """One request and one row per sampled run; accuracy macro-averaged over subsets, then over runs."""

    name: ClassVar[str] = BENCHMARK
    kinds: ClassVar[tuple[str, ...]] = KINDS
    Options: ClassVar[type[Options]] = Options

    def problems(self, options: Options) -> list[str]:
        """Out-of-range values, an unreadable templates file, Table 12 prompts missing, bad placeholders."""
        return value_problems(options) + template_problems(options)

    def load_items(self, path: str) -> Iterator[Item]:
        return load_items(path)

    def check_items(self, items: Sequence[Item], options: Options) -> list[str]:
        return check_items(items, options)

    def expand(self, item: Item, kind: str, options: Options) -> list[Request]:
        return expand(item, kind, options)

    def combine(self, item: Item, answers: Iterable[Answer], kind: str, options: Options,
                verdict: str | None = None) -> list[Row]:
        """One row per run; None reads the verdict from the text, the paper's protocol."""
        return combine(item, answers, kind, options, verdict)

    def measures(self, row: Row) -> dict[str, float | None]:
        return measures(row)

    def group_key(self, row: Row) -> str:
        return group_key(row)

    def row_key(self, row: Row) -> str:
        return row_key(row)

    def summarize(self, groups: Groups, resamples: int = 1000) -> dict[str, Any]:
        return summarize(groups, resamples)

    def table_text(self, metrics: list[dict[str, Any]]) -> str:
        return table_text(metrics)
