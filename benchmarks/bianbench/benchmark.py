"""Bi'anBench (seeds/bian_hallucination.txt; rules in docs/protocols.md 2) behind the benchmark contract.

RAG hallucination detection: a judge reads a context and an answer (QA, summary, data-to-text output or
translation) and says PASS (faithful to the context) or FAIL. Three splits: EN (13,301 rows), ZH (7,757) and
CF (1,934, counterfactual QA in both languages). The paper samples every judgement three times (temperature
0.8, top-p 0.7) and reports the mean, so `expand` makes one request per run and `combine` one row per run.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from benchmarks.bianbench.fields import BENCHMARK, KINDS
from benchmarks.bianbench.load import EXAMPLES, FIELDS, load_items
from benchmarks.bianbench.metrics import group_key, measures, row_key, summarize
from benchmarks.bianbench.options import Options, value_problems
from benchmarks.bianbench.prompts import check_items, template_problems
from benchmarks.bianbench.requests import expand
from benchmarks.bianbench.rows import combine, ensemble
from benchmarks.bianbench.tables import table_text
from benchmarks.protocol import Answer, Benchmark, Item, Row, register


@register("bianbench")
class BianBench(Benchmark):
    """One request and one row per sampled run; accuracy macro-averaged over subsets, then over runs."""

    name: ClassVar[str] = BENCHMARK
    kinds: ClassVar[tuple[str, ...]] = KINDS
    Options: ClassVar[type[Options]] = Options

    def problems(self, options: Options) -> list[str]:
        """Out-of-range values, an unreadable templates file, Table 12 prompts missing, bad placeholders."""
        return value_problems(options) + template_problems(options)

    fields = FIELDS
    examples = EXAMPLES
    load_items = staticmethod(load_items)
    check_items = staticmethod(check_items)
    expand = staticmethod(expand)

    def combine(self, item: Item, answers: Iterable[Answer], kind: str, options: Options,
                verdict: str | None = None) -> list[Row]:
        """One row per run; None reads the verdict from the text, the paper's protocol."""
        return combine(item, answers, kind, options, verdict)

    ensemble_rules = ("majority",)

    def ensemble(self, rows_by_model: Mapping[str, list[Row]], rule: str) -> list[Row]:
        """The paper's judge ensemble: a majority vote of the judges, each the majority of its runs (rows.ensemble);
        a tie goes to the first judge in `rows_by_model` that voted."""
        if rule != "majority":
            raise ValueError(f"{self.name} has no ensemble rule '{rule}' (it has: majority)")
        return ensemble(dict(rows_by_model))

    measures = staticmethod(measures)
    group_key = staticmethod(group_key)
    row_key = staticmethod(row_key)
    summarize = staticmethod(summarize)
    table_text = staticmethod(table_text)
