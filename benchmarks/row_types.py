"""The rows that cross the layers, named once: items, requests, answers, queries and prediction rows.

A benchmark writes requests, an engine (actors/) reads them and writes answers, and the benchmark's combine
reads those back; a key one side writes and the other never sees fails far from its cause. These TypedDicts
say which keys each side may count on, and `check_keys` names the first row that lacks one.

Why TypedDicts and not dataclasses: rows travel through Ray Data (Arrow) and JSON as plain dicts, so a
TypedDict names the keys without a conversion at every boundary (a frozen dataclass would need one per row,
each way). Each benchmark's own keys (a pair's `chosen`, a prediction row's `score_chosen`) ride along
undeclared: a TypedDict cannot say "and more" before PEP 728's `extra_items`, and nothing here type-checks
the project, so these are the contract's words and the checks below its enforcement.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, TypedDict, TypeVar


class _ItemKeys(TypedDict):
    item_id: str  # unique within the benchmark's data; rows and answers join on it
    subset: str  # the reducer's default group


class Item(_ItemKeys, total=False):
    """One benchmark item as load_items yields it; a bad input row is an item with `error`."""

    benchmark: str
    error: str  # why the input row is unusable (benchmarks.records.error_item), with its `source` and `row`
    source: str
    row: int


class _RequestKeys(TypedDict):
    request_id: str  # <item id>#<variant>[@<route>]: unique, deterministic; answers are stored under it
    item_id: str
    subset: str
    variant: str  # which request of the item (an order, a run, a judge's prompt): combine reads answers by it
    messages: list[dict[str, str]]  # the chat: {role, content} each


class Request(_RequestKeys, total=False):
    """One request as a benchmark's expand / followup writes it and every engine reads it."""

    route: str  # who answers: "self" (the cell's model) or a judge's model name (jobs routes it)
    prefill: str  # the opened assistant turn after which a judge's verdict token is read ...
    candidates: list[str]  # ... as the log-probs of these candidates' first tokens
    temperature: float  # sampling settings of the benchmark's protocol; absent: greedy (actors.sampling)
    top_p: float
    seed: int
    max_tokens: int
    permutation: list[int]  # utility: the item's passages in prompt order; carried to the answer unread
    # the assistant turn's text so far, generated after (a thinking judge's trace closed at its budget: jobs.flow)
    continue_text: str


class JudgePart(Request):
    """A judge request split for vLLM (jobs.engines.vllm.stage.split_judge_request): its text part and, with a
    prefill, its verdict part; jobs' merge_parts joins the answers of the `n_parts` parts again."""

    part: str  # "text" | "verdict"
    n_parts: int


class _Failure(TypedDict):
    error: str | None  # why this request has no answer (an overflow, a failed API call); None: answered


class TaskColumns(TypedDict, total=False):
    """The columns of an engine's task (ANSWER_KEYS), as a score head or a generation computes them; None where
    an error left them unanswered."""

    text: str | None  # judge: the generated text (a thinking judge's: after its trace; None where it did not end)
    thinking: str | None  # a thinking judge's trace (jobs.engines.reasoning)
    thinking_finished: bool | None  # whether the trace ended; None: the model does not think, or it failed
    # the tokens the trace took, as the engine counted them (an API's reasoning_tokens); None: not counted
    thinking_tokens: int | None
    candidate_logprobs: list[float | None] | None  # judge with a prefill: per candidate, None outside top-k
    score: float | None  # classify: the score head's value (a raw logit for a stock classifier)
    preference: list[float] | None  # classify with a GPM head: the response's preference vector ...
    preference_scale: list[float] | None  # ... and the prompt's scale (score is None)
    logp_sum: float | None  # logprobs: the response's summed log-prob under the policy ...
    logp_mean: float | None  # ... its mean per token ...
    n_response_tokens: int | None  # ... over this many tokens
    ref_logp_sum: float | None  # logprobs with a reference model: the same under the reference
    ref_logp_mean: float | None


class _Prompt(_Failure, total=False):
    n_tokens: int  # the prompt's tokens (the larger part's, for a split judge request)
    truncated: bool  # the prompt did not fit the context: not sent, `error` says so


class PromptAnswer(_Prompt, TaskColumns, total=False):
    """What an engine computes for one prompt, before the request's columns join it: its error, its size and
    its task's columns."""


class _AnswerKeys(TypedDict):
    request_id: str
    item_id: str
    subset: str
    variant: str


class Answer(_AnswerKeys, PromptAnswer, total=False):
    """An engine's answer row: the request's columns but its inputs (actors.sampling.REQUEST_INPUTS) and the
    prompt's answer."""

    route: str
    permutation: list[int]
    retryable: bool  # its error may pass if asked again (added by jobs: jobs.engines.errors); False: none or final
    part: str  # between an engine and merge_parts only: never stored
    n_parts: int


class _QueryKeys(TypedDict):
    item_id: str
    task_id: str
    domain: str
    strategy: str
    query: str | None  # None: the rewriter writes it (RetrievalBenchmark.rewritten)


class Query(_QueryKeys, total=False):
    """A retrieval query row; the retriever adds the ranking."""

    turns: list[str]  # the user's turns so far, for the rewriter
    document_ids: list[str]  # best first
    scores: list[float]


class _RowKeys(TypedDict):
    item_id: str
    benchmark: str
    subset: str
    correct: float | None  # the row's score in [0, 1]; None: not scored (an error, or no notion of it)
    error: str | None  # why the row is not scored


class Row(_RowKeys, total=False):
    """A prediction row as combine (or prediction_rows) writes it; the benchmark's own columns ride along."""

    truncated: bool
    n_tokens: int
    model: str  # added by jobs when the row is stored


REQUEST_KEYS: frozenset[str] = Request.__required_keys__  # every engine reads these
ANSWER_BASE_KEYS: frozenset[str] = Answer.__required_keys__  # every engine's answer has these
ROW_KEYS: frozenset[str] = Row.__required_keys__  # every prediction row has these
PART_KEYS = frozenset({"part", "n_parts"})  # a split request's, dropped when its answers merge
# The answer columns of each engine task, named as the actors name them (jobs.engines.vllm.stage: classify | judge |
# logprobs; a transformers scorer answers the task of its model's kind the same way).
ANSWER_KEYS: dict[str, frozenset[str]] = {
    "classify": frozenset({"score"}),
    "judge": frozenset({"text"}),
    "logprobs": frozenset({"logp_sum", "logp_mean", "n_response_tokens"}),
}
VERDICT_KEYS = frozenset({"candidate_logprobs"})  # a judge's answer to a request with a prefill
REFERENCE_KEYS = frozenset({"ref_logp_sum", "ref_logp_mean"})  # an implicit RM's with a reference model


def answer_keys(task: str, *, verdict: bool = False, reference: bool = False) -> frozenset[str]:
    """Every key an answer of `task` has: the base keys, the task's, and the verdict's (requests with a
    prefill) or the reference model's where they apply."""
    if task not in ANSWER_KEYS:
        raise ValueError(f"unknown engine task {task!r}; expected one of {', '.join(sorted(ANSWER_KEYS))}")
    return (ANSWER_BASE_KEYS | ANSWER_KEYS[task] | (VERDICT_KEYS if verdict else frozenset())
            | (REFERENCE_KEYS if reference else frozenset()))


class RecordError(ValueError):
    """A row crossing a layer boundary lacks a key the other side reads."""


def missing_keys(rows: Iterable[Mapping[str, Any]], required: Collection[str]) -> list[tuple[int, str]]:
    """(row index, key) of every required key a row lacks, rows in order, keys sorted. A key whose value is
    None is there: `error` None is an answer that did not fail."""
    return [(i, key) for i, row in enumerate(rows) for key in sorted(required) if key not in row]


def _name(row: Mapping[str, Any], index: int) -> str:
    for key in ("request_id", "item_id"):
        if row.get(key) is not None:
            return f"{key} {row[key]!r}"
    return f"row {index}"


def _problem(row: Mapping[str, Any], index: int, missing: list[str], who: str, side: str) -> str:
    return (f"{who}: {side} {_name(row, index)} lacks {', '.join(repr(k) for k in missing)} "
            f"(it has {', '.join(sorted(row)) or 'no keys'})")


def check_keys(rows: Iterable[Mapping[str, Any]], required: Collection[str], who: str, side: str) -> None:
    """Raise RecordError naming the first row that lacks a required key, the keys it lacks, `who` (the engine
    or benchmark, as the caller names it) and `side` ("request", "answer", "row"), and how many rows lack one."""
    rows = list(rows)
    bad = {}
    for i, key in missing_keys(rows, required):
        bad.setdefault(i, []).append(key)
    if bad:
        first = min(bad)
        more = f"; {len(bad)} of {len(rows)} rows lack keys" if len(bad) > 1 else ""
        raise RecordError(_problem(rows[first], first, bad[first], who, side) + more)


R = TypeVar("R", bound=Mapping[str, Any])


def checked(rows: Iterable[R], required: Collection[str], who: str, side: str) -> Iterator[R]:
    """The rows of a stream as they come, RecordError at the first one that lacks a required key: an engine's
    answers are checked as they arrive, not after the last one."""
    for i, row in enumerate(rows):
        if missing := sorted(key for key in required if key not in row):
            raise RecordError(_problem(row, i, missing, who, side))
        yield row
