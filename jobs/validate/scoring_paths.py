"""`ragjudge validate SWEEP`: before a long sweep, does each local model score the same on every path it could
be scored on? RewardBench's scores moved with the batch size through padding (reward-bench #137); a model
whose verdicts move with how it is batched, or with the engine, is held back from `ragjudge run`.

Each scoring model of the sweep scores the first N validation items (the protocol's `validation_items`) of each
benchmark of the sweep that has them, from the sweep's own data (a benchmark's bundled `validation_sample` when
no benchmark of the sweep has any), on three paths: its engine one request at a time, its engine at the
configured batch size, and a reference: the transformers engine one sequence at a time for a vLLM model, or
the same model in padded batches of the configured size for a transformers model
(jobs.engines.transformers.padded_batch: our transformers engine never pads, so this is where padding bugs
show). Verdicts and scores, as each benchmark reads them off its rows (`validation_verdict`), are compared by
jobs.analysis.agreement; validate.json (beside manifest.json) and a table hold the result, with the hashes of
the chat template and tokenizer, the EOS token and the padding side, so two machines' runs can be told apart,
and the tokenizer's pad id beside the config's: a classifier whose two differ is held
(jobs.analysis.agreement.pad_problem).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from actors.templating import templater
from actors.worker_model import WorkerModel
from benchmarks.boundary_types import JsonObject
from benchmarks.hub import local_path
from benchmarks.options import typed_options
from benchmarks.protocol import Benchmark, benchmark_names
from benchmarks.row_types import Answer, Item, Request, Row
from jobs.analysis.agreement import (
    Thresholds,
    compare,
    pad_problem,
    truncation_rate,
    verdict,
    verdict_rows,
)
from jobs.config import KINDS, ConfigError, ModelConfig, SweepConfig, protocol_kind
from jobs.engines.answering import answer_requests
from jobs.engines.base import engine_of, worker_model
from jobs.engines.host import EngineHost
from jobs.engines.preflight import largest_gpu_node, make_built_in_models, model_problems, unmade_problems
from jobs.engines.transformers.scorers import RequestScorer
from jobs.flow import JudgedFlow, first_requests, flow_of, item_rows, read_items
from jobs.store import RunRoot
from jobs.store.layout import VALIDATE
from jobs.sweep import connect_ray

SCORED = ("discriminative", "implicit", "generative")  # kinds with a verdict on a pair
Log = Callable[[str], None]


@dataclass(frozen=True)
class Sample:
    """One benchmark's validation items, the files they were read from and the options its requests take."""

    spec: Benchmark
    options: Any
    items: list[Item]
    paths: list[str]
    skipped: int  # bad rows passed over on the way to the items


def validation_benchmarks(sweep: SweepConfig) -> list[str]:
    """The benchmark modules validation scores models on: the sweep's with validation items, in sweep order,
    else every registered one with a bundled validation sample."""
    own = [module for module in dict.fromkeys(b.module for b in sweep.benchmarks.values())
           if flow_of(module).validates()]
    return own or [name for name in benchmark_names()
                   if isinstance(flow := flow_of(name), JudgedFlow) and flow.validates() and flow.spec.validation_sample()]


def _judged(module: str) -> Benchmark:
    flow = flow_of(module)
    assert isinstance(flow, JudgedFlow), f"{module} has no validation items"  # validation_benchmarks chose it
    return flow.spec


def validation_samples(sweep: SweepConfig, n: int) -> list[Sample]:
    """Per validation benchmark, its first `n` validation items from the sweep's data in file order (its
    bundled sample when the sweep has none of its data), and that benchmark's options (the first of its
    configs')."""
    if n < 1:
        raise ConfigError(f"--pairs must be at least 1, not {n}")
    samples = []
    for module in validation_benchmarks(sweep):
        spec = _judged(module)
        benches = [b for b in sweep.benchmarks.values() if b.module == module]
        options = typed_options(spec.Options, benches[0].options) if benches else spec.Options()
        sources = [(local_path(path), bench.columns) for bench in benches for path in bench.data] or [
            (sample, {}) for sample in [spec.validation_sample()] if sample]
        paths = [path for path, _ in sources]
        items: list[Item] = []
        skipped = 0
        for path, columns in sources:
            if len(items) == n:
                break
            found, bad = spec.validation_items(read_items(spec, [path], columns=columns), n - len(items))
            items, skipped = items + found, skipped + bad
        if not items:
            raise ConfigError(f"no well-formed {spec.name} item to validate on in {', '.join(paths) or 'no data'}"
                              + (f" ({skipped} bad rows skipped)" if skipped else ""))
        samples.append(Sample(spec, options, items, paths, skipped))
    if not samples:
        raise ConfigError("no benchmark of the sweep has items to validate a model on, and none has a bundled "
                          "sample")
    return samples


def sample_rows(sample: Sample, answers: list[Answer], kind: str) -> list[Row]:
    """One path's verdict rows (jobs.analysis.agreement.verdict_rows) for a sample's items: their benchmark
    combines each item's answers, reading a judge's verdict from log-probs, and reads its verdict and scores."""
    spec = sample.spec
    rows = item_rows(spec, sample.items, answers, kind, sample.options, verdict="logprob")
    return verdict_rows(rows, lambda row: spec.validation_verdict(row, kind), spec.row_key)


def skip_reason(model: ModelConfig, gpus: float) -> str | None:
    """Why a model of the sweep is not validated: it has no verdict on a pair, no local weights, or a problem
    that fails its cells anyway (preflight)."""
    if unvalidated := engine_of(model).unvalidated:
        return unvalidated
    if model.kind not in SCORED:
        return f"a {model.kind} model has no verdict on a pair"
    if problems := model_problems(model, gpus):
        return "; ".join(problems)
    return None


def tokenizer_facts(model: ModelConfig) -> JsonObject:
    """What decides the tokens a model sees: sha256 of its chat template (the model file's, else the
    tokenizer's) and of its tokenizer (its tokenizer.json serialisation, else its vocabulary), its EOS and pad
    tokens and padding side."""
    source = model.tokenizer or worker_model(model).path
    tokenizer = templater(source, model.chat_template, None if model.tokenizer else model.revision,
                          model.trust_remote_code).tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else json.dumps(tokenizer.get_vocab(), sort_keys=True)
    template = tokenizer.chat_template
    template = template if isinstance(template, str) else json.dumps(template, sort_keys=True)
    return {"chat_template_sha256": _sha256(template), "tokenizer_sha256": _sha256(text),
            "eos_token": tokenizer.eos_token, "pad_token": tokenizer.pad_token, "padding_side": tokenizer.padding_side,
            "pad_token_id": tokenizer.pad_token_id, "config_pad_token_id": config_pad_id(model)}


def config_pad_id(model: ModelConfig) -> int | None:
    """The pad id in the model's own config, which a sequence classifier pools by (the last token that is not
    it); None when the config sets none."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(worker_model(model).path, revision=model.revision,
                                        trust_remote_code=model.trust_remote_code)
    pad = getattr(config, "pad_token_id", None)
    return pad if isinstance(pad, int) else None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reference_answers(model: ModelConfig, requests: list[Request], padded: int | None) -> list[Answer]:
    """The reference path's answers, in a Ray task holding the model's CPUs and GPUs (the driver may have none)."""
    import ray

    def score(worker: WorkerModel, padded_batch: int | None) -> list[Answer]:
        keys = list(dict.fromkeys(key for request in requests for key in request))
        columns = RequestScorer(worker, padded_batch)({key: [r.get(key) for r in requests] for key in keys})
        return [{key: values[i] for key, values in columns.items()} for i in range(len(requests))]

    task = ray.remote(num_cpus=model.num_cpus, num_gpus=model.num_gpus)(score)
    return ray.get(task.remote(worker_model(model), padded))


def score_paths(model: ModelConfig, requests: list[Request], host: EngineHost, log: Log
                ) -> tuple[dict[str, list[Answer]], str | None]:
    """Each path's answers, and why the reference path did not run (None when it ran). A shared judge is
    validated on an engine of its own, with the deployment's settings."""
    local = replace(model, serve=replace(model.serve, shared=False))
    one = replace(local, batch_size=1)
    paths = {"engine, batch 1": [row for request in requests for row in answer_requests([request], one, log, host)],
             f"engine, batch {model.batch_size}": list(answer_requests(requests, local, log, host))}
    host.release(local)  # its CPUs or GPUs, for the reference path
    reference = engine_of(model).reference_path(model)
    if isinstance(reference, str):
        return paths, reference
    name, padded = reference
    try:
        paths[name] = reference_answers(model, requests, padded)
    except Exception as e:  # noqa: BLE001 - the engine paths still compare; the report says why this did not
        cause = getattr(e, "cause", None) or e  # a Ray task's error wraps the one raised in it
        return paths, f"{type(cause).__name__}: {cause}"
    return paths, None


def validate_model(model: ModelConfig, samples: list[Sample], thresholds: Thresholds, host: EngineHost, log: Log
                   ) -> JsonObject:
    """One model's entry of validate.json, from the samples of the benchmarks with a protocol for its kind."""
    kind = protocol_kind(model)  # as its cells expand and combine
    samples = [sample for sample in samples if kind in sample.spec.kinds]
    # The verdict is read from log-probs: one generated token is enough, and much faster than a text verdict.
    requests = [{**r, "max_tokens": 1} if KINDS[kind].generates else r
                for s in samples for r in first_requests(s.spec, s.items, kind, s.options)]
    entry: JsonObject = {"kind": model.kind, "engine": model.engine, "batch_size": model.batch_size,
                             "tokenizer": tokenizer_facts(model)}
    start = time.perf_counter()
    try:
        answers, reference_problem = score_paths(model, requests, host, log)
    except Exception as e:  # noqa: BLE001 - a model whose engine fails is held, with the reason
        return {**entry, "status": "held", "reason": f"engine failed: {type(e).__name__}: {e}"}
    rows = {path: [row for sample in samples for row in sample_rows(sample, path_answers, kind)]
            for path, path_answers in answers.items()}
    names = list(rows)
    comparisons = {f"{names[0]} vs {names[1]}": compare(rows[names[0]], rows[names[1]])}
    if len(names) > 2:
        comparisons[f"{names[1]} vs {names[2]}"] = compare(rows[names[1]], rows[names[2]])
    status, reason = verdict(comparisons, thresholds)
    if pad := pad_problem(entry["tokenizer"], model.kind):
        status, reason = "held", "; ".join(filter(None, [reason, pad]))
    if reference_problem:
        reason = "; ".join(filter(None, [reason, f"no reference path ({reference_problem})"]))
    return {**entry, "status": status, "reason": reason, "paths": names, "comparisons": comparisons,
            "truncation_rate": truncation_rate(rows[names[1]]), "seconds": round(time.perf_counter() - start, 1)}


def validate_sweep(sweep: SweepConfig, pairs: int = 32, thresholds: Thresholds | None = None,
                   only: list[str] | None = None, log: Log = print) -> JsonObject:
    """Every model of the sweep (or those named in `only`) validated, one engine at a time, on the sweep's Ray
    cluster (joined or started as `ragjudge run` does); the report is written to the run folder's
    validate.json and returned."""
    unknown = sorted(set(only or ()) - set(sweep.models))
    if unknown:
        raise ConfigError(f"--models: {', '.join(unknown)} not in the sweep ({', '.join(sweep.models)})")
    thresholds = thresholds or Thresholds()
    samples = validation_samples(sweep, pairs)
    count, paths = sum(len(s.items) for s in samples), [path for s in samples for path in s.paths]
    for s in samples:
        log(f"validate: {len(s.items)} {s.spec.name} items of {', '.join(s.paths)}"
            + (f" ({s.skipped} bad rows skipped)" if s.skipped else ""))
    connect_ray(sweep)
    chosen = [model for name, model in sweep.models.items() if not only or name in only]
    failed = make_built_in_models(chosen, log)
    gpus, host = largest_gpu_node(), EngineHost(log)
    models: JsonObject = {}
    try:
        for name, model in sweep.models.items():
            if only and name not in only:
                continue
            if reason := "; ".join(unmade_problems(model, failed)) or skip_reason(model, gpus):
                models[name] = {"kind": model.kind, "engine": model.engine, "status": "skipped", "reason": reason}
                continue
            reference = engine_of(model).reference_path(model)
            log(f"validate {name}: {count} pairs on its engine (batch 1, batch {model.batch_size}) and on "
                f"{reference[0] if isinstance(reference, tuple) else 'no reference path'}")
            models[name] = validate_model(model, samples, thresholds, host, log)
            log(f"validate {name}: {models[name]['status']}" + (f" ({models[name]['reason']})"
                                                                 if models[name]["reason"] else ""))
    finally:
        host.close()
    report = {"sweep": sweep.name, "pairs": count, "data": paths,
              "thresholds": {"min_agreement": thresholds.min_agreement, "max_score_diff": thresholds.max_score_diff},
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "models": models}
    root = RunRoot.of(sweep.storage)
    previous = (root.read_json(VALIDATE) or {}).get("models", {}) if only else {}
    root.write_json(VALIDATE, {**report, "models": {**previous, **models}})
    return report
