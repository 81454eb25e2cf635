"""`ragjudge plan`: what a sweep will cost before it runs: requests, tokens, FLOPs, GPU-hours and a schedule.

Forward-pass FLOPs are 2 x parameters x tokens (the usual dense-transformer estimate; attention's share is
ignored, which undercounts long prompts by a few percent at these lengths). A cell's GPU-hours divide its
FLOPs by the GPU's peak rate times an efficiency factor (measured on an H100, by model kind and size).
Engines start once per model (model-major execution): each pays one start (a fixed time, plus vLLM's
compilation unless the model file sets vllm.enforce_eager, plus bf16 weights at a load rate) on every GPU of its
tensor-parallel group and then answers all of its model's cells; jobs.plan.placement places these engines on
nodes and gives the makespan. The defaults and why are in docs/plan_rag_rewardbench_45.md. Tokens are
counted with the model's tokenizer when it is on this machine, else estimated from characters
(`chars_per_token`). hf:// data is counted when it is in the Hugging Face cache (never fetched for a plan).
Without the data, a benchmark's `plan_sample` gives the lengths, else its own
`plan_items` (e.g. synthetic items with the paper's sizes and lengths).
"""
from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, field

from actors.built_in_models import resolve_model
from actors.templating import templater
from benchmarks.hub import HubDataMissing, local_path
from benchmarks.options import typed_options
from benchmarks.protocol import Benchmark, benchmark
from benchmarks.row_types import Item
from jobs.config import KINDS, BenchmarkConfig, ModelConfig, SweepConfig, protocol_kind
from jobs.engines.base import engine_of, engines
from jobs.engines.host import engine_name
from jobs.flow import JudgedFlow, first_requests, flow_of, read_items
from jobs.flow.judged_cell import reads_logprobs_after_trace
from jobs.plan.placement import EngineJob, Schedule, schedule
from jobs.plan.prices import PriceTable, api_cost_lines, load_prices
from jobs.sweep.pipeline import applies

# MEASURED on one H100 (docs/measurements.md, "The 45-RM plan for one node of 8 H100s, redone with what could
# be measured", with its command and machine): the share of the GPU's bf16 peak that a prefill reaches, counted
# as this plan counts (2 x params x tokens), with PyTorch's own kernels (vLLM could not be installed there) on
# decoder layers of each size, batches of Table 4's mean prompt length. By kind (an implicit RM adds the
# vocabulary's log-softmax) and size (params_b), interpolated on log(size) between the sizes measured and flat
# beyond them. Generative judges take the discriminative curve: their prompts are prefill, their 17 tokens a
# request were not measured.
MEASURED_EFFICIENCY = {"discriminative": ((1.78, 0.553), (8.03, 0.617), (70.55, 0.633)),
                       "implicit": ((1.78, 0.426), (8.03, 0.564), (70.55, 0.622))}


def measured_efficiency(kind: str, params_b: float) -> float:
    """MEASURED_EFFICIENCY for a model of this kind and size."""
    points = MEASURED_EFFICIENCY["implicit" if KINDS[kind].reads_logprobs else "discriminative"]
    if params_b <= points[0][0]:
        return points[0][1]
    for (small, low), (large, high) in itertools.pairwise(points):
        if params_b <= large:
            return low + (high - low) * math.log(params_b / small) / math.log(large / small)
    return points[-1][1]


@dataclass
class GpuSpec:
    name: str = "H100-SXM"
    peak_tflops: float = 989.0  # dense bf16
    efficiency: float | None = None  # share of peak reached; None: measured_efficiency, by model kind and size
    count: int = 8
    chars_per_token: float = 4.0
    # ASSUMED, not measured here (the H100 machine had no vLLM): an engine's start besides loading weights,
    # from vLLM's own start logs (docs/plan_rag_rewardbench_45.md); an engine's cpu_start_s is what was measured on CPU.
    start_s: float = 50.0  # process, imports, memory profiling, KV-cache allocation: every GPU engine
    compile_s: float = 40.0  # torch.compile and CUDA graph capture: vLLM engines without vllm.enforce_eager only
    # MEASURED on the same H100 machine: a file read from its local disk with the page cache dropped, since
    # host to GPU copies ran far faster, so the disk is the bound (docs/measurements.md, "The 45-RM plan for
    # one node of 8 H100s, redone with what could be measured"); a node's NVMe or an object store reads at its own rate
    # (--load-gb-per-s).
    load_gb_per_s: float = 1.38  # weights read from disk or object storage
    download_mb_per_s: float = 100.0  # weights fetched from the Hugging Face Hub into its cache (jobs.plan.downloads)
    node_gpus: int = 8  # GPUs per node; a tensor-parallel group stays on one node


@dataclass
class CellPlan:
    benchmark: str
    model: str
    kind: str
    requests: int
    prompt_tokens: int
    output_tokens: int
    flops: float
    gpu_hours: float  # compute only: engine starts are the engines' (engine_jobs)
    tokens_from: str  # "tokenizer" or "chars/N"
    items_from: str  # where the item count came from
    problem: str | None = None  # why this cell cannot be planned (it would fail the same way at run time)
    gpus: int = 1  # the model's tensor-parallel group
    start_s: float = 0.0  # one start of the model's engine (0: no GPU engine: an API judge, or no params_b)
    reference: str | None = None  # an implicit RM's reference model: a second engine, half of the compute
    cpu_engine: str | None = None  # the host's engine of a model file that asks for no GPU: it starts on CPU
    cpu_start_s: float = 0.0  # one start of that engine (its Engine.cpu_start_s)
    path: str = ""  # the model's path: an API judge's row in the price table (jobs.plan.prices)
    batch: bool = False  # its engine submits batches, at the batch price
    remote: bool = False  # its engine is a hosted API: priced in dollars, not GPU-hours


def _local_templater(model: ModelConfig):
    """The model's own templating if its files are on this machine (no downloads while planning)."""
    local = resolve_model(model.path)
    return templater(local, model.chat_template, model.revision) if os.path.isdir(local) else None


Items = tuple[list[Item], float, str]  # items to count, the factor to the benchmark's size, whence


def _items(bench: BenchmarkConfig, spec: Benchmark) -> Items:
    """The items to count: the data; else `plan_sample` scaled to `size`; else the benchmark's own
    `plan_items` (scaled to `size` when that differs)."""
    try:  # hf:// data counts when it is in the Hugging Face cache: a plan never downloads
        data = [local_path(p, fetch=False) for p in bench.data]
    except HubDataMissing:
        data = []
    if data and all(os.path.exists(p) for p in data):
        loaded = list(read_items(spec, data, bench.limit, bench.columns))
        items = [i for i in loaded if not i.get("error")]
        unread = unreadable(loaded)
        if not items:
            raise ValueError(f"benchmarks.{bench.name}.data: no readable item in {', '.join(data)}"
                             + (f" ({'; '.join(unread)})" if unread else " (no rows)"))
        return items, 1.0, (f"{bench.name}: {len(items)} items from the data"
                            + (f", leaving out {'; '.join(unread)}" if unread else ""))
    absent = f"{bench.name}: data not on this machine ({', '.join(bench.data)}), "
    shaped = spec.plan_items() if bench.plan_sample is None else None
    if shaped is not None:
        items, what = shaped
        size = bench.size or len(items)
        return items, size / len(items), f"{absent}{size} items (size), lengths from {what}"
    if bench.size is None or bench.plan_sample is None:
        raise ValueError(f"benchmarks.{bench.name}.data: {bench.data} is not on this machine; set `size` and "
                         "`plan_sample` to plan without it")
    items = [i for i in read_items(spec, [bench.plan_sample]) if not i.get("error")]
    if not items:
        raise ValueError(f"benchmarks.{bench.name}.plan_sample: no readable item in {bench.plan_sample}")
    return items, bench.size / len(items), (f"{absent}{bench.size} items (size), lengths from "
                                            f"{len(items)} items of {os.path.basename(bench.plan_sample)}")


def unreadable(items: list[Item]) -> list[str]:
    """Per data file with rows that could not be read: how many, and the first one's problem."""
    by_file: dict[str, list[str]] = {}
    for item in items:
        if item.get("error"):
            by_file.setdefault(str(item.get("source") or "?"), []).append(str(item["error"]))
    return [f"{len(problems)} unreadable row{'s' * (len(problems) > 1)} of {source}, first: {problems[0]}"
            for source, problems in by_file.items()]


def plan_cell(bench: BenchmarkConfig, model: ModelConfig, gpu: GpuSpec,
              items: Items | None = None) -> CellPlan:
    """One cell's work; `items` (from _items) saves loading the same benchmark once per model."""
    spec = benchmark(bench.module)
    options = typed_options(spec.Options, bench.options)
    kind = protocol_kind(model)
    items, scale, items_from = items or _items(bench, spec)
    requests = first_requests(spec, items, kind, options)
    engine = engine_of(model)
    tpl = None if engine.remote else _local_templater(model)
    if tpl is not None:
        ids = tpl.opened if KINDS[kind].generates else tpl.closed
        prompt = sum(len(ids(r["messages"])) for r in requests)
        tokens_from = "tokenizer"
    else:
        chars = sum(len(m["content"]) for r in requests for m in r["messages"])
        prompt = int(chars / gpu.chars_per_token)
        tokens_from = f"chars/{gpu.chars_per_token:g}"
    asks = _asks_per_request(model, kind)
    n_requests = round(len(requests) * asks * scale)
    # Each later ask of a thinking judge's request sends its prompt again with the trace, at most its budget.
    prompt_tokens = round((prompt * asks + len(requests) * (asks - 1) * _budget(model)) * scale)
    output_tokens = round(sum(_output_tokens(r, model, kind) for r in requests) * scale)
    passes = 2 if model.reference else 1  # an implicit RM with a reference runs both models
    if engine.remote or model.params_b is None:
        flops, hours, start_s = 0.0, 0.0, 0.0
    else:
        flops = 2 * model.params_b * 1e9 * (prompt_tokens + output_tokens) * passes
        efficiency = gpu.efficiency or measured_efficiency(model.kind, model.params_b)
        hours = flops / (gpu.peak_tflops * 1e12 * efficiency) / 3600
        start_s = start_seconds(model, gpu)
    # Measured, not assumed: one engine start on CPU, from the host asking Ray for it to its ready model (Ray
    # placing the actor, the worker process, imports, loading a small model; vLLM with vllm.enforce_eager), as each
    # engine says (Engine.cpu_start_s). A CPU engine asks for no GPU, so no GPU assumption enters it; a larger
    # model adds its load.
    on_cpu = not model.num_gpus and engine.server_names(model) and engine.cpu_start_s is not None
    return CellPlan(bench.name, model.name, model.kind, n_requests, prompt_tokens, output_tokens, flops, hours,
                    tokens_from, items_from, gpus=model.tensor_parallel_size, start_s=start_s,
                    reference=model.reference, cpu_engine=engine_name(model) if on_cpu else None,
                    cpu_start_s=engine.cpu_start_s if on_cpu else 0.0,
                    path=model.path, batch=engine.submits, remote=engine.remote)


def start_seconds(model: ModelConfig, gpu: GpuSpec) -> float:
    """One start of the model's engine: the fixed part, vLLM's compilation and graph capture where the engine
    compiles (the transformers engine never does), and the bf16 weights (2 bytes per parameter)."""
    compiles = engine_of(model).compiles(model)
    return gpu.start_s + (gpu.compile_s if compiles else 0.0) + 2 * model.params_b / gpu.load_gb_per_s


def _output_tokens(request: dict, model: ModelConfig, kind: str) -> int:
    """Judges write up to their request's (or the model's) token budget and read one verdict token after a
    prefill; scorers write nothing (an implicit RM samples 1 token beside its prompt log-probs). A thinking
    judge with a budget writes its trace up to the budget and, planned as if every trace were cut there, the
    answer after it closed; one whose log-prob verdict is read after the trace, one token and a verdict more
    (jobs.flow.thinking_rounds)."""
    if KINDS[kind].generates:
        own = int(request.get("max_tokens") or model.max_new_tokens) + (request.get("prefill") is not None)
        return own + _budget(model) + 2 * reads_logprobs_after_trace(model)
    return 1 if KINDS[kind].reads_logprobs else 0


def _budget(model: ModelConfig) -> int:
    """A thinking judge's trace budget (reasoning.budget_tokens); 0 without one."""
    return (model.reasoning.budget_tokens or 0) if model.reasoning is not None else 0


def _asks_per_request(model: ModelConfig, kind: str) -> int:
    """How many times a request is asked at most: once, and once more for each round a thinking judge adds (its
    trace closed at a budget, its log-prob verdict read after the trace: jobs.flow.thinking_rounds)."""
    if model.reasoning is None or not KINDS[kind].generates:
        return 1
    return 1 + (model.reasoning.budget_tokens is not None) + reads_logprobs_after_trace(model)



# A retrieval cell's plan: nothing wrong with it, and nothing to count in tokens.
NOT_IN_TOKENS = ("retrieval cells are not planned in tokens; the retrieval throughput scripts in perf/ measure "
                 "index and query rates")


def estimated_tokens(plans: list[CellPlan], gpu: GpuSpec) -> list[str]:
    """One line per local model whose prompts no tokenizer counted, its folder not being on this machine (a hub
    id is not looked up for a plan), so that the plan's figures for it are known as estimates."""
    guessed = {p.model: p.path for p in plans if not p.problem and not p.remote and p.tokens_from != "tokenizer"}
    return [f"{model}: {path} is not a folder on this machine; its token counts are estimated as characters/"
            f"{gpu.chars_per_token:g}" for model, path in guessed.items()]


def unplanned(plans: list[CellPlan]) -> list[CellPlan]:
    """The cells that could not be planned for a reason that would fail them at run time too."""
    return [p for p in plans if p.problem and p.problem != NOT_IN_TOKENS]


def plan_sweep(sweep: SweepConfig, gpu: GpuSpec) -> list[CellPlan]:
    """A plan per cell; a cell that cannot be planned carries its problem and the rest are planned."""
    plans = []
    for bench in sweep.benchmarks.values():
        flow = flow_of(bench.module)
        items: Items | Exception | None = None  # loaded (or failed) once for all of this benchmark's cells
        for model in sweep.models.values():
            if not applies(bench, model):
                continue  # the sweep skips this cell too
            if not isinstance(flow, JudgedFlow):  # no prompts or generated tokens: its cost is encoding
                plans.append(CellPlan(bench.name, model.name, model.kind, 0, 0, 0, 0.0, 0.0, "", "",
                                      problem=NOT_IN_TOKENS))
                continue
            try:
                if items is None:
                    try:
                        items = _items(bench, flow.spec)
                    except (ValueError, OSError) as exc:
                        items = exc
                if isinstance(items, Exception):
                    raise items
                plans.append(plan_cell(bench, model, gpu, items))
            except (ValueError, OSError) as exc:
                plans.append(CellPlan(bench.name, model.name, model.kind, 0, 0, 0, 0.0, 0.0, "", "",
                                      problem=str(exc)))
    return plans


def engine_jobs(plans: list[CellPlan]) -> list[EngineJob]:
    """One engine per model with GPU work, started once for all of its cells; an implicit RM's reference is
    one more engine (shared by every model naming the same reference), planned at its model's size."""
    engines: dict[str, _EngineTally] = {}
    for p in plans:
        if p.problem or not p.start_s:
            continue
        halves = [(p.model, 1.0)]
        if p.reference is not None:
            halves = [(p.model, 0.5), (f"{p.reference} (reference)", 0.5)]
        for name, share in halves:
            e = engines.setdefault(name, _EngineTally(p.gpus, p.start_s))
            e.gpus, e.start_s = max(e.gpus, p.gpus), max(e.start_s, p.start_s)
            e.gpu_s += p.gpu_hours * 3600 * share
            e.cells.append(f"{p.benchmark} x {p.model}")
    return [EngineJob(name, e.gpus, e.start_s, e.gpu_s / e.gpus, tuple(e.cells)) for name, e in engines.items()]


@dataclass
class _EngineTally:
    """An engine's share of the plan as engine_jobs adds its cells up: the largest group and start, the sum."""

    gpus: int
    start_s: float
    gpu_s: float = 0.0
    cells: list[str] = field(default_factory=list)


def plan_schedule(plans: list[CellPlan], gpu: GpuSpec) -> Schedule:
    """The engines of a plan placed on `gpu.count` GPUs in nodes of `gpu.node_gpus`."""
    return schedule(engine_jobs(plans), gpu.count, gpu.node_gpus)


def format_plan(plans: list[CellPlan], gpu: GpuSpec, prices: PriceTable | None = None) -> str:
    """The plan as `ragjudge plan` prints it; API dollars from `prices` (default: conf/prices.yaml)."""
    lines = [f"{'cell':66} {'requests':>9} {'prompt tok':>12} {'output tok':>11} {'PFLOP':>9} {'GPU-h':>7}  tokens"]
    for p in plans:
        cell = f"{p.benchmark} x {p.model} [{p.kind}]"
        if p.problem:
            lines.append(f"{cell:66} cannot plan: {p.problem}")
            continue
        lines.append(f"{cell:66} {p.requests:9,d} {p.prompt_tokens:12,d} {p.output_tokens:11,d} "
                     f"{p.flops / 1e15:9.1f} {p.gpu_hours:7.2f}  {p.tokens_from}")
    lines.append("(GPU-h: compute only; each engine's start is counted once, below)")
    plan = plan_schedule(plans, gpu)
    lines += ["", format_schedule(plan), ""]
    # Only what the schedule placed is totalled: a model these GPUs cannot hold costs nothing here, but it is
    # not done either, so the totals say whose they are.
    starts = plan.start_gpu_s / 3600
    compute = plan.busy_gpu_s / 3600 - starts
    total = compute + starts
    api = sum(p.prompt_tokens + p.output_tokens for p in plans if p.remote)
    longest = plan.longest
    share = f"{gpu.efficiency:.0%}" if gpu.efficiency else "the share measured for each model's kind and size"
    whose = (f"Total of {len(plan.placements)} placed engine{'s' * (len(plan.placements) != 1)} "
             f"({len(plan.unplaced)} left out: cannot be placed, below)" if plan.unplaced else "Total")
    lines.append(f"{whose}: {total:.1f} GPU-hours on {gpu.name} ({share} of {gpu.peak_tflops:g} "
                 f"TFLOP/s): {compute:.1f} compute + {starts:.1f} engine starts ({len(plan.placements)} "
                 f"starts, one per engine: {gpu.start_s:g} s, + {gpu.compile_s:g} s where vLLM compiles, + weights at "
                 f"{gpu.load_gb_per_s:g} GB/s) = "
                 f"{starts / total if total else 0:.1%} of GPU-hours in starts.")
    if longest is not None:
        lines.append(f"Makespan on {_gpus(gpu.count)} ({_nodes(plan)}): {plan.makespan_s / 3600:.2f} h; "
                     f"lower bound (GPU-hours / {gpu.count}) {plan.lower_bound_s / 3600:.2f} h; longest "
                     f"single engine {longest.duration_s / 3600:.2f} h ({longest.name}); idle "
                     f"{plan.idle_gpu_s / 3600:.1f} GPU-hours.")
    lines += unplaceable(plan, gpu)
    cpu = {p.cpu_engine: p.cpu_start_s for p in plans if p.cpu_engine and not p.problem}
    if cpu:
        lines.append(f"On CPU as configured (model files with no num_gpus): {len(cpu)} engine starts, "
                     f"{sum(cpu.values()) / 60:.1f} min at the measured {_cpu_starts()} each, one after another.")
    lines.append(f"API tokens: {api:,d}.")
    lines += api_cost_lines(plans, prices or load_prices())
    items_from = sorted({p.items_from for p in plans if p.items_from})
    lines.append("Items: " + "; ".join(items_from))
    return "\n".join(lines)


def unplaceable(plan: Schedule, gpu: GpuSpec) -> list[str]:
    """A line per engine whose tensor-parallel group no node of the schedule holds, with what would hold it."""
    largest = max(plan.node_gpus)
    return [f"Cannot place {job.name}: it needs {_gpus(job.gpus)} on one node (its tensor-parallel group), and the "
            f"largest node here has {largest} (--gpus {gpu.count}, --node-gpus {gpu.node_gpus}); plan with --gpus "
            f"and --node-gpus of {job.gpus} or more." for job in plan.unplaced]


def _gpus(count: int) -> str:
    return f"{count} GPU{'s' * (count != 1)}"


def _nodes(plan: Schedule) -> str:
    sizes = plan.node_gpus
    widths = "/".join(str(s) for s in dict.fromkeys(sizes))
    return f"{len(sizes)} node{'s' if len(sizes) > 1 else ''} of {widths}"


def format_schedule(plan: Schedule) -> str:
    """The engines by start time: node, GPUs, one start, when each begins and ends."""
    lines = ["Engines by start time (one start each; placed longest first, short ones backfilling gaps):",
             f"  {'engine':56} {'node':>4} {'GPUs':>4} {'start s':>8} {'begins h':>9} {'ends h':>7}"]
    for p in sorted(plan.placements, key=lambda p: (p.begin_s, p.node, p.job.name)):
        lines.append(f"  {p.job.name:56} {p.node:4d} {p.job.gpus:4d} {p.job.start_s:8.0f} "
                     f"{p.begin_s / 3600:9.2f} {p.end_s / 3600:7.2f}")
    return "\n".join(lines)


def _cpu_starts() -> str:
    """The engines' measured starts on CPU, fastest first: "<seconds> s (<engine>) or ..."."""
    measured = sorted((e.cpu_start_s, e.name) for e in engines().values() if e.cpu_start_s is not None)
    return " or ".join(f"{seconds:g} s ({name})" for seconds, name in measured)
