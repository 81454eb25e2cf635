"""`ragjudge submit`: the same `ragjudge run` command, sent to a Ray cluster, Slurm or Kubernetes (KubeRay).

Why one module: the three targets differ only in how the command reaches the cluster. Ray gets it through
the job submission API, with the repo as the job's working_dir so the cluster runs this code. Slurm and
Kubernetes get a file rendered from the templates in deploy/ (the templates are the source of truth; this
module only fills their @{...} fields). Deployment knobs live in `SubmitOptions`, not in the sweep schema:
they describe where a sweep runs, not what it computes.

Secrets never enter what is submitted: Slurm jobs inherit them from the submitting shell (sbatch
--export=ALL), KubeRay pods from a Kubernetes Secret by reference, Ray jobs from the cluster nodes' own
environment. Rendered text is checked for the values of secret-bearing environment variables and refused if
one appears (e.g. a key pasted into an override).

Every value pasted into a template stays what it was: one shell word in the batch script (shlex.quote, one line
where it lands in an #SBATCH directive), one YAML scalar in the RayJob (JSON strings are YAML), whose text is
parsed back before it is sent.
"""
from __future__ import annotations

import argparse
import json
import math
import operator
import os
import re
import shlex
import shutil
import string
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jobs.config import ConfigError, SweepConfig, credential_variables
from jobs.loading import load_sweep, ship_sweep
from jobs.loading.names import has_control
from jobs.store import redact
from jobs.sweep import ClusterUnreachable

REPO = Path(__file__).resolve().parents[2]  # the project: what a Ray job ships as its working_dir
DEPLOY = REPO / "deploy"
TARGETS = ("ray", "slurm", "k8s")
RAY_ADDRESS_VARIABLES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")  # a Ray job's cluster, the first set winning
AGENT_WAIT_S, AGENT_RETRY_S = 120.0, 2.0  # a Ray head's job agent still starting: how long to try again, how often
TEMPLATES = {"slurm": "slurm.sbatch", "k8s": "rayjob.yaml"}
K8S_PROJECT = "/app"  # where the image holds the project, unless --project-dir says otherwise
# Uploaded with the code otherwise (Ray also honours .gitignore); none of it is needed to run a sweep.
WORKING_DIR_EXCLUDES = [".git", ".venv", "results", "*.egg-info", "__pycache__", ".pytest_cache"]


class SubmitError(RuntimeError):
    """Submission could not happen (a missing tool, a refused secret, a failed job); the message says which."""


@dataclass
class SubmitOptions:
    """Where and how big: command-line flags, with the sweep's `cluster` section as defaults."""

    nodes: int = 1
    gpus_per_node: int = 8
    cpus_per_node: int | None = None  # else cluster.num_cpus, else 16 per GPU (at least 8)
    image: str = "ragjudge:0.1.0"  # k8s: an image holding the project at project_dir
    namespace: str = "default"  # k8s
    partition: str | None = None  # slurm
    time_limit: str = "24:00:00"  # slurm
    secret: str = "ragjudge-secrets"  # k8s: the Secret the pods read their environment from
    project_dir: str | None = None  # where the project lies for the job: slurm: this repo; k8s: /app
    address: str | None = None  # ray: else RAY_API_SERVER_ADDRESS / RAY_ADDRESS, else cluster.address, else none
    python: str = "python"
    ray_port: int = 6379  # slurm: the head's GCS port
    ray_head_args: str = ""  # slurm: more `ray start --head` flags, e.g. "--dashboard-port=8266"
    wait: bool = False  # ray: block until the job ends and exit with its status

    def cpus(self, sweep: SweepConfig) -> int:
        return self.cpus_per_node or sweep.cluster.num_cpus or max(8, 16 * self.gpus_per_node)


class _Template(string.Template):
    """Only `@{name}` is a field, so the `$`, `${...}` and `${a[@]}` of bash and YAML pass through."""

    delimiter = "@"
    pattern = r"@(?:(?P<escaped>(?!))|(?P<named>(?!))|{(?P<braced>[a-z_]+)}|(?P<invalid>(?!)))"


def secret_names(sweep: SweepConfig) -> list[str]:
    """Environment variables the sweep needs on the cluster, by name: S3 credentials, API judges' keys."""
    names = []
    if sweep.storage.root.startswith("s3://"):
        names += ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
    for model in sweep.models.values():
        names += credential_variables(model)
    return sorted(set(names))


def sweep_command(sweep_path: str | os.PathLike, overrides: list[str], python: str = "python") -> list[str]:
    """`python -m jobs run SWEEP k=v ...` as the job runs it from the project's root: a sweep inside the
    project by its path relative to the project (the same in any copy of it), one outside shipped in the
    command itself (`shipped:` and its composition, jobs.loading.ship_sweep), since the cluster cannot see
    the submitting machine's files."""
    path = Path(sweep_path).resolve()
    shown = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else ship_sweep(path)
    return [python, "-m", "jobs", "run", shown, *overrides]


def _job_name(sweep: SweepConfig) -> str:
    """A DNS-1123 label (Kubernetes names, Slurm job names): lowercase alphanumerics and '-'."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"ragjudge-{sweep.name}-{sweep.storage.run}".lower()).strip("-")
    return slug[:47].rstrip("-")


def signal_lead_s(sweep: SweepConfig) -> int:
    """Seconds from the stop signal to the hard end (Slurm: its warning before the time limit; Kubernetes: the
    head's terminationGracePeriodSeconds): the driver's grace period, and 60 s for Ray's shutdown and the
    requeue after it."""
    return math.ceil(sweep.storage.grace_s) + 60


def _numbers(**numbers: int) -> dict[str, str]:
    """Integer fields as text; anything else (a string from a Python caller) is refused, not pasted."""
    return {name: str(operator.index(value)) for name, value in numbers.items()}


def _directive(value: str, what: str) -> str:
    """A value for an #SBATCH line, as one shell word (sbatch reads its quotes there). A line break would end
    the comment and make the rest a command of the batch shell, so it is refused."""
    if has_control(value):
        raise SubmitError(f"{what} {value!r} holds a line break or another control character, which would end "
                          "its #SBATCH line")
    return shlex.quote(value)


def _slurm_fields(sweep: SweepConfig, shell: str, names: list[str], options: SubmitOptions) -> dict[str, str]:
    project = options.project_dir or str(REPO)
    directives = [f"#SBATCH --gpus-per-node={operator.index(options.gpus_per_node)}"] if options.gpus_per_node else []
    if options.partition:
        directives.append(f"#SBATCH --partition={_directive(options.partition, '--partition')}")
    return {"job_name": _job_name(sweep), "time_limit": _directive(options.time_limit, "--time"),
            "log_dir": _directive(str(Path(project, "results", "slurm")), "--project-dir's log folder"),
            "extra_directives": "\n".join(directives), "project_dir": shlex.quote(project),
            "secret_names": " ".join(map(shlex.quote, names)), "ray": "ray", "python": shlex.quote(options.python),
            "ray_temp_dir": "/tmp/ray_ragjudge_$SLURM_JOB_ID", "command": shell,
            "ray_head_args": shlex.join(shlex.split(options.ray_head_args)),
            **_numbers(nodes=options.nodes, cpus_per_node=options.cpus(sweep), gpus_per_node=options.gpus_per_node,
                       ray_port=options.ray_port, signal_lead_s=signal_lead_s(sweep))}


def _k8s_fields(sweep: SweepConfig, entrypoint: str, names: list[str], options: SubmitOptions) -> dict[str, str]:
    import ray

    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", sweep.name)[:63].strip("-_.") or "sweep"
    return {"job_name": _job_name(sweep), "namespace": json.dumps(options.namespace),
            "sweep_label": json.dumps(label), "entrypoint": json.dumps(entrypoint),
            "ray_version": json.dumps(ray.__version__), "image": json.dumps(options.image),
            "project_dir": json.dumps(options.project_dir or K8S_PROJECT), "secret": json.dumps(options.secret),
            "secret_names": ", ".join(map(json.dumps, names)) or "(none for this sweep)",  # in a comment: one line
            **_numbers(nodes=options.nodes, gpus_per_node=options.gpus_per_node, cpus_per_node=options.cpus(sweep),
                       job_stop_wait_s=math.ceil(sweep.storage.grace_s) + 30,
                       termination_grace_s=signal_lead_s(sweep))}


def _check_rayjob(text: str, entrypoint: str) -> None:
    """The rendered RayJob parses back as one document whose entrypoint is the one built: a value that escaped
    its scalar (a key of its own, a second document) fails here, loudly, instead of reaching the cluster."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise SubmitError(f"the rendered rayjob.yaml is not YAML: {str(e).splitlines()[0]}") from None
    spec = documents[0].get("spec") if len(documents) == 1 and isinstance(documents[0], dict) else None
    if not isinstance(spec, dict) or spec.get("entrypoint") != entrypoint:
        raise SubmitError("the rendered rayjob.yaml does not parse back to one RayJob running the sweep's command")


def _refuse_secrets(text: str, what: str) -> str:
    if redact(text) != text:
        raise SubmitError(f"{what} would contain the value of a secret environment variable; pass secrets by "
                          "name (api_key_env, a Kubernetes Secret, the job's environment), never as values")
    return text


def render(sweep_path: str | os.PathLike, overrides: list[str], target: str,
           options: SubmitOptions | None = None) -> str:
    """The Slurm batch script or the KubeRay RayJob manifest that runs this sweep, as text."""
    if target not in TEMPLATES:
        raise ValueError(f"render: target must be one of {', '.join(TEMPLATES)}, not {target!r}")
    options = options or SubmitOptions()
    sweep = load_sweep(sweep_path, overrides)
    command = sweep_command(sweep_path, list(overrides), options.python)
    names = secret_names(sweep)
    template = _Template((DEPLOY / TEMPLATES[target]).read_text(encoding="utf-8"))
    if target == "slurm":
        text = template.substitute(_slurm_fields(sweep, shlex.join(command), names, options))
    else:
        entrypoint = f"cd {shlex.quote(options.project_dir or K8S_PROJECT)} && {shlex.join(command)}"
        text = template.substitute(_k8s_fields(sweep, entrypoint, names, options))
        _check_rayjob(text, entrypoint)
    return _refuse_secrets(text, f"the rendered {TEMPLATES[target]}")


def ray_job(sweep_path: str | os.PathLike, overrides: list[str], options: SubmitOptions | None = None) -> dict:
    """The Ray job's submission: entrypoint and runtime_env (the repo as working_dir, no environment values)."""
    options = options or SubmitOptions()
    load_sweep(sweep_path, overrides)  # a bad config fails here, not minutes later on the cluster
    entrypoint = shlex.join(sweep_command(sweep_path, list(overrides), options.python))
    job = {"entrypoint": entrypoint, "runtime_env": {"working_dir": str(REPO), "excludes": WORKING_DIR_EXCLUDES}}
    _refuse_secrets(json.dumps(job), "the Ray job submission")
    return job


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
    while not (status := client.get_job_status(job_id)).is_terminal():
        time.sleep(2)
    log(client.get_job_logs(job_id)[-4000:])
    log(f"Ray job {job_id}: {status.value}")
    return 0 if status == JobStatus.SUCCEEDED else 1


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
    if target == "k8s" and not sweep.storage.root.startswith("s3://"):
        print(f"ragjudge: warning: storage.root={sweep.storage.root} is inside the pods and goes with them; "
              "use storage.root=s3://...", file=sys.stderr)
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
    parser.add_argument("--image", help="k8s: container image holding the project")
    parser.add_argument("--namespace", help="k8s namespace")
    parser.add_argument("--secret", help="k8s: the Secret whose keys become the pods' environment")
    parser.add_argument("--partition", help="slurm partition")
    parser.add_argument("--time", dest="time_limit", help="slurm time limit, e.g. 24:00:00")
    parser.add_argument("--project-dir", help="where the project lies for the job (slurm: shared fs; k8s: in image)")
    parser.add_argument("--address", help="ray: the cluster (dashboard URL or GCS address); else RAY_ADDRESS, "
                                          "else the sweep's cluster.address; never one found on this machine")
    parser.add_argument("--wait", action="store_true", default=None,
                        help="ray: wait for the job and return its status")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    flags = {k: getattr(args, k) for k in ("nodes", "gpus_per_node", "cpus_per_node", "image", "namespace",
                                           "partition", "time_limit", "secret", "project_dir", "address", "wait")}
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
