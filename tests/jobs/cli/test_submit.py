"""`ragjudge submit`: cluster.yaml and the deploy/ templates against their systems' own schemas, dry runs that
submit nothing, secrets kept out of everything rendered, a real Ray job through the job submission API, and
the rendered batch script under a real one-node Slurm (skipped where slurm-wlm and munge are not installed).

The real job runs on a Ray head this module starts itself (`ray start --head --block` in its own process
group, its own temp dir and ports, token authentication), so it cannot collide with the session's ray.init
cluster from conftest.py or with any other Ray on the machine; teardown ends only the processes it started.
"""
import contextlib
import copy
import gzip
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import jsonschema
import pytest
import yaml

from jobs.cli import main
from jobs.cli.submit import REPO, SubmitError, SubmitOptions, ray_job, render, submit
from jobs.config import ConfigError, to_dict
from jobs.loading import PROJECT_CONF, load_sweep
from jobs.sweep.cluster import ClusterUnreachable, check_answers

DATA = REPO / "data" / "rag_rewardbench_appendix_d.jsonl"
SWEEP = """
name: submit
benchmarks:
  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{data}"]}}
models:
  - {{name: tiny, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers,
      max_model_len: 4096, batch_size: 8}}
storage: {{root: "{root}", run: submit}}
"""
# An API judge and S3 storage: the sweep needs secrets on the cluster, which must travel by name only.
SECRET_SWEEP = SWEEP.replace("storage:", """  - {{name: judge, path: gpt-4o-mini, kind: api, engine: http,
      api: {{key_env: RAGJUDGE_TEST_API_KEY, base_env: RAGJUDGE_TEST_API_BASE}}}}
storage:""")
FAKE_SECRETS = {"RAGJUDGE_TEST_API_KEY": "sk-ragjudge-test-5b1f0c9e77d2",
                "AWS_SECRET_ACCESS_KEY": "aws-secret-ragjudge-0d9e8f7a6b",
                "AWS_ACCESS_KEY_ID": "AKIARAGJUDGETESTKEY1", "HF_TOKEN": "hf_ragjudgeTestToken4242"}


def _sweep(folder: Path, text: str, root) -> Path:
    path = folder / "conf" / "sweeps" / "submit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.format(data=DATA, root=root))
    return path


@pytest.fixture
def sweep_file(tmp_path):
    return _sweep(tmp_path, SWEEP, tmp_path / "results")


@pytest.fixture
def secret_sweep(tmp_path, monkeypatch):
    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    return _sweep(tmp_path, SECRET_SWEEP, "s3://ragjudge-test/runs")


# ---- (a) cluster.yaml against the schema shipped inside the ray package ----

def test_cluster_yaml_validates_against_rays_own_schema():
    import ray.autoscaler
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load((REPO / "cluster.yaml").read_text())
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)
    validate_config(prepare_config(copy.deepcopy(config)))  # what `ray up` does before it launches anything

    gpu = config["available_node_types"]["gpu_8x_h100"]
    assert gpu["resources"]["GPU"] == 8 and gpu["min_workers"] == 0 and gpu["max_workers"] >= 1
    assert config["provider"]["type"] == "aws" and config["head_node_type"] == "head"
    assert any(".[gpu]" in command for command in config["setup_commands"])
    typo = {**config, "max_worker": 4}  # the schema is strict: a misspelt key fails, so the check means something
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(typo, schema)


# ---- (b) the rendered RayJob against KubeRay's CRD ----

def _crd_schema() -> dict:
    """The v1 openAPIV3Schema, with Kubernetes' pruning made an error: unknown fields fail, as with
    `kubectl apply --validate=strict`, instead of vanishing silently."""
    # 1.4 MB of YAML (bundled: tests/data/README.md): libyaml's safe loader reads it to the same document in
    # 0.3-0.6 s, the pure-Python one in 2.7-3.6 s.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with gzip.open(REPO / "tests" / "data" / "kuberay_rayjobs_crd.yaml.gz", "rt", encoding="utf-8") as f:
        crd = yaml.load(f, Loader=loader)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")

    def strict(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                strict(value)
        elif isinstance(node, list):
            for value in node:
                strict(value)
        return node

    return strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))


def _cel_fields(schema: dict, manifest, path="") -> list[str]:
    """Fields of the manifest whose schema carries CEL rules (x-kubernetes-validations) jsonschema cannot run."""
    found = [path] if "x-kubernetes-validations" in schema else []
    if isinstance(manifest, dict):
        for key, value in manifest.items():
            sub = schema.get("properties", {}).get(key)
            if sub:
                found += _cel_fields(sub, value, f"{path}.{key}")
    elif isinstance(manifest, list) and "items" in schema:
        for value in manifest:
            found += _cel_fields(schema["items"], value, f"{path}[]")
    return found


SHM = {"name": "shm", "emptyDir": {"medium": "Memory"}}
HF_ENV = [{"name": "HF_HOME", "value": "/cache/huggingface"}, {"name": "HF_HUB_CACHE", "value": "/cache/huggingface/hub"}]
MOUNTS = [{"name": "shm", "mountPath": "/dev/shm"}, {"name": "hf-cache", "mountPath": "/cache/huggingface"}]


def _pods(manifest: dict) -> list[dict]:
    """The head's pod spec and the GPU workers'."""
    cluster = manifest["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"]["template"]["spec"], cluster["workerGroupSpecs"][0]["template"]["spec"]]


@pytest.mark.parametrize("cache,volume", [
    ({}, {"name": "hf-cache", "hostPath": {"path": "/var/cache/ragjudge/huggingface", "type": "DirectoryOrCreate"}}),
    ({"cache_host_path": "/mnt/nvme/hf"}, {"name": "hf-cache", "hostPath": {"path": "/mnt/nvme/hf",
                                                                             "type": "DirectoryOrCreate"}}),
    ({"cache_pvc": "hf-weights"}, {"name": "hf-cache", "persistentVolumeClaim": {"claimName": "hf-weights"}}),
], ids=["node's default folder", "node's folder", "shared claim"])
def test_rendered_rayjob_validates_against_the_kuberay_crd(sweep_file, cache, volume):
    schema = _crd_schema()
    options = SubmitOptions(nodes=3, gpus_per_node=8, image="registry.example/ragjudge:1", namespace="evals", **cache)
    manifest = yaml.safe_load(render(sweep_file, ["storage.run=r1"], "k8s", options))
    jsonschema.Draft7Validator(schema).validate(manifest)
    assert _cel_fields(schema, manifest) == []
    assert manifest["apiVersion"] == "ray.io/v1" and manifest["kind"] == "RayJob"
    name = manifest["metadata"]["name"]
    assert len(name) <= 47 and name.replace("-", "").isalnum() and name == name.lower()
    assert manifest["metadata"]["namespace"] == "evals"
    assert "python -m jobs run" in manifest["spec"]["entrypoint"]
    assert manifest["spec"]["entrypoint"].endswith("storage.run=r1")
    worker = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert worker["maxReplicas"] == 3
    assert worker["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    # Every pod: /dev/shm in memory, the weights cache mounted where HF_HOME points, the Secret required.
    for pod in _pods(manifest):
        container = pod["containers"][0]
        assert pod["volumes"] == [SHM, volume] and container["volumeMounts"] == MOUNTS
        assert [e for e in container["env"] if e["name"].startswith("HF_")] == HF_ENV
        assert container["envFrom"] == [{"secretRef": {"name": "ragjudge-secrets"}}]
        assert container["image"] == "registry.example/ragjudge:1"
    # The GPU worker asks for memory and is held to it: 4Gi for each of its 16 x 8 = 128 CPUs.
    resources = _pods(manifest)[1]["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "128", "memory": "512Gi", "nvidia.com/gpu": "8"}

    broken = copy.deepcopy(manifest)  # the strict schema catches a misspelt field
    broken["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["maxReplica"] = 3
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(broken)


# ---- (c) the rendered Slurm script ----

def test_rendered_slurm_script_is_valid_bash_and_runs_the_sweep(sweep_file, tmp_path):
    text = render(sweep_file, ["storage.run=r2", "models.tiny.batch_size=4"], "slurm",
                  SubmitOptions(nodes=4, gpus_per_node=8, partition="h100", time_limit="02:00:00"))
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    subprocess.run(["bash", "-n", str(script)], check=True)
    # the sweep lies outside the project: it travels in the command, composed, not as this machine's path
    command = re.search(r"python -m jobs run (shipped:\S+) storage.run=r2 models.tiny.batch_size=4", text)
    assert command and str(tmp_path) not in command.group(0).replace(str(DATA), "")
    assert to_dict(load_sweep(command.group(1))) == {**to_dict(load_sweep(sweep_file)),
                                                       "conf": [str(PROJECT_CONF)]}
    for directive in ("--nodes=4", "--gpus-per-node=8", "--partition=h100", "--time=02:00:00",
                      "--signal=B:TERM@90", "--requeue"):  # storage.grace_s 30 s + 60 s
        assert f"#SBATCH {directive}" in text
    assert not re.search(r"@\{[a-z_]+\}", text)  # every field filled
    cpu_only = render(sweep_file, [], "slurm", SubmitOptions(nodes=1, gpus_per_node=0))
    assert "--gpus-per-node" not in cpu_only  # no GRES request on a CPU partition


STUB_DRIVER = """
import signal, sys, time
from pathlib import Path
folder, code, linger = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
def stop(signum, frame):
    (folder / "signal").write_text(signal.Signals(signum).name)
    time.sleep(linger)  # storing its answers
    (folder / "done").write_text("")
    sys.exit(code)
signal.signal(signal.SIGTERM, stop)
(folder / "ready").write_text("")
time.sleep(0 if code == 1 else 60)
sys.exit(code)
"""


@pytest.mark.parametrize("code,signalled", [(143, True), (1, False)], ids=["interrupted", "failed"])
def test_the_batch_shell_forwards_slurms_signal_and_requeues_an_interrupted_driver(sweep_file, tmp_path, code,
                                                                                     signalled):
    """The rendered script's driver section with a stand-in driver and a stand-in scontrol: SIGTERM to the
    batch shell (what --signal=B:TERM sends) reaches the driver, and its exit 143 requeues the job; another
    exit code does not."""
    text = render(sweep_file, [], "slurm", SubmitOptions(nodes=1, gpus_per_node=0))
    section = text.split("# ---- the driver", 1)[1].split("\n", 1)[1]  # from the line after the marker
    stub = tmp_path / "driver.py"
    stub.write_text(STUB_DRIVER)
    section = re.sub(r"^.*python -m jobs run .* &$", f"{sys.executable} {stub} {tmp_path} {code} 0 &", section,
                     count=1, flags=re.MULTILINE)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(f'#!/bin/bash\necho "$@" >> {tmp_path}/scontrol.log\n')
    (bin_dir / "scontrol").chmod(0o755)
    shell = subprocess.Popen(["bash", "-c", "set -euo pipefail\n" + section], stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "4242"})
    deadline = time.time() + 60
    while not (tmp_path / "ready").exists():
        assert time.time() < deadline and shell.poll() is None, shell.communicate()
        time.sleep(0.05)
    if signalled:
        shell.send_signal(signal.SIGTERM)
    _, err = shell.communicate(timeout=60)
    assert shell.returncode == code, err
    assert (tmp_path / "signal").exists() == signalled
    requeued = (tmp_path / "scontrol.log").read_text() if (tmp_path / "scontrol.log").exists() else ""
    assert requeued == ("requeue 4242\n" if signalled else ""), err


def test_a_sweep_inside_the_project_is_named_by_its_relative_path_in_every_target():
    sweep = REPO / "conf" / "sweeps" / "demo.yaml"
    options = SubmitOptions(nodes=1, gpus_per_node=0, project_dir="/cluster/home/ragjudge",
                            venv="/cluster/home/ragjudge/.venv", hf_cache="/cluster/hf")
    slurm = render(sweep, ["storage.run=x"], "slurm", options)
    k8s = render(sweep, ["storage.run=x"], "k8s")
    entrypoint = ray_job(sweep, ["storage.run=x"])["entrypoint"]
    for text in (slurm, k8s, entrypoint):
        assert "python -m jobs run conf/sweeps/demo.yaml storage.run=x" in text
    assert str(REPO) not in slurm + k8s + entrypoint  # no path of the submitting machine, given the nodes' own
    assert "/cluster/home/ragjudge/.venv/bin/python -m jobs run conf/sweeps/demo.yaml" in slurm


def _shellcheck(script: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("shellcheck")
    if tool is None:  # CI installs it (.ci/run) and fails on a skip tests/allowed_skips.txt does not list
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    return subprocess.run([tool, "--shell=bash", "--severity=style", "--format=gcc", str(script)],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize("options,justified", [
    (SubmitOptions(nodes=4, gpus_per_node=8, partition="h100"), set()),
    (SubmitOptions(nodes=1, gpus_per_node=0, venv="/opt/ragjudge env", hf_cache="none"), set()),
    # SC2016 ("expressions don't expand in single quotes") on the two lines holding the interpreter's path: its
    # `$(touch x)` is kept from expanding on purpose, by shlex.quote.
    (SubmitOptions(nodes=2, python="/opt/U$(touch x)/python", hf_cache="/shared/a b'c",
                   ray_head_args="--dashboard-port=8266 --labels='{\"x\": \"a b\"}'"), {"SC2016"}),
], ids=["gpus", "cpu only, a venv, no shared cache", "hostile paths"])
def test_the_rendered_batch_script_is_shellcheck_clean(secret_sweep, tmp_path, options, justified):
    script = tmp_path / "job.sbatch"
    script.write_text(render(secret_sweep, ["storage.run=sc"], "slurm", options))
    checked = _shellcheck(script)
    findings = [(int(line.split(":")[1]), line.rsplit("[", 1)[1].rstrip("]")) for line in checked.stdout.splitlines()]
    lines = script.read_text().splitlines()
    assert {code for _, code in findings} == justified, checked.stdout + checked.stderr
    assert all("touch x" in lines[number - 1] for number, _ in findings), checked.stdout
    # ...and it would say so: the script's old way of reading the node list (word-split command output)
    script.write_text(script.read_text().replace(
        'mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))'))
    assert "SC2207" in _shellcheck(script).stdout


def _preamble(text: str) -> str:
    """The batch script from `set -euo pipefail` up to its secret-name loop: the interpreter and the cache."""
    return text[text.index("set -euo pipefail"):text.index("for name in")]


def test_the_batch_script_runs_its_own_interpreter_and_never_one_on_path(sweep_file, tmp_path):
    """A `python`, `python3` or `ray` first on the nodes' PATH (another interpreter, without ray) is never run:
    the interpreter that rendered the script is, by its absolute path, and it finds the project and Ray."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python", "python3", "ray"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho {name} >> "{tmp_path}/ran"\nexit 97\n')
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    text = render(sweep_file, [], "slurm", SubmitOptions(nodes=1, gpus_per_node=0, hf_cache="/shared/hf"))
    assert f"\npython={shlex.quote(os.path.abspath(sys.executable))}\n" in text
    for step in ('"$python" -m ray.scripts.scripts start --head', '"$python" -m ray.scripts.scripts start --address',
                 '"$python" - "${#nodes[@]}" <<\'PY\'', f"{shlex.quote(os.path.abspath(sys.executable))} -m jobs run "):
        assert step in text  # Ray's head, its workers, the join check, the driver
    done = subprocess.run(["bash", "-c", _preamble(text) + 'printf %s "$HF_HUB_CACHE"'], env=env,
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "/shared/hf"), done.stderr
    assert not (tmp_path / "ran").exists()

    # An interpreter that cannot import ray and the project stops the job at once, in one line that says why.
    other = tmp_path / "other" / "python"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\nexit 1\n")
    other.chmod(0o755)
    text = render(sweep_file, [], "slurm", SubmitOptions(nodes=1, gpus_per_node=0, python=str(other)))
    done = subprocess.run(["bash", "-c", _preamble(text) + "echo went on"], env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and "went on" not in done.stdout
    assert done.stderr.splitlines() == [
        (f"ragjudge: {other} cannot import ragjudge (jobs) and ray in {REPO} on {socket.gethostname()}; submit again "
        "with --python or --venv naming the environment the nodes have")]


def test_the_batch_script_exports_the_hugging_face_cache_the_download_plan_fills(sweep_file, capsys):
    from huggingface_hub import constants

    text = render(sweep_file, [], "slurm", SubmitOptions(nodes=1, gpus_per_node=0))
    assert f"\nexport HF_HUB_CACHE={shlex.quote(constants.HF_HUB_CACHE)}\n" in text  # what `ragjudge fetch` fills
    assert main(["submit", str(sweep_file), "--to", "slurm", "--dry-run", "--hf-cache", "none"]) == 0
    out, err = capsys.readouterr()
    assert "HF_HUB_CACHE" not in out and err.splitlines() == [
        "ragjudge: no shared Hugging Face cache (--hf-cache none): each node's engines fetch their own weights"]
    assert ("# No shared Hugging Face cache (--hf-cache none): each node's engines fetch their own weights into "
            "that node's cache.") in out.splitlines()


def test_the_rayjob_says_what_it_needs_that_it_cannot_carry(secret_sweep, capsys):
    """The default image, the Secret the pods need and a cache of each node's own are each a line on stderr;
    an image, and a claim every pod shares, are not."""
    assert main(["submit", str(secret_sweep), "--to", "k8s", "--dry-run"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        ("ragjudge: warning: no --image: the pods run ragjudge:0.1.0, which no registry serves; build an image holding "
        "this project in /app (pip install '.[gpu]') that every node can pull, and give --image REGISTRY/NAME:TAG"),
        ("ragjudge: the pods do not start without the Secret ragjudge-secrets in namespace default (keys this sweep "
        "needs: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, RAGJUDGE_TEST_API_BASE, RAGJUDGE_TEST_API_KEY; HF_TOKEN for "
        "gated weights): kubectl create secret generic ragjudge-secrets --namespace default --from-env-file=FILE"),
        ("ragjudge: the weights cache is each node's own folder \"/var/cache/ragjudge/huggingface\" (hostPath): each "
        "node's engines fetch their own weights; --cache-pvc shares one cache between every pod")]
    assert main(["submit", str(secret_sweep), "--to", "k8s", "--dry-run", "--image", "reg.example/rj:2",
                 "--cache-pvc", "hf-weights", "--secret", "rj-keys", "--namespace", "evals"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        ("ragjudge: the pods do not start without the Secret rj-keys in namespace evals (keys this sweep needs: "
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, RAGJUDGE_TEST_API_BASE, RAGJUDGE_TEST_API_KEY; HF_TOKEN for gated "
        "weights): kubectl create secret generic rj-keys --namespace evals --from-env-file=FILE")]
    assert ("# the claim hf-weights, in every pod: the driver's downloads fill it and every engine reads it."
            in out.splitlines())


@pytest.mark.parametrize("flags,line", [
    (["--to", "slurm", "--python", "python3"], "--python python3: give its absolute path as the nodes see it"),
    (["--to", "slurm", "--venv", ".venv"], "--venv .venv: give its absolute path as the nodes see it"),
    (["--to", "slurm", "--hf-cache", "hf"], "--hf-cache hf: give the cache's absolute path on the nodes, or none"),
    (["--to", "k8s", "--memory-per-node", "lots"], ("--memory-per-node 'lots': give a Kubernetes quantity above 0, "
                                                   "e.g. 512Gi")),
    (["--to", "k8s", "--memory-per-node", "0Gi"], ("--memory-per-node '0Gi': give a Kubernetes quantity above 0, "
                                                  "e.g. 512Gi")),
    (["--to", "k8s", "--cache-host-path", "cache"], "--cache-host-path cache: give an absolute path on the nodes"),
    (["--to", "k8s", "--cache-pvc", "HF_Weights"], ("--cache-pvc 'HF_Weights': a Kubernetes name is lowercase "
                                                   "letters, digits, '-' and '.', starting and ending with a letter "
                                                   "or digit")),
    (["--to", "k8s", "--secret", "keys\nkind: Pod"], ("--secret 'keys\\nkind: Pod': a Kubernetes name is lowercase "
                                                     "letters, digits, '-' and '.', starting and ending with a letter "
                                                     "or digit")),
], ids=["relative python", "relative venv", "relative cache", "no quantity", "no memory", "relative host path",
        "claim name", "secret name"])
def test_a_bad_job_file_option_is_one_line(sweep_file, capsys, flags, line):
    assert main(["submit", str(sweep_file), "--dry-run", *flags]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [f"ragjudge submit: {line}"]


def test_two_interpreters_or_two_caches_are_refused(sweep_file):
    with pytest.raises(SubmitError, match="give --python or --venv, not both"):
        render(sweep_file, [], "slurm", SubmitOptions(python="/usr/bin/python3", venv="/opt/venv"))
    with pytest.raises(SubmitError, match="give --cache-pvc or --cache-host-path, not both"):
        render(sweep_file, [], "k8s", SubmitOptions(cache_pvc="hf", cache_host_path="/hf"))
    for flags in (["--python", "/a", "--venv", "/b"], ["--cache-pvc", "hf", "--cache-host-path", "/hf"]):
        with pytest.raises(SystemExit):  # argparse: not allowed with the other
            main(["submit", str(sweep_file), "--to", "slurm", "--dry-run", *flags])


# ---- (d) dry runs print and submit nothing; real runs call the tool with the rendered file ----

def _fake_tools(folder: Path) -> Path:
    """sbatch and kubectl stand-ins that record their arguments and stdin: proof of what was (not) called."""
    folder.mkdir()
    for tool in ("sbatch", "kubectl"):
        path = folder / tool
        path.write_text(f'#!/bin/sh\necho "$@" > "{folder}/{tool}.args"\ncat > "{folder}/{tool}.stdin"\n'
                        f'echo "{tool} accepted"\n')
        path.chmod(0o755)
    return folder


@pytest.mark.parametrize("target", ["slurm", "k8s", "ray"])
def test_dry_run_prints_and_submits_nothing(sweep_file, tmp_path, monkeypatch, capsys, target):
    tools = _fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")

    def no_client(*args, **kwargs):
        raise AssertionError("a dry run must not contact a Ray cluster")

    monkeypatch.setattr("ray.job_submission.JobSubmissionClient", no_client)
    assert main(["submit", str(sweep_file), "--to", target, "--dry-run", "storage.run=dry"]) == 0
    printed = capsys.readouterr().out
    assert "-m jobs run" in printed and "storage.run=dry" in printed
    assert sorted(p.name for p in tools.iterdir()) == ["kubectl", "sbatch"]  # neither tool ran


@pytest.mark.parametrize("target,tool", [("slurm", "sbatch"), ("k8s", "kubectl")])
def test_submit_hands_the_rendered_file_to_the_tool(sweep_file, tmp_path, monkeypatch, target, tool):
    tools = _fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    options = SubmitOptions(project_dir=str(tmp_path / "project"))
    assert submit(sweep_file, ["storage.run=real"], target, options, log=lambda _: None) == 0
    assert (tools / f"{tool}.stdin").read_text() == render(sweep_file, ["storage.run=real"], target, options)
    if tool == "kubectl":
        assert (tools / "kubectl.args").read_text().split() == ["apply", "-f", "-"]


@pytest.mark.parametrize("target,tool", [("slurm", "sbatch"), ("k8s", "kubectl")])
def test_a_missing_tool_is_an_error_naming_it(sweep_file, tmp_path, monkeypatch, capsys, target, tool):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    with pytest.raises(SubmitError, match=f"`{tool}` was not found"):
        submit(sweep_file, [], target, SubmitOptions(project_dir=str(tmp_path)), log=lambda _: None)
    assert main(["submit", str(sweep_file), "--to", target, "--project-dir", str(tmp_path)]) == 2
    assert f"`{tool}` was not found" in capsys.readouterr().err


# ---- (e) secrets in the environment never reach what is rendered or submitted ----

def test_secrets_are_passed_by_name_never_by_value(secret_sweep, monkeypatch, capsys):
    monkeypatch.setattr("ray.job_submission.JobSubmissionClient", None)  # dry runs only
    outputs = {target: render(secret_sweep, [], target) for target in ("slurm", "k8s")}
    for target in ("slurm", "k8s", "ray"):
        assert main(["submit", str(secret_sweep), "--to", target, "--dry-run"]) == 0
        outputs[f"{target} dry run"] = capsys.readouterr().out
    for what, text in outputs.items():
        leaked = [name for name, value in FAKE_SECRETS.items() if value in text]
        assert not leaked, f"{what} carries the value of {leaked}"
    for name in ("RAGJUDGE_TEST_API_KEY", "AWS_SECRET_ACCESS_KEY"):  # ...but names what it needs
        assert name in outputs["slurm"] and name in outputs["k8s"]
    manifest = yaml.safe_load(outputs["k8s"])
    head = manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["envFrom"] == [{"secretRef": {"name": "ragjudge-secrets"}}]
    assert head["env"] == [{"name": "RAY_JOB_STOP_WAIT_TIME_S", "value": "60"}, *HF_ENV]  # no value but paths

    # A secret's value pasted into an override is refused rather than written out.
    pasted = [f"storage.run={FAKE_SECRETS['RAGJUDGE_TEST_API_KEY']}"]
    for target in ("slurm", "k8s"):
        with pytest.raises(SubmitError, match="secret"):
            render(secret_sweep, pasted, target)
    assert main(["submit", str(secret_sweep), "--to", "ray", "--dry-run", *pasted]) == 2
    assert FAKE_SECRETS["RAGJUDGE_TEST_API_KEY"] not in capsys.readouterr().out


# ---- (f) a real Ray job through the job submission API ----

def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _processes_under(marker: str) -> list[int]:
    """Pids whose command line names `marker` (this module's own temp dir): what teardown may end."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head with the dashboard (the job server), token auth, in its own session; ended by pid."""
    temp = Path(tempfile.mkdtemp(prefix="rjsub", dir="/tmp"))  # short: Ray's socket paths have a length limit
    token = temp / "auth_token"
    token.write_text(secrets.token_hex(32))
    gcs, dashboard, client, agent_http, agent_grpc, metrics, runtime_env = _free_ports(7)
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
           "RAY_USAGE_STATS_ENABLED": "0", "PATH": f"{venv_bin}:{os.environ['PATH']}",
           "RAY_JOB_STOP_WAIT_TIME_S": "30"}  # as the rendered RayJob sets it on its head
    env.pop("RAY_ADDRESS", None)
    log = (temp / "head.log").open("w")
    head = subprocess.Popen(
        [str(Path(venv_bin, "ray")), "start", "--head", "--block", f"--port={gcs}", "--node-ip-address=127.0.0.1",
         "--num-cpus=2", "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
         f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent_http}",
         f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}",
         f"--runtime-env-agent-port={runtime_env}", f"--temp-dir={temp}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{dashboard}"
    try:
        deadline = time.time() + 180
        while True:
            try:
                request = urllib.request.Request(f"{url}/api/version",
                                                 headers={"Authorization": f"Bearer {token.read_text()}"})
                urllib.request.urlopen(request, timeout=5).read()
                break
            except (urllib.error.URLError, OSError):
                if head.poll() is not None or time.time() > deadline:
                    pytest.fail(f"the Ray head's job server did not come up:\n{(temp / 'head.log').read_text()}")
                time.sleep(1)
        # The job server hands a job to the head's dashboard agent, which may start later: the job server waits
        # 10 s for it, then refuses the job ("No available agent"), as it did on 2 loaded cores.
        try:
            check_answers(f"127.0.0.1:{agent_http}", max(1.0, deadline - time.time()))
        except ClusterUnreachable:
            pytest.fail(f"the Ray head's dashboard agent did not come up:\n{(temp / 'head.log').read_text()}")
        yield {"url": url, "token_path": str(token), "token": token.read_text(), "env": env, "temp": temp,
               "gcs": f"127.0.0.1:{gcs}"}
    finally:
        try:
            os.killpg(head.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.time() + 5
        while _processes_under(str(temp)) and time.time() < deadline:
            time.sleep(0.5)
        for pid in _processes_under(str(temp)):  # gcs_server ignores SIGTERM; ours are named by the temp dir
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        head.wait(timeout=30)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@contextlib.contextmanager
def _loopback_head(answers: list[tuple[int, bytes]], statuses: list[str | None] | None = None):
    """A loopback server speaking the job API's calls (GET /api/version, POST /api/jobs/, GET /api/jobs/ID and
    its /logs) to Ray's own JobSubmissionClient: each POST gets the next of `answers`, each status GET the next
    of `statuses` (None: no answer, HTTP 503; the last one stays); yields its URL and the jobs posted to it."""
    import http.server
    import threading

    import ray

    posted: list[dict] = []

    class Head(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.endswith("/logs"):
                return self._send(200, json.dumps({"logs": "the job's last lines\n"}).encode())
            if self.path.startswith("/api/jobs/"):
                status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
                if status is None:
                    return self._send(503, b"head restarting")
                job = {"type": "SUBMISSION", "status": status, "entrypoint": "python -m jobs run"}
                return self._send(200, json.dumps(job).encode())
            self._send(200, json.dumps({"version": "4", "ray_version": ray.__version__, "ray_commit": "x"}).encode())

        def do_POST(self):
            posted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self._send(*answers.pop(0))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Head)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posted
    finally:
        server.shutdown()


def _accepted(submission_id: str) -> tuple[int, bytes]:
    return 200, json.dumps({"job_id": None, "submission_id": submission_id}).encode()


@pytest.mark.integration
def test_a_ray_head_whose_job_agent_is_starting_is_asked_again_and_any_other_refusal_is_not(monkeypatch):
    """A head whose dashboard agent is still starting refuses a job with "No available agent" (its HTTP 500, Ray
    2.60's job_head.py) and starts nothing: the submission is sent again until the head takes it. Any other
    refusal is the caller's to see at once. The head is a loopback server (`_loopback_head`); a real head's
    agent starts too fast to catch reliably (the integration tests wait for it: `ray_head`)."""
    from ray.job_submission import JobSubmissionClient

    from jobs.cli import submit as submit_module

    monkeypatch.setattr(submit_module, "AGENT_RETRY_S", 0.01)
    busy = (500, b"No available agent to submit job, please try again later.")
    answers = [busy, busy, _accepted("raysubmit_7")]
    with _loopback_head(answers) as (url, posted):
        client = JobSubmissionClient(url)
        said: list[str] = []
        assert submit_module._submitted(client, {"entrypoint": "echo hi"}, said.append) == "raysubmit_7"
        assert len(posted) == 3 and {p["entrypoint"] for p in posted} == {"echo hi"} and len(said) == 2
        posted.clear()
        answers[:] = [(400, b"Invalid entrypoint")]
        with pytest.raises(RuntimeError, match="Invalid entrypoint"):
            submit_module._submitted(client, {"entrypoint": "echo hi"}, said.append)
        assert len(posted) == 1


def test_waiting_for_a_submitted_job_says_what_it_waits_for_and_bounds_a_silent_head(monkeypatch):
    """`submit --wait`: a line every JOB_LINE_S naming the job's status while it runs, a head that stops
    answering for a poll or two is asked again, and one silent past cluster.connect_timeout_s is one error
    naming the job (which may still run) instead of a wait without end."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    from jobs.cli import submit as submit_module
    from jobs.sweep import ClusterUnreachable

    monkeypatch.setattr(submit_module, "JOB_POLL_S", 0.01)
    monkeypatch.setattr(submit_module, "JOB_LINE_S", 0.0)  # a line each poll
    statuses = ["PENDING", "RUNNING", None, "RUNNING", "SUCCEEDED"]
    with _loopback_head([], statuses) as (url, _posted):
        said: list[str] = []
        status = submit_module.wait_for_job(JobSubmissionClient(url), "raysubmit_9", 5.0, said.append)
        assert status == JobStatus.SUCCEEDED
        assert said == ["Ray job raysubmit_9: PENDING for 0 min (`ray job logs -f raysubmit_9` follows its lines)",
                        "Ray job raysubmit_9: RUNNING for 0 min (`ray job logs -f raysubmit_9` follows its lines)",
                        "Ray job raysubmit_9: RUNNING for 0 min (`ray job logs -f raysubmit_9` follows its lines)"]
        statuses[:] = ["RUNNING", None]  # the head goes silent for good
        started = time.monotonic()
        with pytest.raises(ClusterUnreachable) as stopped:
            submit_module.wait_for_job(JobSubmissionClient(url), "raysubmit_9", 0.3, said.append)
        assert 0.3 <= time.monotonic() - started < 5
        assert str(stopped.value).startswith(
            f"the Ray head at {url} did not answer for 0 s (cluster.connect_timeout_s) while job raysubmit_9 ran (")
        assert str(stopped.value).endswith("the job may still run: `ray job status raysubmit_9`")


def test_submit_to_ray_without_an_address_is_one_line_and_connects_nowhere(sweep_file, monkeypatch, capsys):
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)

    def no_client(*args, **kwargs):
        raise AssertionError("submit must not look for a cluster it was not given")

    monkeypatch.setattr("ray.job_submission.JobSubmissionClient", no_client)
    assert main(["submit", str(sweep_file), "--to", "ray"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        ("ragjudge submit: no Ray cluster named: give --address (its dashboard, http://HEAD:8265, or its GCS address, "
        "HEAD:6379) or set RAY_ADDRESS; a cluster found on this machine is never used")]
    assert main(["submit", str(sweep_file), "--to", "ray", "--dry-run"]) == 0  # a dry run still shows the job
    out, err = capsys.readouterr()
    assert json.loads(out)["address"] is None and err.splitlines() == [
        "ragjudge: warning: no Ray cluster named (--address, RAY_ADDRESS); submitting would refuse"]


def test_submit_to_ray_goes_to_the_address_it_is_given_and_only_there(sweep_file, monkeypatch, capsys):
    """--address wins over RAY_ADDRESS (which Ray itself would let override it), RAY_ADDRESS over the sweep's
    cluster.address; an address that does not answer is one line, exit 1."""
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    answers = [_accepted("raysubmit_given"), _accepted("raysubmit_env")]
    with _loopback_head(answers) as (given, to_given), _loopback_head(answers) as (env, to_env):
        monkeypatch.setenv("RAY_ADDRESS", env)
        assert main(["submit", str(sweep_file), "--to", "ray", "--address", given]) == 0
        assert f"submitted Ray job raysubmit_given to {given}" in capsys.readouterr().out
        assert len(to_given) == 1 and to_env == [] and os.environ["RAY_ADDRESS"] == env  # put back afterwards
        assert main(["submit", str(sweep_file), "--to", "ray", f"cluster.address={given}"]) == 0
        assert f"submitted Ray job raysubmit_env to {env}" in capsys.readouterr().out
        assert len(to_given) == 1 and len(to_env) == 1
        assert "python -m jobs run" in to_given[0]["entrypoint"]
        assert to_env[0]["entrypoint"] == f"{to_given[0]['entrypoint']} cluster.address={given}"
    closed = f"http://127.0.0.1:{_free_ports(1)[0]}"
    assert main(["submit", str(sweep_file), "--to", "ray", "--address", closed]) == 1
    _out, err = capsys.readouterr()
    assert err.splitlines() == [
        (f"ragjudge: the Ray cluster at {closed} does not answer (Failed to connect to Ray at address: {closed}.); "
        "check --address or RAY_ADDRESS and that the head's dashboard is up")]


@pytest.mark.integration
def test_submit_to_ray_runs_the_sweep_as_a_job(ray_head, tmp_path):
    root = tmp_path / "results"
    sweep_file = _sweep(tmp_path, SWEEP, root)
    env = {**ray_head["env"], "RAY_ADDRESS": ray_head["url"], **FAKE_SECRETS}
    started = time.time()
    done = subprocess.run([sys.executable, "-m", "jobs", "submit", str(sweep_file), "--to", "ray", "--wait"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "SUCCEEDED" in output, output

    metrics = root / "submit" / "metrics" / "benchmark=rag_rewardbench" / "model=tiny" / "metrics.json"
    assert metrics.exists(), output
    assert json.loads(metrics.read_text())  # the job wrote the paper's metrics where the sweep says
    manifest = json.loads((root / "submit" / "manifest.json").read_text())
    assert manifest["cells"]["rag_rewardbench/tiny"]["status"] == "done"
    print(f"Ray job end to end: {time.time() - started:.1f}s")

    # What the cluster stored about the job (entrypoint, runtime_env, metadata) carries no secret values.
    request = urllib.request.Request(f"{ray_head['url']}/api/jobs/",
                                     headers={"Authorization": f"Bearer {ray_head['token']}"})
    jobs = urllib.request.urlopen(request, timeout=10).read().decode()
    assert "python -m jobs run" in jobs
    assert not [name for name, value in FAKE_SECRETS.items() if value in jobs]
    assert ray_head["token"] not in jobs


@pytest.mark.integration
def test_a_run_that_joins_a_head_wanting_a_token_without_one_is_one_line_naming_what_to_set(ray_head, tmp_path):
    """Ray's refusal is a page of traceback whose reason is only in its cause; the run says it in one line."""
    sweep_file = _sweep(tmp_path, SWEEP, tmp_path / "results")
    env = {name: value for name, value in ray_head["env"].items() if not name.startswith("RAY_AUTH")}
    done = subprocess.run([sys.executable, "-m", "jobs", "run", str(sweep_file), f"cluster.address={ray_head['gcs']}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"ragjudge: cannot join the Ray cluster at {ray_head['gcs']}: its head wants a token (Ray's token "
        "authentication); set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH (or RAY_AUTH_TOKEN) to the head's token")


def _job_client(env: dict, code: str) -> str:
    """Run `code` with `client`, a JobSubmissionClient of the test's head, in a process with the head's token;
    its output."""
    setup = "import os; from ray.job_submission import JobSubmissionClient; "
    client = "client = JobSubmissionClient(os.environ['RAY_API_SERVER_ADDRESS']); "
    return subprocess.run([sys.executable, "-c", setup + client + code], env=env, capture_output=True, text=True,
                          timeout=120, check=True).stdout.strip()


@pytest.mark.integration
def test_the_rayjob_heads_prestop_hook_stops_the_driver_with_sigterm_and_waits(ray_head, sweep_file, tmp_path):
    """An eviction's preStop hook, from the rendered RayJob, against a real job server: the running job's driver
    (a stand-in that takes 5 s to exit after SIGTERM, beyond Ray's default 3 s) gets SIGTERM, exits on its own,
    and the hook returns only after it has."""
    manifest = yaml.safe_load(render(sweep_file, [], "k8s"))
    head = manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    hook = head["lifecycle"]["preStop"]["exec"]["command"]
    stub = tmp_path / "driver.py"
    stub.write_text(STUB_DRIVER)
    env = {**ray_head["env"], "RAY_API_SERVER_ADDRESS": ray_head["url"]}
    job = _job_client(env, f"print(client.submit_job(entrypoint={f'{sys.executable} {stub} {tmp_path} 143 5'!r}))")
    deadline = time.time() + 120
    while not (tmp_path / "ready").exists():
        assert time.time() < deadline, _job_client(env, f"print(client.get_job_logs({job!r}))")
        time.sleep(0.2)
    start = time.perf_counter()
    stopped = subprocess.run(hook, env=env, capture_output=True, text=True, timeout=120, check=False)
    waited_s = time.perf_counter() - start
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert (tmp_path / "signal").read_text() == "SIGTERM" and (tmp_path / "done").exists()
    assert _job_client(env, f"print(client.get_job_status({job!r}).value)") == "STOPPED"
    print(f"preStop hook: the driver got SIGTERM and exited on its own; the hook returned {waited_s:.1f} s later")


# ---- (g) the rendered script under a real single-node Slurm (munged, slurmctld, slurmd started here) ----

SLURM_CONF = """ClusterName=ragjudgetest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.socket
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmdSpoolDir={d}/spool
StateSaveLocation={d}/state
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=4000 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture(scope="module")
def slurm():
    """A one-node Slurm cluster of its own (config, munge socket and state in a temp dir, free ports)."""
    tools = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol"]
    missing = [t for t in tools if not (shutil.which(t) or shutil.which(t, path="/usr/sbin"))]
    if missing or os.geteuid() != 0 or not Path("/etc/munge/munge.key").exists():
        pytest.skip(f"no local Slurm to run (missing: {missing or 'root or /etc/munge/munge.key'}); "
                    "apt-get install slurm-wlm munge")
    d = Path(tempfile.mkdtemp(prefix="rjslurm", dir="/tmp"))
    for sub in ("spool", "state"):
        (d / sub).mkdir()
    key = d / "munge.key"
    shutil.copyfile("/etc/munge/munge.key", key)
    key.chmod(0o600)
    ctld_port, slurmd_port = _free_ports(2)
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=socket.gethostname().split(".")[0], d=d, ctld_port=ctld_port,
                                      slurmd_port=slurmd_port, cpus=os.cpu_count()))
    env = {**os.environ, "SLURM_CONF": str(conf)}

    def sbin(name: str) -> str:
        return shutil.which(name) or shutil.which(name, path="/usr/sbin")

    subprocess.run([sbin("munged"), f"--key-file={key}", f"--socket={d}/munge.socket", f"--pid-file={d}/munged.pid",
                    f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed", "--force"], check=True)
    daemons = [subprocess.Popen([sbin(name), "-D", "-f", str(conf)], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for name in ("slurmctld", "slurmd")]
    try:
        deadline = time.time() + 60
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True,
                                           check=False).stdout:
            if time.time() > deadline:
                pytest.fail(f"Slurm did not come up:\n{(d / 'slurmctld.log').read_text()}")
            time.sleep(1)
        yield {"env": env, "dir": d}
    finally:
        for daemon in daemons:
            daemon.terminate()
            daemon.wait(timeout=30)
        pid_file = d / "munged.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass
        for pid in _processes_under(str(d)):  # slurmscriptd, stepd: named by this temp dir
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.integration
def test_submit_to_slurm_runs_the_rendered_script(slurm, tmp_path, monkeypatch):
    root = tmp_path / "results"
    sweep_file = _sweep(tmp_path, SWEEP, root)
    token = tmp_path / "ray_token"
    token.write_text(secrets.token_hex(32))
    for name, value in {**slurm["env"], "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
                        "RAY_USAGE_STATS_ENABLED": "0",
                        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}.items():
        monkeypatch.setenv(name, value)  # sbatch --export=ALL hands these to the job, by reference
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ports = _free_ports(7)
    head_args = " ".join(f"--{flag}={port}" for flag, port in zip(
        ("dashboard-port", "ray-client-server-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
         "metrics-export-port", "runtime-env-agent-port", "node-manager-port"), ports[1:]))
    options = SubmitOptions(nodes=1, gpus_per_node=0, cpus_per_node=os.cpu_count(), time_limit="00:15:00",
                            project_dir=str(REPO), ray_port=ports[0], ray_head_args=head_args)
    printed = []
    assert submit(sweep_file, [], "slurm", options, log=printed.append) == 0
    job_id = printed[0].split()[-1]  # "Submitted batch job N"
    deadline = time.time() + 600
    while subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True, check=False).stdout.strip():
        assert time.time() < deadline, "the Slurm job did not finish in 10 minutes"
        time.sleep(2)
    log = (REPO / "results" / "slurm" / f"ragjudge-{job_id}.out").read_text()
    state = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, check=False).stdout
    assert "JobState=COMPLETED" in state and "ExitCode=0:0" in state, log
    assert "[done] rag_rewardbench x tiny" in log, log
    assert (root / "submit" / "metrics" / "benchmark=rag_rewardbench" / "model=tiny" / "metrics.json").exists()
    assert not _processes_under(f"/tmp/ray_ragjudge_{job_id}/"), "the job's Ray processes outlived it"


# ---- (h) names and values pasted into the batch script and the RayJob stay one word, one scalar ----

# Shell and YAML syntax a hostile sweep or command line might carry; `{pwned}` is a file only a run command makes.
PAYLOADS = {"substitution": "U$(touch {pwned})", "backticks": "U`touch {pwned}`", "semicolon": "U; touch {pwned}",
            "newline": "U\ntouch {pwned}", "quotes": "U'\"; touch {pwned}; echo \"'"}


def _api_sweep(folder: Path, bench: str = "rag_rewardbench", model: str = "judge", **api: str) -> Path:
    """A sweep with one API judge (`api` its `api:` section's keys), written by a YAML library so any name
    survives into it as it is."""
    path = folder / "conf" / "sweeps" / "hostile.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({
        "name": "hostile", "benchmarks": [{"name": bench, "module": "rag_rewardbench", "data": [str(DATA)]}],
        "models": [{"name": model, "path": "gpt-4o-mini", "kind": "api", "engine": "http",
                    "api": {"key_env": "RAGJUDGE_TEST_API_KEY", **api}}],
        "storage": {"root": str(folder / "results"), "run": "hostile"}}))
    return path


@pytest.mark.parametrize("key", ["api.key_env", "api.base_env"])
@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_an_environment_variable_name_that_is_not_one_is_refused_at_load(tmp_path, capsys, key, payload):
    pwned = tmp_path / "PWNED"
    sweep_file = _api_sweep(tmp_path, **{key.removeprefix("api."): payload.format(pwned=pwned)})
    with pytest.raises(ConfigError) as error:
        load_sweep(sweep_file)
    message = str(error.value)
    assert message.startswith(f"{sweep_file}: key 'models.judge.{key}': ") and "\n" not in message
    assert "environment variable name" in message
    for target in ("slurm", "k8s", "ray"):
        assert main(["submit", str(sweep_file), "--to", target, "--dry-run"]) == 2
        out, err = capsys.readouterr()
        assert err.strip().splitlines() == [f"ragjudge: {message}"] and "for name in" not in out
    assert not pwned.exists()


def test_a_name_that_would_split_a_cell_key_or_a_line_is_refused_at_load(tmp_path):
    """Cell keys are "benchmark/model", split at the first '/': a benchmark's name may hold none, a model's
    may (hub ids); neither may hold a line break or another control character."""
    refused = [({"bench": "rag/rewardbench"}, "key 'benchmarks': benchmark name 'rag/rewardbench'"),
               ({"bench": "rag\nrewardbench"}, "key 'benchmarks': benchmark name 'rag\\nrewardbench'"),
               ({"model": "judge\nkind: api"}, "key 'models': model name 'judge\\nkind: api'"),
               ({"model": "judge\rx"}, "key 'models': model name 'judge\\rx'"),
               ({"model": "judge\u2028x"}, "key 'models': model name 'judge\\u2028x'"),
               ({"model": ""}, "key 'models': model name ''")]
    for names, message in refused:
        sweep_file = _api_sweep(tmp_path, **names)
        with pytest.raises(ConfigError) as error:
            load_sweep(sweep_file)
        assert str(error.value).startswith(f"{sweep_file}: {message} ") and "\n" not in str(error.value)
    # dots, spaces, unicode and a model's hub-style '/' are names still (partitions encode them: test_storage)
    allowed = load_sweep(_api_sweep(tmp_path, bench="RAG Reward.Bench v1 ü", model="org/judge-é ..x"))
    assert list(allowed.benchmarks) == ["RAG Reward.Bench v1 ü"] and list(allowed.models) == ["org/judge-é ..x"]


def _for_loop_names(script: str) -> list[str]:
    loop = re.search(r"^for name in (.*?); do$", script, re.DOTALL | re.MULTILINE)
    assert loop, script
    return shlex.split(loop.group(1))


def test_the_batch_script_quotes_every_word_it_pastes(sweep_file, tmp_path, monkeypatch):
    """Names and options reach the script as single shell words; running its secret-name loop runs nothing."""
    pwned = tmp_path / "PWNED"
    names = [p.format(pwned=pwned) for p in PAYLOADS.values()]
    monkeypatch.setattr("jobs.cli.job_files.secret_names", lambda sweep: names)  # past load's check: the quoting
    word = PAYLOADS["substitution"].format(pwned=pwned)
    options = SubmitOptions(nodes=1, gpus_per_node=2, partition=word, time_limit=f"1:00:00 {word}",
                            python=f"/opt/{word}", hf_cache=f"/shared/{word}", project_dir=str(tmp_path / "my project" / word),
                            ray_head_args=f"--dashboard-port=8266 --labels='{{\"x\": \"a b\"}}' {word}")
    text = render(sweep_file, [], "slurm", options)
    assert _for_loop_names(text) == names
    directives = [shlex.split(line) for line in text.splitlines() if line.startswith("#SBATCH")]
    assert ["#SBATCH", f"--partition={word}"] in directives
    assert ["#SBATCH", f"--time=1:00:00 {word}"] in directives
    assert ["#SBATCH", f"--output={tmp_path / 'my project' / word}/results/slurm/ragjudge-%j.out"] in directives
    head = shlex.split(next(line for line in text.splitlines()  # the last line of the head's flags
                            if line.lstrip().startswith("--disable-usage-stats")))
    extra = head[head.index("--disable-usage-stats") + 1:head.index("--block")]
    assert extra == ["--dashboard-port=8266", '--labels={"x": "a b"}', "U$(touch", f"{pwned})"]
    assert f"cd {shlex.quote(str(tmp_path / 'my project' / word))}\n" in text
    assert f"\npython={shlex.quote(f'/opt/{word}')}\n" in text  # the one interpreter of every step
    assert f"\nexport HF_HUB_CACHE={shlex.quote(f'/shared/{word}')}\n" in text
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    subprocess.run(["bash", "-n", str(script)], check=True)
    loop = text[text.index("for name in"):text.index("done\n") + 5]
    done = subprocess.run(["bash", "-c", loop], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert not pwned.exists(), done.stderr
    export = next(line for line in text.splitlines() if line.startswith("export HF_HUB_CACHE="))
    done = subprocess.run(["bash", "-c", f'{export}\nprintf %s "$HF_HUB_CACHE"'], capture_output=True, text=True,
                          check=True)
    assert done.stdout == f"/shared/{word}" and not pwned.exists()


@pytest.mark.parametrize("option", ["partition", "time_limit", "project_dir"])
def test_a_line_break_in_a_slurm_directive_is_refused(sweep_file, option):
    with pytest.raises(SubmitError, match=r"line break"):
        render(sweep_file, [], "slurm", SubmitOptions(**{option: "h100\necho pwned"}))


def _key_paths(node, path="") -> set[str]:
    if isinstance(node, dict):
        return {p for key, value in node.items() for p in {f"{path}.{key}"} | _key_paths(value, f"{path}.{key}")}
    if isinstance(node, list):
        return {p for value in node for p in _key_paths(value, f"{path}[]")}
    return set()


def test_the_rayjob_keeps_every_pasted_value_a_scalar(sweep_file, tmp_path, monkeypatch):
    """Hostile values, in the RayJob's fields and in the comment that names the secrets, parse back as the
    same document with the same keys, each value what was given."""
    plain = yaml.safe_load(render(sweep_file, [], "k8s"))
    names = [p.format(pwned=tmp_path / "PWNED") for p in PAYLOADS.values()] + ["X\nmetadata: {name: evil}"]
    monkeypatch.setattr("jobs.cli.job_files.secret_names", lambda sweep: names)
    hostile = "x\n  labels: {evil: 'yes'}\n# \"'"
    options = SubmitOptions(namespace=hostile, image=hostile, project_dir=f"/app {hostile}",
                            cache_host_path=f"/var/{hostile}")
    text = render(sweep_file, [], "k8s", options)
    documents = list(yaml.safe_load_all(text))
    assert len(documents) == 1 and _key_paths(documents[0]) == _key_paths(plain)
    manifest = documents[0]
    assert manifest["metadata"]["namespace"] == hostile and manifest["metadata"]["labels"] == plain["metadata"]["labels"]
    head = manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["image"] == hostile and head["workingDir"] == f"/app {hostile}"
    assert manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["volumes"][1]["hostPath"] == {
        "path": f"/var/{hostile}", "type": "DirectoryOrCreate"}
    assert manifest["spec"]["entrypoint"].startswith(f"cd {shlex.quote(f'/app {hostile}')} && python -m jobs run")


@pytest.mark.parametrize("edit", [
    lambda t: t + "---\nkind: Pod\n",  # a second document
    lambda t: t.replace("entrypoint: @{entrypoint}", 'entrypoint: "sh -c evil"  # @{entrypoint}'),
    lambda t: t.replace("entrypoint: @{entrypoint}", "entrypoint: [@{entrypoint}"),  # no longer YAML
], ids=["two documents", "another entrypoint", "broken"])
def test_a_rayjob_that_does_not_parse_back_to_what_was_built_is_refused(sweep_file, tmp_path, monkeypatch, edit):
    deploy = tmp_path / "deploy"
    shutil.copytree(REPO / "deploy", deploy)
    (deploy / "rayjob.yaml").write_text(edit((REPO / "deploy" / "rayjob.yaml").read_text()))
    monkeypatch.setattr("jobs.cli.job_files.DEPLOY", deploy)
    with pytest.raises(SubmitError, match="rayjob.yaml"):
        render(sweep_file, [], "k8s")
