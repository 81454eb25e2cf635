"""`ragjudge plan SWEEP`: requests, tokens, FLOPs and GPU-hours of a sweep, its schedule, and the hub weights it\nmust download (what is cached already, and the time at a stated bandwidth), before it runs."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from jobs.config import ConfigError
from jobs.loading import load_sweep
from jobs.plan import (
    GpuSpec,
    estimated_tokens,
    format_downloads,
    format_plan,
    plan_downloads,
    plan_schedule,
    plan_sweep,
    unplaceable,
    unplanned,
)


def add(commands: Any) -> None:
    parser = commands.add_parser("plan", help="requests, tokens, FLOPs and GPU-hours of a sweep, before running it")
    parser.add_argument("sweep")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, as for run")
    parser.add_argument("--gpus", type=int, default=8,
                        help="GPUs to spread the sweep over (default 8); a model whose tensor-parallel group no node "
                             "holds is named and fails the plan")
    parser.add_argument("--gpu", default="H100-SXM", help="GPU name, for the printout")
    # Defaults: jobs.plan.estimate.GpuSpec (an H100-SXM; the sources in docs/plan_rag_rewardbench_45.md).
    parser.add_argument("--peak-tflops", type=float, help="dense bf16 peak of one GPU (default 989)")
    parser.add_argument("--efficiency", type=float,
                        help="share of peak reached (default: measured on an H100, by model kind and size)")
    parser.add_argument("--start-s", type=float, help="engine start besides compilation and weights (default 50 s)")
    parser.add_argument("--compile-s", type=float,
                        help="vLLM's torch.compile and CUDA graph capture, skipped with vllm.enforce_eager (default 40 s)")
    parser.add_argument("--load-gb-per-s", type=float, help="rate weights load at (default 1.38 GB/s, measured)")
    parser.add_argument("--download-mb-per-s", type=float,
                        help="rate hub weights download at into the Hugging Face cache (default 100 MB/s)")
    parser.add_argument("--node-gpus", type=int, default=8, help="GPUs per node (no tensor-parallel group spans two)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for flag, value in (("--gpus", args.gpus), ("--node-gpus", args.node_gpus)):
        if value < 1:
            raise ConfigError(f"{flag} {value}: give a whole number of GPUs, 1 or more")
    for flag in ("peak_tflops", "efficiency", "load_gb_per_s", "download_mb_per_s"):  # each divides the plan
        if (value := getattr(args, flag)) is not None and value <= 0:
            raise ConfigError(f"--{flag.replace('_', '-')} {value:g}: give a number above 0")
    given = {key: getattr(args, key) for key in ("peak_tflops", "efficiency", "start_s", "compile_s", "load_gb_per_s",
                                                        "download_mb_per_s")
             if getattr(args, key) is not None}  # the rest keep GpuSpec's defaults, written down once there
    gpu = GpuSpec(name=args.gpu, count=args.gpus, node_gpus=args.node_gpus, **given)
    sweep = load_sweep(args.sweep, args.overrides)
    plans = plan_sweep(sweep, gpu)
    schedule = plan_schedule(plans, gpu)
    print(format_plan(plans, gpu))
    print(format_downloads(plan_downloads(sweep.models.values()), gpu.download_mb_per_s, schedule.makespan_s))
    for line in estimated_tokens(plans, gpu):
        print(f"ragjudge plan: {line}", file=sys.stderr)
    # Both would fail at run time too: said again where a script sees it, and the plan is not the sweep's.
    for plan in unplanned(plans):
        print(f"ragjudge plan: {plan.benchmark} x {plan.model}: {plan.problem}", file=sys.stderr)
    for line in unplaceable(schedule, gpu):
        print(f"ragjudge plan: {line}", file=sys.stderr)
    return 1 if unplanned(plans) or schedule.unplaced else 0
