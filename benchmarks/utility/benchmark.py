"""Utility judgments (seeds/utility_judgments.txt; rules in docs/protocols.md 4 and 5) as a Benchmark.

A judge sees a question and 10 candidate passages (GTI: ground-truth evidence among counterfactual and noisy
passages) and picks the evidence with utility, in one of four forms: pointwise (yes/no per passage),
pairwise (which of two, every pair in both orders, ranked by wins), listwise-set (a set) and listwise-rank
(a ranking); each with utility or relevance wording, question or passages first, and a Figure 6 requirement
(none, cot, reasoning, answer_first). Listwise forms run k seeded shuffles whose answers are mapped back to
the original passages and voted. One prediction row per (item, condition):

- set forms (pointwise, listwise_set): precision, recall, F1 of the selected set; correct = F1;
- rank forms (pairwise, listwise_rank): NDCG@1, NDCG@5, MRR@5 of the ranking; correct = NDCG@5.

All averages are macro over questions, per condition and dataset, with 95% bootstrap intervals; listwise
rows also report the score of each shuffle by where the (first) ground-truth passage stood (Figure 5).
GTU rows (with gold answers) add a round: the generator answers from each evidence source, one QA row per
source (form "qa"; Table 4; see gtu.py for the sources, the number of passages each hands over, the metrics).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from benchmarks.protocol import Answer, Benchmark, Item, Request, Row, register
from benchmarks.utility import gtu, summary, tables
from benchmarks.utility.load import EXAMPLES, FIELDS, load_items
from benchmarks.utility.options import BENCHMARK, Options, plan, problems
from benchmarks.utility.requests import judgment_requests, request
from benchmarks.utility.rows import judgment_rows


@register("utility")
class UtilityJudgments(Benchmark):
    """Which passages have utility for a question, judged pointwise, pairwise or listwise (module
    docstring)."""

    name: ClassVar[str] = BENCHMARK
    kinds: ClassVar[tuple[str, ...]] = ("generative",)
    Options: ClassVar[type] = Options

    problems = staticmethod(problems)
    fields = FIELDS
    examples = EXAMPLES
    load_items = staticmethod(load_items)

    def expand(self, item: Item, kind: str, options: Options) -> list[Request]:
        """The requests of every condition of one item; each carries the permutation that maps its prompt
        positions (Passage-i, [i]) back to the item's original passages."""
        if kind not in self.kinds:
            raise ValueError(f"utility judgments need a generative judge, not {kind!r}")
        return judgment_requests(item, options, plan(options))

    def followup(self, item: Item, answers: Iterable[Answer], kind: str, options: Options) -> list[Request]:
        """The GTU answer round (gtu.py): once an item's judgments are in, one answer-generation request per
        evidence source whose evidence is known; nothing for items without gold answers or with options.answer
        false. The same answers give the same requests, so the pipeline stops after this round."""
        resolved = plan(options)
        if not gtu.wants_answers(item, options.answer):
            return []
        rows = judgment_rows(item, {a["variant"]: a for a in answers}, options, resolved)
        sources = gtu.evidence_sources(item, rows, options.k, options.answer_m)
        return [request(item, gtu.VARIANT + e.source, list(e.passages),
                        gtu.answer_messages(item, e, resolved.prompts), options)
                for e in sources if e.passages is not None]

    def combine(self, item: Item, answers: Iterable[Answer], kind: str, options: Options,
                verdict: str | None = None) -> list[Row]:
        """One prediction row per condition (rows.py), and for a GTU item one QA row per evidence source
        (gtu.py). `verdict` is accepted and ignored: these judgments are always read from the text."""
        resolved = plan(options)
        by_variant = {a["variant"]: a for a in answers}
        rows = judgment_rows(item, by_variant, options, resolved)
        if not gtu.wants_answers(item, options.answer):
            return rows
        base = {"item_id": item["item_id"], "benchmark": BENCHMARK, "subset": item["subset"]}
        return rows + gtu.qa_rows(base, item, by_variant,
                                  gtu.evidence_sources(item, rows, options.k, options.answer_m))

    measures = staticmethod(summary.measures)
    group_key = staticmethod(summary.group_key)
    row_key = staticmethod(summary.row_key)
    summarize = staticmethod(summary.summarize)
    table_text = staticmethod(tables.table_text)
