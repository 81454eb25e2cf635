"""The `ragjudge` command: validate a sweep's models, run a sweep, re-aggregate stored predictions, write a
report, compare two runs, show a running sweep's progress."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.records import read_records
from jobs.config import PROJECT_CONF

RUN_ROOT_BUSY = 3  # exit status: another driver holds the run's lease, or took it from this one
# Exit status after SIGTERM or SIGINT: 128 + the signal's number, 143 or 130 (jobs.interrupt); the answered
# requests are stored and the same command resumes. 1: a cell failed, or the run's storage did (unreachable
# past storage.retry_s, or full); 2: a user's mistake.


def _run(args: argparse.Namespace) -> int:
    from jobs.config import load_sweep
    from jobs.interrupt import stop_on_signals
    from jobs.lease import Lease, LeaseHeld
    from jobs.pipeline import connect_ray, run_sweep
    from jobs.report import write_report
    from jobs.storage import RunRoot

    sweep = load_sweep(args.sweep, args.overrides)
    try:  # before Ray starts: a second driver on the run is refused at once
        lease = Lease(RunRoot.of(sweep.storage), sweep.storage.lease_timeout_s, on_lost=_stop_on_lost_lease)
        lease.acquire()
    except LeaseHeld as e:
        print(f"ragjudge: {e}", file=sys.stderr)
        return RUN_ROOT_BUSY
    root = RunRoot.of(sweep.storage, before_write=lease.confirm)
    try:
        connect_ray(sweep)  # Ray installs its own SIGTERM handler here: ours go in after it
        with stop_on_signals(sweep.storage.grace_s, lease.release) as stop:
            outcomes = run_sweep(sweep, include_held=args.include_held, before_write=lease.confirm, stop=stop)
            if any(o.metrics for o in outcomes) and not stop.is_set():
                print()
                write_report(root)
    finally:
        lease.release()
    print(f"\nResults: {root.uri('')}\nReport:  {root.uri('report/index.html')}")
    unfinished = [o for o in outcomes if o.status in ("failed", "interrupted")]
    for o in unfinished:
        print(f"{o.status.upper()} {o.benchmark} x {o.model}{o.message}", file=sys.stderr)
    if stop.is_set():
        print(f"ragjudge: stopped by {stop.signal_name}; the same command resumes the run", file=sys.stderr)
        return stop.exit_code
    return 1 if unfinished else 0


def _validate(args: argparse.Namespace) -> int:
    from jobs.agreement import VALIDATE, Thresholds, format_table
    from jobs.config import load_sweep
    from jobs.storage import RunRoot
    from jobs.validate import validate_sweep

    thresholds = Thresholds(args.min_agreement, args.max_score_diff)
    sweep = load_sweep(args.sweep, args.overrides)
    report = validate_sweep(sweep, args.pairs, thresholds, args.models and args.models.split(","))
    print(f"\n{report['pairs']} RAG-RewardBench pairs of {', '.join(report['data'])}; held below "
          f"{thresholds.min_agreement:.0%} verdict agreement"
          + (f" or a score difference over {thresholds.max_score_diff:g}" if thresholds.max_score_diff is not None
             else ""))
    print(format_table(report["models"]))
    root = RunRoot.of(sweep.storage)
    print(f"\nValidation: {root.uri(VALIDATE)} (`ragjudge run` skips held models unless --include-held)")
    return 1 if any(m["status"] == "held" for m in report["models"].values()) else 0


def _stop_on_lost_lease(holder: dict[str, Any]) -> None:
    """Another driver took the lease (this one looked gone): stop now, as a crash would, so two drivers never
    write one run; what this one stored stays, and the holder resumes from it."""
    print(f"ragjudge: another driver took over this run (host {holder.get('host')}, pid {holder.get('pid')}); "
          "stopping", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(RUN_ROOT_BUSY)


def _aggregate(args: argparse.Namespace) -> int:
    from benchmarks.protocol import RetrievalBenchmark, benchmark

    spec = benchmark(args.benchmark)
    if isinstance(spec, RetrievalBenchmark):  # a run of rankings scored against qrels, not judge verdicts
        return _aggregate_retrieval(spec, args)
    from jobs.reducers import aggregate, row_problem

    rows: list[dict[str, Any]] = []
    for record in read_records(args.predictions):
        problem = record.problem if record.data is None else row_problem(spec, record.data)
        if problem:  # named and left out; the good rows are still scored
            print(f"skipped {record.source}: row {record.row}: {problem}", file=sys.stderr)
        else:
            rows.append(record.data)
    models = sorted({row.get("model") for row in rows} - {None})
    if len(models) <= 1:
        _write_metrics(aggregate(spec, rows), args.out)
        return 0
    # Several models: each its own metrics.json (DIR/model=M/, as a run stores them), then who beats whom.
    from jobs.leaderboard import leaderboard_from_rows
    from jobs.storage import partition_value

    for model in models:
        out = args.out and str(Path(args.out, f"model={partition_value(model)}"))
        _write_metrics(aggregate(spec, [row for row in rows if row.get("model") == model]), out)
    board = leaderboard_from_rows(args.benchmark, rows)
    if args.out:
        path = Path(args.out, "leaderboard.json")
        path.write_text(json.dumps(board, indent=2) + "\n", encoding="utf-8")
        print(f"Leaderboard: {path}", file=sys.stderr)
    return 0


def _write_metrics(metrics: dict[str, Any], out: str | None) -> None:
    text = json.dumps(metrics, indent=2, ensure_ascii=False)
    if out:
        os.makedirs(out, exist_ok=True)
        Path(out, "metrics.json").write_text(text + "\n", encoding="utf-8")
    print(text)


def _aggregate_retrieval(spec: Any, args: argparse.Namespace) -> int:
    if not args.qrels:
        print(f"ragjudge aggregate: --benchmark {args.benchmark} needs --qrels QRELS.tsv (once per file)",
              file=sys.stderr)
        return 2
    metrics = spec.aggregate_files(args.predictions, args.qrels, args.out)
    for problem in metrics["problems"]:
        print(f"ragjudge aggregate: {problem}", file=sys.stderr)
    print(json.dumps({k: v for k, v in metrics.items() if k != "problems"}, indent=2))
    return 0


def _report(args: argparse.Namespace) -> int:
    from jobs.report import write_report
    from jobs.storage import open_run

    root = open_run(args.run)
    if write_report(root) is None:
        print(f"{root.uri('manifest.json')}: not found; is {args.run} a run folder?", file=sys.stderr)
        return 2
    print(f"Report: {root.uri('report/index.html')}\nLeaderboard: {root.uri('report/leaderboard.json')}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from jobs.compare import compare_runs, format_comparison, write_flips
    from jobs.storage import open_run

    run_a, run_b = open_run(args.run_a), open_run(args.run_b)
    for root, name in ((run_a, args.run_a), (run_b, args.run_b)):
        if root.read_json("manifest.json") is None:
            print(f"{root.uri('manifest.json')}: not found; is {name} a run folder?", file=sys.stderr)
            return 2
    diffs, notes = compare_runs(run_a, run_b, args.model)
    print(format_comparison(diffs, notes, run_a.run, run_b.run))
    out = args.out or f"compare-{run_a.run}-vs-{run_b.run}.jsonl"
    print(f"All {write_flips(diffs, out)} flipped items: {out}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from jobs.progress import STATUS, format_status
    from jobs.storage import open_run

    root = open_run(args.run)
    status = root.read_json(STATUS)
    if status is None:
        print(f"{root.uri(STATUS)}: not found (the run has not started, or predates live progress)",
              file=sys.stderr)
        return 2
    print(json.dumps(status, indent=2) if args.json else format_status(status))
    return 0


def _submit(args: argparse.Namespace) -> int:
    from jobs.submit import SubmitError, SubmitOptions, submit

    flags = {k: getattr(args, k) for k in ("nodes", "gpus_per_node", "cpus_per_node", "image", "namespace",
                                           "partition", "time_limit", "secret", "project_dir", "address", "wait")}
    options = SubmitOptions(**{k: v for k, v in flags.items() if v is not None})
    try:
        return submit(args.sweep, args.overrides, args.to, options, dry_run=args.dry_run)
    except SubmitError as e:
        print(f"ragjudge submit: {e}", file=sys.stderr)
        return 2


def _plan(args: argparse.Namespace) -> int:
    from jobs.config import load_sweep
    from jobs.plan import GpuSpec, format_plan, plan_sweep

    given = {key: getattr(args, key) for key in ("peak_tflops", "efficiency", "start_s", "compile_s", "load_gb_per_s")
             if getattr(args, key) is not None}  # the rest keep GpuSpec's defaults, written down once there
    gpu = GpuSpec(name=args.gpu, count=args.gpus, node_gpus=args.node_gpus, **given)
    print(format_plan(plan_sweep(load_sweep(args.sweep, args.overrides), gpu), gpu))
    return 0


def _models(args: argparse.Namespace) -> int:
    from jobs.readiness import Machine, why_not
    from jobs.registry import format_models, list_models

    models, machine = list_models(Path(args.conf)), Machine.here()
    print(f"This machine: {machine.gpus} GPUs, vLLM: {machine.vllm_build or 'not installed'}. A model is "
          "ready when its engine's packages, its GPUs, its weights (a folder, a built-in model's package or the "
          "Hugging Face cache) and its API variables are all here.")
    print(format_models(models, {m.name: why_not(m, machine) for m in models}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ragjudge", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run every (benchmark, model) cell of a sweep")
    run.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    run.add_argument("overrides", nargs="*", help="key=value overrides, e.g. storage.root=s3://bucket/runs")
    run.add_argument("--include-held", action="store_true", help="also run models `ragjudge validate` held")
    run.set_defaults(func=_run)
    val = commands.add_parser("validate", help="score pairs on each model's engine and a reference path; hold "
                              "models whose verdicts differ")
    val.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    val.add_argument("overrides", nargs="*", help="key=value overrides, as for run")
    val.add_argument("--pairs", type=int, default=32, help="the first N RAG-RewardBench pairs of the sweep's data")
    val.add_argument("--min-agreement", type=float, default=0.95,
                     help="hold a model whose verdicts agree on fewer pairs than this, in any comparison")
    val.add_argument("--max-score-diff", type=float,
                     help="also hold a model whose scores differ by more than this (default: no limit)")
    val.add_argument("--models", help="comma-separated: validate these models of the sweep only")
    val.set_defaults(func=_validate)
    agg = commands.add_parser("aggregate", help="recompute metrics from stored item predictions")
    agg.add_argument("--benchmark", required=True)
    agg.add_argument("--predictions", required=True, help="Parquet or JSONL file, or a folder of them")
    agg.add_argument("--out", help="folder for metrics.json (and leaderboard.json for several models)")
    agg.add_argument("--qrels", action="append", help="mtrag_retrieval: a qrels TSV; give it once per file")
    agg.set_defaults(func=_aggregate)
    rep = commands.add_parser("report", help="print the leaderboard of a run and write its HTML report")
    rep.add_argument("run", help="the run folder, ROOT/RUN")
    rep.set_defaults(func=_report)
    cmp = commands.add_parser("compare", help="per benchmark and model: what changed between two runs")
    cmp.add_argument("run_a", help="the earlier run folder, ROOT/RUN")
    cmp.add_argument("run_b", help="the later run folder, ROOT/RUN")
    cmp.add_argument("--model", help="compare this model's cells only")
    cmp.add_argument("--out", help="file for all flipped items (JSONL); default compare-A-vs-B.jsonl here")
    cmp.set_defaults(func=_compare)
    sta = commands.add_parser("status", help="print a run's live progress (its status.json)")
    sta.add_argument("run", help="the run folder, ROOT/RUN (local or s3://)")
    sta.add_argument("--json", action="store_true", help="print status.json as it is")
    sta.set_defaults(func=_status)
    sub = commands.add_parser("submit", help="send a sweep to a Ray cluster, Slurm or Kubernetes (KubeRay)")
    sub.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    sub.add_argument("overrides", nargs="*", help="key=value overrides, passed on to `ragjudge run`")
    sub.add_argument("--to", required=True, choices=("ray", "slurm", "k8s"), help="where the sweep runs")
    sub.add_argument("--dry-run", action="store_true", help="print what would be submitted; submit nothing")
    sub.add_argument("--nodes", type=int, help="GPU nodes (slurm: all nodes; k8s: GPU worker replicas)")
    sub.add_argument("--gpus-per-node", type=int)
    sub.add_argument("--cpus-per-node", type=int, help="else cluster.num_cpus, else 16 per GPU")
    sub.add_argument("--image", help="k8s: container image holding the project")
    sub.add_argument("--namespace", help="k8s namespace")
    sub.add_argument("--secret", help="k8s: the Secret whose keys become the pods' environment")
    sub.add_argument("--partition", help="slurm partition")
    sub.add_argument("--time", dest="time_limit", help="slurm time limit, e.g. 24:00:00")
    sub.add_argument("--project-dir", help="where the project lies for the job (slurm: shared fs; k8s: in image)")
    sub.add_argument("--address", help="ray: the cluster (dashboard URL or GCS address); else RAY_ADDRESS")
    sub.add_argument("--wait", action="store_true", default=None, help="ray: wait for the job and return its status")
    sub.set_defaults(func=_submit)
    plan = commands.add_parser("plan", help="requests, tokens, FLOPs and GPU-hours of a sweep, before running it")
    plan.add_argument("sweep")
    plan.add_argument("overrides", nargs="*", help="key=value overrides, as for run")
    plan.add_argument("--gpus", type=int, default=8, help="GPUs to spread the sweep over")
    plan.add_argument("--gpu", default="H100-SXM", help="GPU name, for the printout")
    # Defaults: jobs.plan.GpuSpec (an H100-SXM; the sources in docs/plan_rag_rewardbench_45.md).
    plan.add_argument("--peak-tflops", type=float, help="dense bf16 peak of one GPU (default 989)")
    plan.add_argument("--efficiency", type=float, help="share of peak reached (default 0.35)")
    plan.add_argument("--start-s", type=float, help="engine start besides compilation and weights (default 50 s)")
    plan.add_argument("--compile-s", type=float,
                      help="vLLM's torch.compile and CUDA graph capture, skipped with enforce_eager (default 40 s)")
    plan.add_argument("--load-gb-per-s", type=float, help="rate weights load at (default 2 GB/s)")
    plan.add_argument("--node-gpus", type=int, default=8,
                      help="GPUs per node (no tensor-parallel group spans two)")
    plan.set_defaults(func=_plan)
    models = commands.add_parser("models", help="list the model registry, and whether each model can run here")
    models.add_argument("--conf", default=str(PROJECT_CONF),
                        help="the conf/ folder whose models/ to list")
    models.set_defaults(func=_models)
    args, extra = parser.parse_known_args(argv)
    # argparse leaves key=value words that follow flags (`plan SWEEP --gpus 8 k=v`) unparsed: they are overrides.
    if extra and hasattr(args, "overrides") and all("=" in e and not e.startswith("-") for e in extra):
        args.overrides += extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from benchmarks.protocol import UnknownBenchmark
    from jobs.config import ConfigError
    from jobs.storage_retry import StorageError

    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, UnknownBenchmark) as e:  # a user's mistake: one line, no traceback
        print(f"ragjudge: {e}", file=sys.stderr)
        return 2
    except StorageError as e:  # the run root unreachable past storage.retry_s, or full: one line; rerun resumes
        print(f"ragjudge: {e}", file=sys.stderr)
        return 1
