"""The two ways a cell flows from a benchmark's data to its metrics, behind one interface, and `flow_of`, the
one place that tells them apart by the benchmark's class.

`JudgedFlow`: items expanded into requests, answered in rounds (jobs.flow.rounds), combined into item rows,
scored by the encoder stage where the benchmark has one, stored and reduced to metrics. `RankedFlow`: corpora
indexed, queries searched, rankings scored against qrels (jobs.flow.ranked).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from benchmarks.options import typed_options
from benchmarks.protocol import Benchmark, RetrievalBenchmark, benchmark
from jobs.flow.reducers import aggregate
from jobs.config import BenchmarkConfig, ModelConfig, protocol_kind
from jobs.engines import PreflightError, engine_of, retryable
from jobs.flow.error_budget import request_errors
from jobs.flow.ranked import evaluate_retrieval
from jobs.flow.recorder import CellRecorder
from jobs.flow.rounds import Answerer, RoundsProgress, UnknownJudges, answer_rounds
from jobs.flow.text_pairs import encoder_settings, with_text_pair_scores
from jobs.flow.walk import item_rows, read_items
from jobs.store.answers import AnswerStore


@dataclass(frozen=True)
class CellJob:
    """What a cell's flow is handed: what it scores, who answers, where it records, what it says."""

    bench: BenchmarkConfig
    model: ModelConfig
    answerer: Answerer
    recorder: CellRecorder
    log: Callable[[str], None] = print
    answer_store: AnswerStore | None = None  # a ranked cell's query rewrites go through it too
    retry_errors: bool = False
    progress: RoundsProgress | None = None

    def say(self, line: str) -> None:
        self.log(f"{self.bench.name} x {self.model.name}: {line}")


class Flow(ABC):
    judged: ClassVar[bool]  # item by item: planned in tokens, validated, shown in the item viewer

    @abstractmethod
    def evaluate(self, job: CellJob) -> tuple[dict[str, Any], dict[str, int]]:
        """The cell's metrics, its rows recorded on the way, and how many rows each table got."""

    def routes(self, options: Any) -> list[str]:
        """Models other than the cell's own that its requests are routed to."""
        return []

    def encoder(self, options: Any) -> dict[str, Any] | None:
        """The settings of its encoder stage (BERTScore), None for none."""
        return None

    def validates(self) -> bool:
        """Whether it has items to validate a model's scoring paths on (`ragjudge validate`)."""
        return False


@dataclass(frozen=True)
class JudgedFlow(Flow):
    spec: Benchmark
    judged: ClassVar[bool] = True

    def evaluate(self, job: CellJob) -> tuple[dict[str, Any], dict[str, int]]:
        spec, bench, model = self.spec, job.bench, job.model
        options = typed_options(spec.Options, bench.options)
        items = list(read_items(spec, bench.data, bench.limit))
        good = [item for item in items if not item.get("error")]
        if problems := spec.check_items(good, options):  # e.g. a (task, language) without a prompt
            raise PreflightError(f"benchmark '{bench.name}': " + "; ".join(problems))
        encoder = encoder_settings(spec, options, bench.name)
        kind = protocol_kind(model)
        try:
            answered = answer_rounds(spec, options, kind, good, job.answerer, job.recorder,
                                     retry_errors=job.retry_errors, say=job.say, progress=job.progress)
        except UnknownJudges as e:
            raise PreflightError(f"benchmark '{bench.name}': {e}") from None
        # An engine that cannot prefill (an HTTP API) has its verdict read from the text.
        verdict = (model.verdict if engine_of(model).prefills else "text") if kind == "generative" else None
        rows = item_rows(spec, good, answered, kind, options, verdict)
        if encoder is not None:
            rows = with_text_pair_scores(spec, good, rows, options, encoder, job.log)
        for row in rows:
            row["model"] = model.name
        bad = [{**item, "model": model.name, "correct": None, "retryable": False}
               for item in items if item.get("error")]
        bad += [{"item_id": r["item_id"], "benchmark": bench.name, "model": model.name, "subset": r["subset"],
                 "error": r["error"], "retryable": retryable(r["error"])} for r in rows if r.get("error")]
        stored = job.recorder.record_rows(rows, bad)
        metrics = aggregate(spec, rows, resamples=bench.bootstrap_resamples)
        metrics.update(model=model.name, kind=model.kind, note=model.note, n_bad_rows=len(items) - len(good),
                       config=bench.name, request_errors=request_errors(answered))
        return metrics, stored

    def routes(self, options: Any) -> list[str]:
        return self.spec.routes(options)

    def encoder(self, options: Any) -> dict[str, Any] | None:
        return self.spec.text_pair_encoder(options)

    def validates(self) -> bool:
        return self.spec.validation_items([], 0) is not None  # None, whatever the items: it has none


@dataclass(frozen=True)
class RankedFlow(Flow):
    spec: RetrievalBenchmark
    judged: ClassVar[bool] = False

    def evaluate(self, job: CellJob) -> tuple[dict[str, Any], dict[str, int]]:
        return evaluate_retrieval(job.recorder.root, job.bench, job.model, job.log, job.answer_store)


def flow_of(module: str) -> JudgedFlow | RankedFlow:
    """The flow of a registered benchmark module."""
    spec = benchmark(module)
    return RankedFlow(spec) if isinstance(spec, RetrievalBenchmark) else JudgedFlow(spec)
