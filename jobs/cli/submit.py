"""`ragjudge submit`: the same `ragjudge run` command, sent to a Ray cluster, Slurm or Kubernetes (KubeRay).

Why one verb: the three targets differ only in how the command reaches the cluster. Ray gets it through the job
submission API, with the repo as the job's working_dir so the cluster runs this code, at the address it is given
and no other. Slurm and Kubernetes get a file rendered from the templates in deploy/ (jobs/cli/job_files.py),
handed to sbatch or `kubectl apply`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.cli.job_files import (
    DEFAULT_IMAGE,
    K8S_CACHE_HOST_PATH,
    NO_HF_CACHE,
    REPO,
    SubmitError,
    SubmitOptions,
    notes,
    ray_job,
    render,
    secret_names,
    sweep_command,
)
from jobs.config import ConfigError, SweepConfig
from jobs.loading import load_sweep
from jobs.sweep import ClusterUnreachable

if TYPE_CHECKING:
    from ray.job_submission import JobStatus, JobSubmissionClient

TARGETS = ("ray", "slurm", "k8s")
RAY_ADDRESS_VARIABLES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")  # a Ray job's cluster, the first set winning
JOB_LINE_S, JOB_POLL_S = 300.0, 2.0  # `--wait`: a line this often while the submitted job runs; a poll this often
AGENT_WAIT_S, AGENT_RETRY_S = 120.0, 2.0  # a Ray head's job agent still starting: how long to try again, how often


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise SubmitError(f"`{name}` was not found on PATH; it is needed to submit here (or use --dry-run)")
    return found


def _submitted(client: Any, job: dict, log: Callable[[str], None]) -> str:
    """The job's id once the cluster took it. A head whose dashboard agent is still starting answers "No
    available agent to submit job, please try again later." without starting anything (Ray's job head gives up
    waiting for the agent before it sends the job on), so that one answer is tried again, AGENT_WAIT_S at most."""
    deadline = time.monotonic() + AGENT_WAIT_S
    while True:
        try:
            return client.submit_job(**job)
        except RuntimeError as e:
            if "No available agent" not in str(e) or time.monotonic() > deadline:
                raise
            log(f"the cluster's job agent is not up yet; submitting again in {AGENT_RETRY_S:g} s")
            time.sleep(AGENT_RETRY_S)


def ray_address(sweep: SweepConfig, options: SubmitOptions) -> str | None:
    """The Ray cluster a job is sent to: --address, else RAY_API_SERVER_ADDRESS or RAY_ADDRESS (Ray's own order),
    else the sweep's cluster.address; None when nothing names one."""
    named = (os.environ.get(name) for name in RAY_ADDRESS_VARIABLES)
    return options.address or next((value for value in named if value), None) or sweep.cluster.address


def _client(address: str | None) -> Any:
    """A job client of the cluster at `address`, and of no other: without an address Ray would attach to
    whichever cluster it finds on this machine ("Connecting to latest cluster"), so there is none without one."""
    from ray.exceptions import RayError
    from ray.job_submission import JobSubmissionClient

    if not address:
        raise SubmitError("no Ray cluster named: give --address (its dashboard, http://HEAD:8265, or its GCS "
                          "address, HEAD:6379) or set RAY_ADDRESS; a cluster found on this machine is never used")
    # Ray lets these variables override the address it is given: out of the environment while the client is
    # made, so that the address chosen above is the one it connects to.
    hidden = {name: os.environ.pop(name) for name in RAY_ADDRESS_VARIABLES if name in os.environ}
    try:
        return JobSubmissionClient(address)
    except (ConnectionError, RayError) as e:
        raise ClusterUnreachable(f"the Ray cluster at {address} does not answer ({str(e).strip().splitlines()[0]}); "
                                 "check --address or RAY_ADDRESS and that the head's dashboard is up") from None
    finally:
        os.environ.update(hidden)


def _submit_ray(sweep: SweepConfig, job: dict, options: SubmitOptions, log: Callable[[str], None]) -> int:
    from ray.job_submission import JobStatus

    client = _client(ray_address(sweep, options))  # a GCS address is mapped to its dashboard
    job_id = _submitted(client, job, log)
    log(f"submitted Ray job {job_id} to {client.get_address()}")
    if not options.wait:
        return 0
    status = wait_for_job(client, job_id, sweep.cluster.connect_timeout_s, log)
    log(client.get_job_logs(job_id)[-4000:])
    log(f"Ray job {job_id}: {status.value}")
    return 0 if status == JobStatus.SUCCEEDED else 1


def wait_for_job(client: JobSubmissionClient, job_id: str, answer_s: float, log: Callable[[str], None]) -> JobStatus:
    """The submitted job's end status, polled every JOB_POLL_S with a line every JOB_LINE_S; the run's own length
    is bounded by its cells' waits, the head's silence by `answer_s` (cluster.connect_timeout_s): past it,
    ClusterUnreachable names the job, which may still run."""
    start = said = answered = time.monotonic()
    while True:
        try:
            status, answered = client.get_job_status(job_id), time.monotonic()
        except (ConnectionError, OSError, RuntimeError) as e:  # Ray's client raises all three for a head that is gone
            if time.monotonic() - answered <= answer_s:
                time.sleep(JOB_POLL_S)
                continue
            raise ClusterUnreachable(
                f"the Ray head at {client.get_address()} did not answer for {answer_s:.0f} s "
                f"(cluster.connect_timeout_s) while job {job_id} ran ({str(e).strip().splitlines()[0][:200]}); "
                f"the job may still run: `ray job status {job_id}`") from None
        if status.is_terminal():
            return status
        if time.monotonic() - said >= JOB_LINE_S:
            log(f"Ray job {job_id}: {status.value} for {(time.monotonic() - start) / 60:.0f} min "
                f"(`ray job logs -f {job_id}` follows its lines)")
            said = time.monotonic()
        time.sleep(JOB_POLL_S)


def submit(sweep_path: str | os.PathLike, overrides: list[str], target: str, options: SubmitOptions | None = None,
           dry_run: bool = False, log: Callable[[str], None] = print) -> int:
    """Send the sweep to `target`; with dry_run, print what would be sent and send nothing. Returns an exit code."""
    if target not in TARGETS:
        raise ValueError(f"submit: target must be one of {', '.join(TARGETS)}, not {target!r}")
    options = options or SubmitOptions()
    sweep = load_sweep(sweep_path, overrides)
    if target == "ray":
        job = ray_job(sweep_path, overrides, options)
        if dry_run:
            address = ray_address(sweep, options)
            if not address:
                print("ragjudge: warning: no Ray cluster named (--address, RAY_ADDRESS); submitting would refuse",
                      file=sys.stderr)
            log(json.dumps({"address": address, **job}, indent=2))
            return 0
        return _submit_ray(sweep, job, options, log)
    text = render(sweep_path, overrides, target, options)
    for line in notes(sweep, target, options):
        print(f"ragjudge: {line}", file=sys.stderr)
    if dry_run:
        log(text)
        return 0
    if target == "slurm":
        Path(options.project_dir or REPO, "results", "slurm").mkdir(parents=True, exist_ok=True)
        argv = [_tool("sbatch")]
    else:
        argv = [_tool("kubectl"), "apply", "-f", "-"]
    result = subprocess.run(argv, input=text, text=True, capture_output=True, check=False)
    log((result.stdout + result.stderr).strip())
    if result.returncode != 0:
        raise SubmitError(f"{' '.join(argv)} exited with {result.returncode}")
    return 0


def add(commands: Any) -> None:
    parser = commands.add_parser("submit", help="send a sweep to a Ray cluster, Slurm or Kubernetes (KubeRay)")
    parser.add_argument("sweep", help="a sweep YAML, e.g. conf/sweeps/demo.yaml")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, passed on to `ragjudge run`")
    parser.add_argument("--to", required=True, choices=TARGETS, help="where the sweep runs")
    parser.add_argument("--dry-run", action="store_true", help="print what would be submitted; submit nothing")
    parser.add_argument("--nodes", type=int, help="GPU nodes (slurm: all nodes; k8s: GPU worker replicas)")
    parser.add_argument("--gpus-per-node", type=int)
    parser.add_argument("--cpus-per-node", type=int, help="else cluster.num_cpus, else 16 per GPU")
    parser.add_argument("--image", help=f"k8s: container image holding the project (default {DEFAULT_IMAGE}, with a "
                                        "warning: it is not published; build and push your own)")
    parser.add_argument("--namespace", help="k8s namespace")
    parser.add_argument("--secret", help="k8s: the Secret whose keys become the pods' environment (default "
                                         "ragjudge-secrets); required: the pods do not start without it")
    parser.add_argument("--memory-per-node", metavar="QUANTITY",
                        help="k8s: memory a GPU worker pod requests and is limited to, a Kubernetes quantity "
                             "(default 4Gi per CPU)")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache-pvc", metavar="NAME",
                       help="k8s: a PersistentVolumeClaim (ReadWriteMany) every pod mounts as its Hugging Face cache, "
                            "so the driver's downloads serve every engine")
    cache.add_argument("--cache-host-path", metavar="DIR",
                       help=f"k8s: else the folder of each node that holds its pods' Hugging Face cache (default "
                            f"{K8S_CACHE_HOST_PATH}); each node's engines then fetch their own weights")
    parser.add_argument("--partition", help="slurm partition")
    parser.add_argument("--time", dest="time_limit", help="slurm time limit, e.g. 24:00:00")
    parser.add_argument("--project-dir", help="where the project lies for the job (slurm: shared fs; k8s: in image)")
    interpreter = parser.add_mutually_exclusive_group()
    interpreter.add_argument("--python", metavar="PATH",
                             help="slurm: the Python interpreter every node runs, by absolute path (default: the "
                                  "one running this command, virtualenv and all)")
    interpreter.add_argument("--venv", metavar="DIR", help="slurm: a virtualenv on the nodes, whose bin/python runs")
    parser.add_argument("--hf-cache", metavar="DIR",
                        help=f"slurm: the Hugging Face hub cache every node shares, exported as HF_HUB_CACHE "
                             f"(default: this machine's, which `ragjudge fetch` fills); {NO_HF_CACHE}: each node's "
                             "engines fetch their own")
    parser.add_argument("--address", help="ray: the cluster (dashboard URL or GCS address); else RAY_ADDRESS, "
                                          "else the sweep's cluster.address; never one found on this machine")
    parser.add_argument("--wait", action="store_true", default=None,
                        help="ray: wait for the job and return its status")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    flags = {k: getattr(args, k) for k in ("nodes", "gpus_per_node", "cpus_per_node", "image", "namespace",
                                           "partition", "time_limit", "secret", "project_dir", "address", "wait",
                                           "python", "venv", "hf_cache", "memory_per_node", "cache_pvc",
                                           "cache_host_path")}
    options = SubmitOptions(**{k: v for k, v in flags.items() if v is not None})
    try:
        return submit(args.sweep, args.overrides, args.to, options, dry_run=args.dry_run)
    except SubmitError as e:
        print(f"ragjudge submit: {e}", file=sys.stderr)
        return 2


__all__ = [
    "ConfigError",
    "SubmitError",
    "SubmitOptions",
    "ray_job",
    "render",
    "secret_names",
    "submit",
    "sweep_command",
]
