"""RAG-RewardBench (seeds/rag_rewardbench.txt; rules in docs/protocols.md 1) against the benchmark protocol.

1,485 preference pairs in 18 subsets. A reward model is right on a pair when it prefers `chosen` to `reject`.
Three kinds of RM see a pair differently, so `expand` turns one pair into the requests its kind needs and
`combine` turns the answered requests back into one item row with `correct` in [0, 1].
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks.protocol import Answer, Benchmark, Item, Request, Row, register
from benchmarks.rag_rewardbench import ensemble, load, metrics, requests, rows, synthetic, tables, validation
from benchmarks.records import Record


@dataclass(frozen=True)
class RagRewardBenchOptions:
    """The paper's protocol has no knobs: the prompt, both orders and the verdict reading are fixed (a judge
    model's `verdict` setting picks log-probs or text)."""


@register("rag_rewardbench")
class RagRewardBench(Benchmark):
    name = load.BENCHMARK
    kinds = requests.KINDS
    Options = RagRewardBenchOptions

    fields = load.FIELDS
    examples = load.EXAMPLES
    load_items = staticmethod(load.load_items)

    def expand(self, item: Item, kind: str, options: RagRewardBenchOptions) -> list[Request]:
        return requests.expand(item, kind)

    def combine(self, item: Item, answers: Iterable[Answer], kind: str, options: RagRewardBenchOptions,
                verdict: str | None = None) -> Row:
        return rows.combine(item, answers, kind, verdict or "logprob")

    def plan_items(self) -> tuple[list[Item], str]:
        """Table 4's sizes and mean lengths as synthetic pairs: the Appendix D examples are abridged, about a
        quarter of the real prompt length."""
        pairs = list(synthetic.generate())
        items = [load.read_pair(Record(synthetic.TABLE4, k, pair))[0] for k, pair in enumerate(pairs, 1)]
        per_token = f"characters / {synthetic.CHARS_PER_TOKEN:g}"
        return items, (f"{len(items)} synthetic pairs with Table 4's subset sizes and mean lengths "
                       f"({per_token}), built from mtRAG passages; the data is not here")

    validation_items = staticmethod(validation.validation_items)
    validation_sample = staticmethod(validation.validation_sample)
    validation_verdict = staticmethod(validation.validation_verdict)

    ensemble_rules = ensemble.RULES
    ensemble = staticmethod(ensemble.ensemble)

    measures = staticmethod(metrics.measures)
    summarize = staticmethod(metrics.summarize)
    table_text = staticmethod(tables.table_text)
    table_html = staticmethod(tables.table_html)
