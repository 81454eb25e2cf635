"""What `ragjudge submit` sends: the Slurm batch script and the KubeRay RayJob, rendered from the templates in
deploy/ (the templates are the source of truth; this module only fills their @{...} fields), and the Ray job's
submission (entrypoint and runtime_env). Deployment knobs live in `SubmitOptions`, not in the sweep schema: they
describe where a sweep runs, not what it computes.

Secrets never enter what is submitted: Slurm jobs inherit them from the submitting shell (sbatch
--export=ALL), KubeRay pods from a Kubernetes Secret by reference, Ray jobs from the cluster nodes' own
environment. Rendered text is checked for the values of secret-bearing environment variables and refused if
one appears (e.g. a key pasted into an override).

Every value pasted into a template stays what it was: one shell word in the batch script (shlex.quote, one line
where it lands in an #SBATCH directive), one YAML scalar in the RayJob (JSON strings are YAML), whose text is
parsed back before it is sent.
"""
from __future__ import annotations

import json
import math
import operator
import os
import re
import shlex
import string
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from benchmarks.boundary_types import JsonObject
from jobs.config import SweepConfig, credential_variables
from jobs.loading import load_sweep, ship_sweep
from jobs.loading.names import has_control
from jobs.store import redact

REPO = Path(__file__).resolve().parents[2]  # the project: what a Ray job ships as its working_dir
DEPLOY = REPO / "deploy"
TEMPLATES = {"slurm": "slurm.sbatch", "k8s": "rayjob.yaml"}
K8S_PROJECT = "/app"  # where the image holds the project, unless --project-dir says otherwise
DEFAULT_IMAGE = "ragjudge:0.1.0"  # k8s without --image: a name no registry serves, so it is warned about
K8S_HF_HOME = "/cache/huggingface"  # where every pod mounts its weights-cache volume (HF_HOME)
K8S_CACHE_HOST_PATH = "/var/cache/ragjudge/huggingface"  # each node's own cache, without --cache-pvc
NO_HF_CACHE = "none"  # slurm's --hf-cache for nodes that share no Hugging Face cache
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a Secret's or a claim's name
QUANTITY = re.compile(r"(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[kMGTPE])?")  # a Kubernetes memory quantity
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
    image: str | None = None  # k8s: an image holding the project at project_dir; None: DEFAULT_IMAGE, warned
    namespace: str = "default"  # k8s
    partition: str | None = None  # slurm
    time_limit: str = "24:00:00"  # slurm
    secret: str = "ragjudge-secrets"  # k8s: the Secret the pods read their environment from
    project_dir: str | None = None  # where the project lies for the job: slurm: this repo; k8s: /app
    address: str | None = None  # ray: else RAY_API_SERVER_ADDRESS / RAY_ADDRESS, else cluster.address, else none
    python: str | None = None  # slurm: the interpreter on the nodes, by absolute path; None: this one
    venv: str | None = None  # slurm: a virtual environment on the nodes, whose bin/python runs instead
    hf_cache: str | None = None  # slurm: HF_HUB_CACHE on every node; None: this machine's; NO_HF_CACHE: none shared
    memory_per_node: str | None = None  # k8s: a GPU worker's memory, a Kubernetes quantity; None: 4Gi per CPU
    cache_pvc: str | None = None  # k8s: a PersistentVolumeClaim every pod mounts as its shared weights cache
    cache_host_path: str | None = None  # k8s: else each node's own folder for it; None: K8S_CACHE_HOST_PATH
    ray_port: int = 6379  # slurm: the head's GCS port
    ray_head_args: str = ""  # slurm: more `ray start --head` flags, e.g. "--dashboard-port=8266"
    wait: bool = False  # ray: block until the job ends and exit with its status

    def cpus(self, sweep: SweepConfig) -> int:
        return self.cpus_per_node or sweep.cluster.num_cpus or max(8, 16 * self.gpus_per_node)

    def interpreter(self) -> str:
        """slurm: the Python every step of the job runs: --venv's, --python, else the one running this (a
        virtualenv's own link, not what it links to, so that the virtualenv's packages come with it)."""
        if self.python and self.venv:
            raise SubmitError("give --python or --venv, not both")
        chosen = str(Path(self.venv, "bin", "python")) if self.venv else self.python or os.path.abspath(sys.executable)
        if not os.path.isabs(chosen):
            raise SubmitError(f"{'--venv' if self.venv else '--python'} {self.venv or self.python}: give its absolute "
                              "path as the nodes see it")
        return chosen

    def hub_cache(self) -> str | None:
        """slurm: the Hugging Face hub cache every node shares (the one `ragjudge fetch` fills here, unless
        --hf-cache names another), or None where there is none."""
        if self.hf_cache == NO_HF_CACHE:
            return None
        from huggingface_hub import constants

        path = self.hf_cache or str(Path(constants.HF_HUB_CACHE).expanduser().absolute())
        if not os.path.isabs(path):
            raise SubmitError(f"--hf-cache {path}: give the cache's absolute path on the nodes, or {NO_HF_CACHE}")
        return path

    def memory(self, sweep: SweepConfig) -> str:
        """k8s: a GPU worker's memory; by default 4Gi per CPU, the ratio of the clouds' general-purpose nodes."""
        memory = self.memory_per_node or f"{4 * self.cpus(sweep)}Gi"
        if not QUANTITY.fullmatch(memory) or not float(re.sub(r"[A-Za-z]+$", "", memory)):
            raise SubmitError(f"--memory-per-node {memory!r}: give a Kubernetes quantity above 0, e.g. 512Gi")
        return memory

    def cache_volume(self) -> JsonObject:
        """k8s: the pods' weights-cache volume: the claim --cache-pvc names, else a folder of each node."""
        if self.cache_pvc and self.cache_host_path:
            raise SubmitError("give --cache-pvc or --cache-host-path, not both")
        if self.cache_pvc:
            return {"name": "hf-cache", "persistentVolumeClaim": {"claimName": _dns_name(self.cache_pvc, "--cache-pvc")}}
        path = self.cache_host_path or K8S_CACHE_HOST_PATH
        if not path.startswith("/"):
            raise SubmitError(f"--cache-host-path {path}: give an absolute path on the nodes")
        return {"name": "hf-cache", "hostPath": {"path": path, "type": "DirectoryOrCreate"}}


def _dns_name(name: str, flag: str) -> str:
    """A Kubernetes object's name, refused at once rather than when a pod first asks for it."""
    if not DNS_SUBDOMAIN.fullmatch(name):
        raise SubmitError(f"{flag} {name!r}: a Kubernetes name is lowercase letters, digits, '-' and '.', "
                          "starting and ending with a letter or digit")
    return name


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
            "secret_names": " ".join(map(shlex.quote, names)), "python": shlex.quote(options.interpreter()),
            "hf_cache": _slurm_hf_cache(options.hub_cache()), "command": shell,
            "ray_head_args": shlex.join(shlex.split(options.ray_head_args)),
            **_numbers(nodes=options.nodes, cpus_per_node=options.cpus(sweep), gpus_per_node=options.gpus_per_node,
                       ray_port=options.ray_port, signal_lead_s=signal_lead_s(sweep))}


def _slurm_hf_cache(path: str | None) -> str:
    if path is None:
        return (f"# No shared Hugging Face cache (--hf-cache {NO_HF_CACHE}): each node's engines fetch their own weights "
                "into that node's cache.")
    return ("# The Hugging Face cache the download plan assumes (`ragjudge fetch` fills it, the driver prefetches into\n"
            "# it), at one path on every node, so that every engine loads the snapshots fetched once.\n"
            f"export HF_HUB_CACHE={shlex.quote(path)}")


def _k8s_fields(sweep: SweepConfig, entrypoint: str, names: list[str], options: SubmitOptions) -> dict[str, str]:
    import ray

    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", sweep.name)[:63].strip("-_.") or "sweep"
    return {"job_name": _job_name(sweep), "namespace": json.dumps(options.namespace),
            "sweep_label": json.dumps(label), "entrypoint": json.dumps(entrypoint),
            "ray_version": json.dumps(ray.__version__), "image": json.dumps(options.image or DEFAULT_IMAGE),
            "project_dir": json.dumps(options.project_dir or K8S_PROJECT),
            "secret": json.dumps(_dns_name(options.secret, "--secret")), "memory": json.dumps(options.memory(sweep)),
            "hf_home": json.dumps(K8S_HF_HOME), "hf_hub_cache": json.dumps(f"{K8S_HF_HOME}/hub"),
            "cache_volume": json.dumps(options.cache_volume()), "cache_note": _k8s_cache_note(options.cache_volume()),
            "secret_names": ", ".join(map(json.dumps, names)) or "(none for this sweep)",  # in a comment: one line
            **_numbers(nodes=options.nodes, gpus_per_node=options.gpus_per_node, cpus_per_node=options.cpus(sweep),
                       job_stop_wait_s=math.ceil(sweep.storage.grace_s) + 30,
                       termination_grace_s=signal_lead_s(sweep))}


def _k8s_cache_note(volume: JsonObject) -> str:
    """One comment line: whose cache the pods share (a path as a JSON string, so that no line break ends it)."""
    if "persistentVolumeClaim" in volume:
        return (f"the claim {volume['persistentVolumeClaim']['claimName']}, in every pod: the driver's downloads "
                "fill it and every engine reads it")
    return (f"each node's own folder {json.dumps(volume['hostPath']['path'])} (hostPath): each node's engines fetch "
            "their own weights; --cache-pvc shares one cache between every pod")


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


def refuse_secrets(text: str, what: str) -> str:
    if redact(text) != text:
        raise SubmitError(f"{what} would contain the value of a secret environment variable; pass secrets by "
                          "name (api.key_env, a Kubernetes Secret, the job's environment), never as values")
    return text


def render(sweep_path: str | os.PathLike, overrides: list[str], target: str,
           options: SubmitOptions | None = None) -> str:
    """The Slurm batch script or the KubeRay RayJob manifest that runs this sweep, as text."""
    if target not in TEMPLATES:
        raise ValueError(f"render: target must be one of {', '.join(TEMPLATES)}, not {target!r}")
    options = options or SubmitOptions()
    sweep = load_sweep(sweep_path, overrides)
    # Slurm runs this machine's environment (or --python/--venv) on shared disks; a pod runs its image's `python`.
    command = sweep_command(sweep_path, list(overrides), options.interpreter() if target == "slurm" else "python")
    names = secret_names(sweep)
    template = _Template((DEPLOY / TEMPLATES[target]).read_text(encoding="utf-8"))
    if target == "slurm":
        text = template.substitute(_slurm_fields(sweep, shlex.join(command), names, options))
    else:
        entrypoint = f"cd {shlex.quote(options.project_dir or K8S_PROJECT)} && {shlex.join(command)}"
        text = template.substitute(_k8s_fields(sweep, entrypoint, names, options))
        _check_rayjob(text, entrypoint)
    return refuse_secrets(text, f"the rendered {TEMPLATES[target]}")


def notes(sweep: SweepConfig, target: str, options: SubmitOptions) -> list[str]:
    """What a user must know of the file rendered for `target` before it runs, a line each."""
    if target == "slurm":
        return [] if options.hub_cache() else [
            f"no shared Hugging Face cache (--hf-cache {NO_HF_CACHE}): each node's engines fetch their own weights"]
    if target != "k8s":
        return []
    namespace = shlex.quote(options.namespace)
    lines = [] if sweep.storage.root.startswith("s3://") else [
        f"warning: storage.root={sweep.storage.root} is inside the pods and goes with them; use storage.root=s3://..."]
    if options.image is None:
        lines.append(f"warning: no --image: the pods run {DEFAULT_IMAGE}, which no registry serves; build an image "
                     f"holding this project in {options.project_dir or K8S_PROJECT} (pip install '.[gpu]') that every "
                     "node can pull, and give --image REGISTRY/NAME:TAG")
    lines.append(f"the pods do not start without the Secret {options.secret} in namespace {namespace} (keys this "
                 f"sweep needs: {', '.join(secret_names(sweep)) or 'none'}; HF_TOKEN for gated weights): kubectl "
                 f"create secret generic {options.secret} --namespace {namespace} --from-env-file=FILE")
    if "hostPath" in (volume := options.cache_volume()):
        lines.append(f"the weights cache is {_k8s_cache_note(volume)}")
    return lines


def ray_job(sweep_path: str | os.PathLike, overrides: list[str], options: SubmitOptions | None = None) -> dict:
    """The Ray job's submission: entrypoint and runtime_env (the repo as working_dir, no environment values)."""
    options = options or SubmitOptions()
    load_sweep(sweep_path, overrides)  # a bad config fails here, not minutes later on the cluster
    entrypoint = shlex.join(sweep_command(sweep_path, list(overrides)))  # the cluster's own `python`
    job = {"entrypoint": entrypoint, "runtime_env": {"working_dir": str(REPO), "excludes": WORKING_DIR_EXCLUDES}}
    refuse_secrets(json.dumps(job), "the Ray job submission")
    return job
