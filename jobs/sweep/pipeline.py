"""A sweep's cells on the Ray cluster (the flow of one cell: docs/ARCHITECTURE.md, jobs.sweep.cell).

A sweep is a grid of (benchmark, model) cells; jobs.sweep.cell runs one, and this module runs them all on the Ray
cluster, model by model (every benchmark of a model, then the next model), several at once where it has room
(jobs.sweep.admission), after checking every model and routed judge before any engine starts. Each model's engine
starts once for the sweep and is released after its last cell (jobs.engines.host). The driver only sees small
answer rows (scores, verdict texts), never model weights or activations.
"""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from benchmarks.hub import HubDataMissing, is_hub, local_path
from benchmarks.options import OptionsError, typed_options
from benchmarks.protocol import benchmark
from jobs.analysis import held_models
from jobs.config import BenchmarkConfig, ModelConfig, SweepConfig, protocol_kind
from jobs.engines.demand import Need, cell_need
from jobs.engines.host import EngineHost, Price, last_starts
from jobs.engines.prefetch import ahead_of_engines
from jobs.engines.preflight import largest_gpu_node, make_built_in_models, model_problems, unmade_problems
from jobs.engines.vllm.process_owner import end_orphans
from jobs.engines.waiting import unplaced_demand
from jobs.engines.weights import weights_record
from jobs.flow import flow_of
from jobs.flow.text_pairs import encoders_used
from jobs.loading import load_model
from jobs.store import Manifest, RunRoot
from jobs.store.answers import AnswerStore
from jobs.store.layout import TABLES, VALIDATE
from jobs.store.unify import unify_table
from jobs.sweep.admission import run_concurrently
from jobs.sweep.cell import Cell, CellOutcome, run_cell
from jobs.sweep.cluster import cluster_address
from jobs.sweep.interrupt import Stop
from jobs.sweep.progress import Progress


def run_sweep(sweep: SweepConfig, log=print, include_held: bool = False,
              before_write: Callable[[], None] | None = None, stop: Stop | None = None,
              retry_errors: bool = False, price: Price | None = None) -> list[CellOutcome]:
    """Every (benchmark, model) cell of the sweep, several at once where the cluster has room (jobs.sweep.admission);
    finished cells with an unchanged hash are skipped, and so are cells whose model kind the benchmark has no
    protocol for (one line names them all) and, unless `include_held`, the cells of models that `ragjudge
    validate` held (the reason printed and kept in manifest.json's `held`); a cell whose benchmark routes
    requests to a held judge fails, naming it. Progress shows each running cell's requests and ETA, and
    ROOT/RUN/status.json follows it. Outcomes come back in the sweep's order. `before_write` fences every
    write of the run (the driver's lease: jobs.store.lease). Once `stop` is set (SIGTERM, SIGINT: jobs.sweep.interrupt) no
    cell starts, and the running ones store what they have answered and end `interrupted`. `retry_errors` asks
    stored requests that failed retryably again, reopening finished cells that have them (jobs.sweep.cell).
    `price` gives each API model's entry in manifest.json's `engines` its dollars (jobs.engines.host)."""
    stop = stop or Stop()
    root = RunRoot.of(sweep.storage, before_write=before_write)
    manifest = Manifest(root, sweep)
    progress = Progress(root, _one_line_at_a_time(log), ticking=True, unplaced=unplaced_demand)
    log = progress.message
    held = {} if include_held else {name: reason for name, reason in held_models(root.read_json(VALIDATE)).items()
                                    if name in sweep.models}
    manifest.set_held(held)
    for name, reason in held.items():
        log(f"held {name} (ragjudge validate: {reason}); its cells are skipped, --include-held runs them")
    for line in end_orphans():  # an earlier run's engine processes on this machine, their actors gone
        log(line)
    gpus = largest_gpu_node()
    benchmarks, bench_problems = local_data(sweep, manifest)
    judges: dict[str, dict[str, ModelConfig]] = {}
    routing: dict[str, list[str]] = {}
    for name, bench in benchmarks.items():
        judges[name], routing[name] = route_models(bench, sweep)
    # Built-in models are made here, once and one at a time, before any cell's thread could ask for them.
    encoders = {name: encoder_model(bench) for name, bench in benchmarks.items()}
    judged = [judge for found in judges.values() for judge in found.values()]
    failed = make_built_in_models([*sweep.models.values(), *judged], log, also=filter(None, encoders.values()))
    problems = {name: model_problems(model, gpus) + unmade_problems(model, failed)
                for name, model in sweep.models.items()}
    for name in benchmarks:
        bench_problems[name] += routing[name] + [
            p for judge in judges[name].values()
            for p in (problems[judge.name] if judge.name in problems
                      else model_problems(judge, gpus) + unmade_problems(judge, failed))] + [
            f"judge '{judge}' is held by ragjudge validate ({held[judge]}); --include-held runs it"
            for judge in judges[name] if judge in held] + (
            [f"benchmark '{name}': options.bertscore.model: {failed[encoders[name]]}"]
            if encoders[name] in failed else [])
    cells = [(bench, model) for bench in benchmarks.values() for model in sweep.models.values()]
    progress.skipped([f"{b.name}/{m.name}" for b, m in cells if not applies(b, m)],
                     "the benchmark has no protocol for the model's kind")
    progress.skipped([f"{b.name}/{m.name}" for b, m in cells if applies(b, m) and m.name in held],
                     "held by ragjudge validate")

    def runs(pair: tuple[BenchmarkConfig, ModelConfig]) -> bool:
        return applies(*pair) and pair[1].name not in held

    def users(pair: tuple[BenchmarkConfig, ModelConfig]) -> list[ModelConfig]:
        """The models whose engines the cell sends requests to: its own, then its benchmark's judges."""
        return [pair[1], *judges[pair[0].name].values()] if runs(pair) else []

    # Model-major: a model's cells run next to each other, so its engine is up once, for all of them; models
    # longest first (the planner's rule, jobs/plan/placement.py), so the longest engine does not start last.
    served = ([m.name for m in users(pair)] for pair in cells)
    rank = {model.name: i for i, model in enumerate(longest_first(sweep.models.values(), served))}
    order = sorted(range(len(cells)), key=lambda i: rank[cells[i][1].name])
    # Hub weights download in that order while earlier engines run (jobs.engines.prefetch); engines load the
    # snapshot folder only on this machine's own cluster: a named one may place them where the folder is not.
    starting = [m for i in order for m in users(cells[i]) if not problems.get(m.name)]
    engines = EngineHost(log, weights=ahead_of_engines(starting, log, localize=cluster_address(sweep) is None),
                         last_starts=last_starts(manifest.data.get("engines") or []), price=price,
                         start_s=sweep.cluster.engine_start_s)
    def record_engines() -> None:
        """Past the grace period of a stop the process exits without reaching `finally` below: the engines'
        starts and nodes are still recorded. Not once they are closed: the closed host accounts for none, and
        `finally` has written them."""
        if entries := engines.accounting():
            manifest.set_engines(entries)

    stop.at_give_up(record_engines)
    answer_store = AnswerStore(root, log) if sweep.storage.answer_cache else None
    for pair in cells:
        engines.expect(users(pair))

    def run(pair: tuple[BenchmarkConfig, ModelConfig]) -> CellOutcome:
        bench, model = pair
        if not applies(bench, model):
            kinds = ", ".join(benchmark(bench.module).kinds)
            return CellOutcome(bench.name, model.name, "skipped", None, 0.0,
                               f": {bench.name} has no protocol for {model.kind} models ({kinds})")
        if model.name in held:
            return CellOutcome(bench.name, model.name, "skipped", None, 0.0,
                               f": held by ragjudge validate ({held[model.name]})")
        if stop.is_set():  # admitted after the signal: left for the rerun, its manifest entry as it was
            return CellOutcome(bench.name, model.name, "interrupted", None, 0.0, f": {stop.signal_name}: not started")
        cell = Cell(root, manifest, bench, model, sweep.storage.flush_every, log, judges[bench.name], progress,
                    engines, stop, answer_store, retry_errors=retry_errors, flush_s=sweep.storage.flush_s)
        outcome = run_cell(cell, problems=bench_problems[bench.name] + problems[model.name])
        engines.finished(users(pair))
        log(f"[{outcome.status}] {bench.name} x {model.name} ({outcome.seconds:.1f}s){outcome.message}")
        return outcome

    def demand(pair: tuple[BenchmarkConfig, ModelConfig]) -> Need:
        models = users(pair)
        return cell_need(models) if models else Need(stage={"CPU": 0.0, "GPU": 0.0})  # a skipped cell: nothing

    encoders_used(reset=True)  # an earlier sweep's in this process are not this one's
    try:
        outcomes = run_concurrently([cells[i] for i in order], demand, run, _cluster_capacity,
                                    sweep.max_concurrent_cells)
        if not stop.is_set():  # a stopped run's tables are made one when a later run of it ends
            for table in TABLES:
                if why := unify_table(root, table):
                    log(f"WARNING {why}; pandas and pyarrow read that folder's columns from its first part, "
                        "DuckDB's read_parquet(..., union_by_name = true) reads every part's")
        return [outcome for _, outcome in sorted(zip(order, outcomes), key=lambda pair: pair[0])]
    finally:
        if engines.weights is not None:
            engines.weights.close()
        manifest.set_engines(engines.close())
        stop.give_up_hooks.remove(record_engines)
        manifest.set_weights({m.name: weights_record(m) for m in [*sweep.models.values(), *judged]})
        if used := encoders_used():  # none where no encoder stage ran: the latest that ran one stays
            manifest.set_encoders(used)
        progress.close()


def local_data(sweep: SweepConfig, manifest: Manifest
               ) -> tuple[dict[str, BenchmarkConfig], dict[str, list[str]]]:
    """Each benchmark with its hf:// data paths replaced by their copies in the Hugging Face cache (fetched
    first when online: benchmarks.hub), and per benchmark the problems that fail its cells (a dataset that
    cannot be had). manifest.json records the copy each URL was read from; its snapshot folder names the
    commit."""
    benchmarks, problems, sources = {}, {}, {}
    for name, bench in sweep.benchmarks.items():
        try:
            data = [local_path(path) for path in bench.data]
        except HubDataMissing as e:
            benchmarks[name], problems[name] = bench, [str(e)]
            continue
        sources.update((url, copy) for url, copy in zip(bench.data, data) if is_hub(url))
        benchmarks[name], problems[name] = replace(bench, data=data), []
    if sources:
        manifest.set_data_sources(sources)
    return benchmarks, problems


def encoder_model(bench: BenchmarkConfig) -> str | None:
    """The model of the benchmark's encoder stage (BERTScore), or None when it has none."""
    flow = flow_of(bench.module)
    try:
        encoder = flow.encoder(typed_options(flow.spec.Options, bench.options))
    except OptionsError:  # the benchmark's cells fail with it, naming the key
        return None
    return encoder["model"] if encoder else None


def longest_first(models: Iterable[ModelConfig], users: Iterable[list[str]]) -> list[ModelConfig]:
    """Models by the work their engines will do, most first, without reading data or tokenizers: how many
    cells send each one requests (its own and those it judges), then its size; ties keep the sweep's order."""
    load = Counter(name for names in users for name in set(names))
    return sorted(models, key=lambda m: (-load[m.name], -(m.params_b or 0.0)))


def _one_line_at_a_time(log: Callable[[str], None]) -> Callable[[str], None]:
    """Cells log from their own threads; a lock keeps their lines whole."""
    lock = threading.Lock()

    def locked(message: str) -> None:
        with lock:
            log(message)

    return locked


def applies(bench: BenchmarkConfig, model: ModelConfig) -> bool:
    """Whether the benchmark has a protocol for the model's kind (a retriever is no judge, a judge no scorer)."""
    return protocol_kind(model) in benchmark(bench.module).kinds


def route_models(bench: BenchmarkConfig, sweep: SweepConfig) -> tuple[dict[str, ModelConfig], list[str]]:
    """The judges a benchmark routes requests to (its routes()), each a model of the sweep or else a model
    file of the sweep's conf folders, and the problems of those that cannot judge (unknown, or not a
    generative judge)."""
    flow = flow_of(bench.module)
    names = flow.routes(typed_options(flow.spec.Options, bench.options))
    found, problems = {}, []
    for name in names:
        judge = sweep.models.get(name) or _registered(name, sweep)
        if judge is None:
            problems.append(f"benchmark '{bench.name}': judge '{name}' is neither a model of the sweep nor a "
                            f"conf/models entry")
        elif protocol_kind(judge) != "generative":
            problems.append(f"benchmark '{bench.name}': judge '{name}' is a {judge.kind} model, not a generative "
                            "judge")
        else:
            found[name] = judge
    return found, problems


def _registered(name: str, sweep: SweepConfig) -> ModelConfig | None:
    folders = [Path(d) for d in sweep.conf]
    if not any((d / "models" / f"{name}.yaml").exists() for d in folders):
        return None
    return load_model(name, f"judge '{name}'", folders)


def _cluster_capacity() -> dict[str, float]:
    import ray

    total = ray.cluster_resources()
    return {"CPU": float(total.get("CPU", 0.0)), "GPU": float(total.get("GPU", 0.0))}


