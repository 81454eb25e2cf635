"""The benchmark contract as code: what jobs/ may call on a benchmark, and the registry of benchmarks.

Two kinds of benchmark exist. A `Benchmark` is judged request by request: its items expand into requests,
an engine answers them (in rounds, when a later request needs an earlier answer), and its rows are reduced to
metrics. A `RetrievalBenchmark` is scored on rankings: a retriever indexes corpora and answers queries, and
the rankings are scored against qrels. Each class lists the methods a benchmark must write (abstract: a
benchmark that misses one fails when the registry loads it, naming the method) and the hooks it may write
(no-op defaults here). Every benchmark names its options as a frozen dataclass (`Options`), whose defaults are
the paper's protocol; benchmarks.options turns a config's mapping into it. A method that is a plain function of
the benchmark's package is bound as `name = staticmethod(function)`.

Adding a benchmark: one package in benchmarks/ with a class here-derived and decorated `@register("name")` in
its `benchmark` module, and one YAML in conf/benchmarks/ whose `module:` is that name.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.columns import Field
from benchmarks.records import Columns

# The rows crossing the layers, declared in benchmarks.row_types and named here with the contract.
from benchmarks.row_types import Answer, Item, Query, Request, Row

# measure -> group -> [(row key, value)], sorted by key (jobs.flow.reducers hands a compact sequence, not a list)
Groups = dict[str, dict[str, Sequence[tuple[str, float]]]]


class _Contract(ABC):
    name: ClassVar[str]  # the benchmark's name in item ids and results
    kinds: ClassVar[tuple[str, ...]]  # the model kinds it has a protocol for
    Options: ClassVar[type]  # a frozen dataclass of its options

    def problems(self, options: Any) -> list[str]:
        """Cross-field checks the option types cannot say (e.g. a list that must not be empty); each problem
        names its key, e.g. "options.k: must be at least 1"."""
        return []

    @abstractmethod
    def table_text(self, metrics: list[dict[str, Any]]) -> str:
        """The paper's table for the metrics.json of one or more models."""

    def table_html(self, metrics: list[dict[str, Any]]) -> str | None:
        """An HTML table for the report; None: the report shows table_text."""
        return None


class Benchmark(_Contract):
    """A benchmark judged request by request: load -> expand -> (answers) -> followup rounds -> combine ->
    measures -> summarize -> table."""

    ensemble_rules: ClassVar[tuple[str, ...]] = ()  # the rules `ensemble` combines models' rows by (none here)
    fields: ClassVar[tuple[Field, ...]]  # what load_items reads from a row (`ragjudge benchmarks` prints them)
    examples: ClassVar[tuple[dict[str, Any], ...]] = ()  # rows of the benchmark's own form, for the docs

    @abstractmethod
    def load_items(self, path: str, columns: Columns | None = None) -> Iterator[Item]:
        """Every item of a file or folder, its columns renamed by `columns` (field -> the file's column); a bad
        row is an item with `error` naming the file, row and every field at fault."""

    @abstractmethod
    def expand(self, item: Item, kind: str, options: Any) -> list[Request]:
        """The first round of requests for one item, adjacent so they share a batch and a prefix cache."""

    @abstractmethod
    def combine(self, item: Item, answers: Iterable[Answer], kind: str, options: Any,
                verdict: str | None = None) -> Row | list[Row]:
        """The item's prediction row(s) from all its answers. `verdict` (logprob | text) overrides the
        benchmark's own reading of a generative judge's verdict; None keeps it."""

    @abstractmethod
    def measures(self, row: Row) -> dict[str, float | None]:
        """The values one row adds to the reducer (None: not counted)."""

    @abstractmethod
    def summarize(self, groups: Groups, resamples: int = 1000) -> dict[str, Any]:
        """metrics.json from the reduced measures: the paper's layout, with n and intervals."""

    def check_items(self, items: Sequence[Item], options: Any) -> list[str]:
        """Problems of the loaded items under these options that would fail every request (e.g. no prompt for
        a language the data has); found before any engine starts."""
        return []

    def plan_items(self) -> tuple[list[Item], str] | None:
        """Items shaped like the full benchmark (the paper's sizes and lengths) for `ragjudge plan` when the
        data is not on this machine, and a phrase saying what they are; None: plan from `plan_sample`."""
        return None

    def validation_items(self, items: Iterable[Item], n: int) -> tuple[list[Item], int] | None:
        """The first `n` of `items` that `ragjudge validate` scores on each path a model could be scored on, and
        how many bad rows it skipped on the way; None, whatever the items (the default): this benchmark has no
        items to validate a model on."""
        return None

    def validation_sample(self) -> str | None:
        """A bundled file of validation items, for a sweep none of whose benchmarks has validation items of its
        own (a model's paths agree or not whatever the benchmark); None: none."""
        return None

    def validation_verdict(self, row: Row, kind: str) -> tuple[Any, list[float | None]]:
        """(verdict, scores) of a validation item's row that did not fail: two scorings agree on the item when
        their verdicts are equal; the scores are the numbers the verdict is read from, compared one by one."""
        raise NotImplementedError(f"{type(self).__name__} has validation items but reads no verdict")

    def followup(self, item: Item, answers: Iterable[Answer], kind: str, options: Any) -> list[Request]:
        """Requests the answers so far make possible (generate, then judge); the pipeline answers rounds until
        this returns nothing new. Default: one round."""
        return []

    def routes(self, options: Any) -> list[str]:
        """Model names other than the cell's own that requests are routed to (their `route`)."""
        return []

    def text_pair_encoder(self, options: Any) -> dict[str, Any] | None:
        """Settings of the encoder stage (BERTScore) the rows need, or None for no encoder stage."""
        return None

    def text_pairs(self, item: Item, row: Row, options: Any) -> list[dict[str, str]]:
        """The (pair_id, candidate, reference) text pairs one row needs scored by the encoder stage."""
        return []

    def add_text_pair_scores(self, row: Row, scores: Mapping[str, Mapping[str, float]], label: str) -> Row:
        """The row with its pairs' encoder scores (pair id -> precision, recall, f1) filled in."""
        return row

    def ensemble(self, rows_by_model: Mapping[str, list[Row]], rule: str) -> list[Row]:
        """Prediction rows of a virtual model that combines these models' rows by `rule` (one of
        `ensemble_rules`: mean, zscore or majority), scored like any model's; a member the rule cannot use (e.g.
        a judge without scores to average) raises ValueError naming it."""
        raise ValueError(f"{self.name} has no ensemble rule '{rule}' (it has none)")

    def group_key(self, row: Row) -> str:
        """The reducer group of a row."""
        return row.get("subset") or ""

    def row_key(self, row: Row) -> str:
        """What identifies one value in a group (a resumed run that saw a row twice counts it once)."""
        return row["item_id"]


@dataclass(frozen=True)
class SearchSettings:
    """How a retrieval cell ranks: `top_k` passages per query; a dense index over `ann_threshold` passages or
    more is a faiss HNSW graph built with `ann` (m, ef_construction, ef_search), an exact one below."""

    top_k: int
    ann_threshold: int
    ann: dict[str, int]


class RetrievalBenchmark(_Contract):
    """A benchmark scored on rankings. jobs.flow.ranked runs the flow:

    1. one index per domain in `domains`, over the passages of `corpus` (how deep, how exact: search_settings);
    2. the query rows of each domain (`queries`); a row whose `query` is None is first asked of the `rewriter`
       model (`rewrite_request`) and filled in from its answer (`rewritten`);
    3. the retriever ranks every query; per strategy in `strategies`, one `run_row` per query makes the run,
       `score` scores it against the qrels of every domain, and `prediction_rows` gives the item rows.
    `ragjudge aggregate` scores a stored run with `aggregate_files`, the same numbers as `score`.
    """

    kinds: ClassVar[tuple[str, ...]] = ("retriever",)

    @abstractmethod
    def domains(self, options: Any) -> list[str]:
        """The corpora (one index each) this run covers, each named once."""

    @abstractmethod
    def strategies(self, options: Any) -> list[str]:
        """The query strategies this run covers, each named once: one run and one metrics block each."""

    @abstractmethod
    def search_settings(self, options: Any) -> SearchSettings:
        """Ranking depth and when a dense index is approximate."""

    @abstractmethod
    def corpus(self, data: Sequence[str], domain: str) -> tuple[str, dict[str, dict[str, str]], list[str]]:
        """(corpus file, {passage id: {title, text}}, problems) of one domain; its bytes key the index."""

    @abstractmethod
    def qrels(self, data: Sequence[str], domain: str) -> tuple[dict[str, dict[str, int]], list[str]]:
        """({query id: {passage id: grade}}, problems) of one domain."""

    @abstractmethod
    def queries(self, data: Sequence[str], domain: str, options: Any, limit: int | None = None
                ) -> tuple[list[Query], list[str]]:
        """(query rows, problems): one row per (task, strategy) of a domain with item_id, task_id, domain,
        strategy and query (None: the rewriter writes it); `limit` keeps the first N tasks."""

    def rewriter(self, options: Any) -> Any:
        """The generative model (a conf/models name or a model mapping) that writes the queries left None;
        None: no query is left None."""
        return None

    def rewrite_request(self, query: Query, options: Any) -> dict[str, Any]:
        """`messages` and `max_tokens` of the request that asks the rewriter for one row's query."""
        raise NotImplementedError(f"{type(self).__name__} leaves queries to a rewriter but asks it nothing")

    def rewritten(self, query: Query, text: str | None) -> tuple[Query, bool]:
        """The row as the retriever takes it, its query read from the rewriter's answer (None: no answer), and
        whether that answer was unusable (a fallback query stands in)."""
        raise NotImplementedError(f"{type(self).__name__} leaves queries to a rewriter but reads no answer")

    @abstractmethod
    def run_row(self, query: Query, ranking: Iterable[tuple[str, float]],
                passages: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        """One line of a strategy's run file: a query's ranking ((passage id, score), best first) in the
        benchmark's own run format."""

    @abstractmethod
    def score(self, run: list[dict[str, Any]], qrels: Mapping[str, Mapping[str, int]]
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(per-query scores, metrics) of one strategy's run; the metrics count the queries scored in `n`."""

    @abstractmethod
    def prediction_rows(self, per_query: Iterable[Mapping[str, Any]], rankings: Mapping[str, Mapping[str, Any]],
                        strategy: str) -> list[Row]:
        """One prediction row per query of a strategy; `rankings` maps a task id to its ranked query row
        (query, document_ids, scores)."""

    @abstractmethod
    def aggregate_files(self, predictions: str, qrels: Sequence[str], out: str | None = None
                        ) -> dict[str, Any]:
        """`ragjudge aggregate`: metrics of a run file against qrels files (with `problems`: its unusable
        lines); with `out`, also written there as the flow writes them."""


# config `module:` -> the benchmark's class, filled by `register` as each package's `benchmark` module is imported.
BENCHMARKS: dict[str, type] = {}
DEFINED_IN = "benchmark"  # the module of a benchmark package that defines (and registers) its class
_loaded: dict[type, Benchmark | RetrievalBenchmark] = {}  # by class, so a changed registration reloads


class UnknownBenchmark(LookupError):
    """A config names a benchmark module the registry does not know, or one that breaks the contract."""


def register(name: str) -> Any:
    """Class decorator: the benchmark a config's `module: name` means. Checked against the contract when it is
    first asked for (`benchmark`), so one broken benchmark does not stop the others from loading."""
    def add(cls: type) -> type:
        if BENCHMARKS.get(name, cls) is not cls:
            first = BENCHMARKS[name]
            raise UnknownBenchmark(f"benchmark module '{name}' is registered twice: {first.__module__}."
                                   f"{first.__qualname__} and {cls.__module__}.{cls.__qualname__}")
        BENCHMARKS[name] = cls
        return cls
    return add


@cache
def _discover() -> None:
    """Import every `benchmark` module under benchmarks/ (each registers its class): a benchmark is found where
    it is defined, as engines and storage backends are, with no table to edit."""
    for found in pkgutil.walk_packages([str(Path(__file__).parent)], "benchmarks."):
        if found.name.rpartition(".")[2] == DEFINED_IN:
            importlib.import_module(found.name)


def benchmark_names() -> list[str]:
    """Every registered benchmark's name, sorted."""
    _discover()
    return sorted(BENCHMARKS)


def benchmark(name: str) -> Benchmark | RetrievalBenchmark:
    """The registered benchmark `name`, made once; a class that misses a required method fails here."""
    if name not in BENCHMARKS:
        _discover()
    if name not in BENCHMARKS:
        raise UnknownBenchmark(f"unknown benchmark module '{name}' (known: {', '.join(sorted(BENCHMARKS))})")
    cls = BENCHMARKS[name]
    if cls in _loaded:
        return _loaded[cls]
    if not inspect.isclass(cls) or not issubclass(cls, (Benchmark, RetrievalBenchmark)):
        raise UnknownBenchmark(f"benchmark module '{name}' ({cls!r}) is not a Benchmark or RetrievalBenchmark")
    declared = ("name", "kinds", "Options", *(("fields",) if issubclass(cls, Benchmark) else ()))
    missing = sorted(cls.__abstractmethods__) + [a for a in declared if not hasattr(cls, a)]
    if missing:
        raise UnknownBenchmark(f"benchmark module '{name}' ({cls.__qualname__}) does not implement the benchmark "
                               f"protocol: missing {', '.join(missing)}")
    _loaded[cls] = cls()
    return _loaded[cls]
