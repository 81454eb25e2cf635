"""`ragjudge plan`: what a sweep will cost before it runs: requests, tokens, FLOPs, GPU-hours.

Forward-pass FLOPs are 2 x parameters x tokens (the usual dense-transformer estimate; attention's share is
ignored, which undercounts long prompts by a few percent at these lengths). GPU-hours divide FLOPs by the
GPU's peak rate times an efficiency factor; each cell also pays an engine start (a fixed time plus bf16
weights at a load rate) on every GPU of its tensor-parallel group. The defaults and why are in
docs/plan_rag_rewardbench_45.md. Tokens are counted with the model's tokenizer when it is on this machine,
else estimated from characters (`chars_per_token`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.options import typed_options
from benchmarks.protocol import Benchmark, benchmark
from jobs.cell import load, protocol_kind
from jobs.config import BenchmarkConfig, ModelConfig, SweepConfig
from jobs.pipeline import applies


@dataclass
class GpuSpec:
    name: str = "H100-SXM"
    peak_tflops: float = 989.0  # dense bf16
    efficiency: float = 0.35  # share of peak a prefill-heavy batched workload reaches
    count: int = 8
    chars_per_token: float = 4.0
    start_s: float = 90.0  # engine start besides loading weights (process, CUDA graphs, KV cache)
    load_gb_per_s: float = 2.0  # weights read from disk or object storage


@dataclass
class CellPlan:
    benchmark: str
    model: str
    kind: str
    requests: int
    prompt_tokens: int
    output_tokens: int
    flops: float
    gpu_hours: float
    tokens_from: str  # "tokenizer" or "chars/N"
    items_from: str  # where the item count came from
    problem: str | None = None  # why this cell cannot be planned (it would fail the same way at run time)


def _local_templater(model: ModelConfig):
    """The model's own templating if its files are on this machine (no downloads while planning)."""
    from actors.model_store import resolve_model
    from actors.templating import templater

    local = resolve_model(model.path)
    return templater(local, model.chat_template, model.revision) if os.path.isdir(local) else None


def _items(bench: BenchmarkConfig, spec: Benchmark) -> tuple[list[dict[str, Any]], float, str]:
    """The items to count, and the factor that scales them to the benchmark's size."""
    if all(os.path.exists(p) for p in bench.data):
        items = [i for i in load(bench, spec) if not i.get("error")]
        return items, 1.0, f"{bench.name}: {len(items)} items from the data"
    if bench.size is None or bench.plan_sample is None:
        raise ValueError(f"benchmarks.{bench.name}.data: {bench.data} is not on this machine; set `size` and "
                         "`plan_sample` to plan without it")
    sample = replace(bench, data=[bench.plan_sample], limit=None)
    items = [i for i in load(sample, spec) if not i.get("error")]
    return items, bench.size / len(items), (f"{bench.name}: {bench.size} items (size), lengths from "
                                            f"{len(items)} items of {os.path.basename(bench.plan_sample)}")


def plan_cell(bench: BenchmarkConfig, model: ModelConfig, gpu: GpuSpec) -> CellPlan:
    spec = benchmark(bench.module)
    options = typed_options(spec.Options, bench.options)
    kind = protocol_kind(model)
    items, scale, items_from = _items(bench, spec)
    requests = [r for item in items for r in spec.expand(item, kind, options)]
    tpl = _local_templater(model) if model.kind != "api" else None
    if tpl is not None:
        ids = tpl.opened if kind == "generative" else tpl.closed
        prompt = sum(len(ids(r["messages"])) for r in requests)
        tokens_from = "tokenizer"
    else:
        chars = sum(len(m["content"]) for r in requests for m in r["messages"])
        prompt = int(chars / gpu.chars_per_token)
        tokens_from = f"chars/{gpu.chars_per_token:g}"
    n_requests = round(len(requests) * scale)
    prompt_tokens = round(prompt * scale)
    output_tokens = round(sum(_output_tokens(r, model, kind) for r in requests) * scale)
    passes = 2 if model.reference else 1  # an implicit RM with a reference runs both models
    if model.kind == "api" or model.params_b is None:
        flops, hours = 0.0, 0.0
    else:
        flops = 2 * model.params_b * 1e9 * (prompt_tokens + output_tokens) * passes
        start_s = passes * (gpu.start_s + 2 * model.params_b / gpu.load_gb_per_s)
        hours = flops / (gpu.peak_tflops * 1e12 * gpu.efficiency) / 3600 + start_s / 3600 * model.tensor_parallel_size
    return CellPlan(bench.name, model.name, model.kind, n_requests, prompt_tokens, output_tokens, flops, hours,
                    tokens_from, items_from)


def _output_tokens(request: dict, model: ModelConfig, kind: str) -> int:
    """Judges write up to their request's (or the model's) token budget and read one verdict token after a
    prefill; scorers write nothing (an implicit RM samples 1 token beside its prompt log-probs)."""
    if kind == "generative":
        return int(request.get("max_tokens") or model.max_new_tokens) + (request.get("prefill") is not None)
    return {"implicit": 1, "discriminative": 0}[kind]


def plan_sweep(sweep: SweepConfig, gpu: GpuSpec) -> list[CellPlan]:
    """A plan per cell; a cell that cannot be planned carries its problem and the rest are planned."""
    plans = []
    for bench in sweep.benchmarks.values():
        for model in sweep.models.values():
            if not applies(bench, model):
                continue  # the sweep skips this cell too
            if not isinstance(benchmark(bench.module), Benchmark):  # no prompts or generated tokens: its cost
                # is encoding the corpus
                plans.append(CellPlan(bench.name, model.name, model.kind, 0, 0, 0, 0.0, 0.0, "", "",
                                      problem="retrieval cells are not planned in tokens; see "
                                              "perf/mtrag_retrieval_throughput.py for index and query rates"))
                continue
            try:
                plans.append(plan_cell(bench, model, gpu))
            except (ValueError, OSError) as exc:
                plans.append(CellPlan(bench.name, model.name, model.kind, 0, 0, 0, 0.0, 0.0, "", "",
                                      problem=str(exc)))
    return plans


def format_plan(plans: list[CellPlan], gpu: GpuSpec) -> str:
    lines = [f"{'cell':66} {'requests':>9} {'prompt tok':>12} {'output tok':>11} {'PFLOP':>9} {'GPU-h':>7}  tokens"]
    for p in plans:
        cell = f"{p.benchmark} x {p.model} [{p.kind}]"
        if p.problem:
            lines.append(f"{cell:66} cannot plan: {p.problem}")
            continue
        lines.append(f"{cell:66} {p.requests:9,d} {p.prompt_tokens:12,d} {p.output_tokens:11,d} "
                     f"{p.flops / 1e15:9.1f} {p.gpu_hours:7.2f}  {p.tokens_from}")
    total = sum(p.gpu_hours for p in plans)
    api = sum(p.prompt_tokens + p.output_tokens for p in plans if p.kind == "api")
    lines.append(f"\nTotal: {total:.1f} GPU-hours on {gpu.name} ({gpu.efficiency:.0%} of {gpu.peak_tflops:g} "
                 f"TFLOP/s, {gpu.start_s:g} s + weights at {gpu.load_gb_per_s:g} GB/s per engine start): "
                 f"fits in {total / gpu.count:.1f} hours on {gpu.count} GPUs with cells packed; "
                 f"API tokens: {api:,d}.")
    items_from = sorted({p.items_from for p in plans if p.items_from})
    lines.append("Items: " + "; ".join(items_from))
    return "\n".join(lines)
