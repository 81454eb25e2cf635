"""mtRAG generation (seeds/mtrag.txt sections 6-8, Appendices D, F, I; rules in docs/protocols.md 3).

A task is a conversation up to a user question, with reference passages and a reference answer. A generator
answers it from the passages of a retrieval setting (Reference: the task's own passages, none when it is
unanswerable; Reference+RAG: those plus the top retrieved ones up to `top_k`; Full RAG: the top `top_k`
retrieved), with the Appendix D.2 prompt. LLM judges then score the response: RB_llm (Figure 6, the median
over `judges.rb_llm`), the IDK judge (Figure 8) and RAGAS faithfulness RL_F (statements, then a verdict per
statement). RougeL is computed here; Bert-Rec, Bert-KPrec and so RB_alg need an encoder: the pipeline's
encoder stage (actors.bertscore, settings in `options.bertscore`) scores the pairs `text_pairs` names and
`add_text_pair_scores` writes them into the row; without the stage they are None.

Rounds. Generating and judging are separate model calls whose prompts depend on earlier answers:
  round 0  expand(item)            -> the generation request (variant "generation"); with
                                      `responses: given`, the response is the task's predictions[0] and
                                      round 0 is already round 1's judge requests.
  round 1  followup(item, answers) -> judge requests on the response: "rb_llm" (one per RB_llm judge),
                                      "idk" and "statements".
  round 2  followup(item, answers) -> "verdicts": the statements judged against the passages, once the
                                      statements answer parsed to at least one statement.
  then     followup(item, answers) -> [], and combine(item, all answers) writes the task's row.
`followup` returns every request the answers so far make possible that is not answered yet, so it is safe to
call again after a resume (stored answers are not asked again). A pipeline loops: answer expand's requests,
then while followup returns requests for some item, answer those. A failed generation gives no judge
requests; a failed judge request is answered (with its error) and not asked again.

Every request has `route`: "self" (the cell's model answers it: the generator, or, with responses given, the
judge under evaluation) or the name of a judge model from `options.judges`, which the pipeline sends it to
(a shared judge deployment serves every generator cell). Every request has max_tokens; all are greedy.

One prediction row per task (`combine`); tasks outside `task_ids` or over `max_reference_passages` have no
requests and no row. `correct` is answerability correctness (IDK = yes exactly when the task is unanswerable
or conversational; None for UNDERSPECIFIED or an unknown IDK label), the paper's Ans. Acc. per task.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from benchmarks.mtrag.generation.load import FIELDS, load_items
from benchmarks.mtrag.generation.options import (
    BENCHMARK,
    Options,
    encoder_settings,
    judge_routes,
    option_problems,
)
from benchmarks.mtrag.generation.passages import check_items
from benchmarks.mtrag.generation.requests import requests
from benchmarks.mtrag.generation.rows import add_text_pair_scores, combine, text_pairs
from benchmarks.mtrag.generation.summary import group_key, measures, summarize
from benchmarks.mtrag.generation.tables import table_text
from benchmarks.protocol import Answer, Benchmark, Item, Request, Row, register


@register("mtrag_generation")
class MtragGeneration(Benchmark):
    """mtRAG's generation task: generate (or take the given response), then judge it in rounds."""

    name: ClassVar[str] = BENCHMARK
    kinds: ClassVar[tuple[str, ...]] = ("generative",)
    Options: ClassVar[type] = Options

    problems = staticmethod(option_problems)
    fields = FIELDS
    load_items = staticmethod(load_items)
    check_items = staticmethod(check_items)
    routes = staticmethod(judge_routes)

    def expand(self, item: Item, kind: str, options: Options) -> list[Request]:
        """Round 0: the generation request, or with responses given the judge requests."""
        return requests(item, {}, options)

    def followup(self, item: Item, answers: Iterable[Answer], kind: str, options: Options) -> list[Request]:
        """Every request the answers so far make possible and that is not answered yet; [] when the task needs
        no more answers."""
        by_id = {a["request_id"]: a for a in answers}
        return [r for r in requests(item, by_id, options) if r["request_id"] not in by_id]

    def combine(self, item: Item, answers: Iterable[Answer], kind: str, options: Options,
                verdict: str | None = None) -> list[Row]:
        """The task's row ([] outside the run); every judgment is read from text, whatever `verdict` says."""
        return combine(item, answers, options)

    text_pair_encoder = staticmethod(encoder_settings)
    text_pairs = staticmethod(text_pairs)
    add_text_pair_scores = staticmethod(add_text_pair_scores)
    measures = staticmethod(measures)
    group_key = staticmethod(group_key)
    summarize = staticmethod(summarize)
    table_text = staticmethod(table_text)
