# ==== storage fixtures (jobs/store/run_root.py): a real S3-compatible server on loopback, a shared local Ray ====
import os as _os
import socket as _storage_socket

# No test reaches past the machine: Ray's dashboard otherwise asks cloud metadata addresses (169.254.169.254,
# metadata.google.internal) and usage-stats.ray.io from every cluster a test starts, and vLLM reports its usage;
# where those addresses do not answer at once, each waits out its own timeout. Every process the tests start
# inherits these.
for _name, _value in (("RAY_USAGE_STATS_ENABLED", "0"), ("VLLM_NO_USAGE_STATS", "1"), ("DO_NOT_TRACK", "1")):
    _os.environ.setdefault(_name, _value)

import pytest as _storage_pytest

# Distinctive fake credentials: tests scan stored objects and output for these exact strings.
S3_TEST_KEY_ID = "RAGJUDGEKEYID7Q3XTEST"
S3_TEST_SECRET = "testing-secret-ragjudge-9f2c41d7XYZ"
S3_TEST_BUCKET = "ragjudge-test"


def _free_port() -> int:
    with _storage_socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@_storage_pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server on 127.0.0.1 with one bucket; AWS_* env vars point at it for the session."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    patch = _storage_pytest.MonkeyPatch()
    try:
        for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3",
                     "AWS_REGION"):
            patch.delenv(name, raising=False)
        patch.setenv("AWS_ACCESS_KEY_ID", S3_TEST_KEY_ID)
        patch.setenv("AWS_SECRET_ACCESS_KEY", S3_TEST_SECRET)
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        patch.setenv("AWS_ENDPOINT_URL", endpoint)
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=S3_TEST_BUCKET)
        yield {"endpoint_url": endpoint, "bucket": S3_TEST_BUCKET, "key_id": S3_TEST_KEY_ID,
               "secret": S3_TEST_SECRET}
    finally:
        patch.undo()
        server.stop()


@_storage_pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    """A run root in a local folder, then one in a bucket of the S3 server: a storage test runs on both."""
    import uuid

    from jobs.store.run_root import RunRoot

    if request.param == "local":
        return RunRoot(str(tmp_path / "results"), "run")
    bucket = request.getfixturevalue("s3_server")["bucket"]
    return RunRoot(f"s3://{bucket}/{request.node.module.__name__}-{uuid.uuid4().hex[:8]}", "run")


@_storage_pytest.fixture(scope="session")
def ray_session(s3_server):
    """One local Ray for the session (or the one already running).

    It depends on s3_server so Ray's worker processes start with the S3 environment: Ray Data readers on
    workers build their own S3 clients from it, as they do on a real cluster.
    """
    import ray

    if ray.is_initialized():
        yield ray
        return
    # 4 logical CPUs on a 2-core machine: a shared judge's Serve replicas, the Ray Data stage actor that
    # calls them and the light pipeline tasks must all be schedulable at once; they mostly wait on each other.
    ray.init(address="local", num_cpus=4, include_dashboard=False)  # never a cluster in Ray's address file
    from jobs.sweep.cluster import configure_ray_data

    configure_ray_data()  # as `ragjudge run` sets it
    try:
        yield ray
    finally:
        ray.shutdown()
# ==== end of storage fixtures ====


# ==== the demo sweep, run once per session: several test files check its stored results ====

# The demo at a test's size: every benchmark, model and form, with one of the two utility candidate lists and
# generation budgets of 128 tokens. SmolLM2 on 2 CPU cores spends most of the demo generating (13,548 tokens,
# 878 s busy in a full `make demo`), and what the tests check holds whatever it writes; `make demo` runs it all.
DEMO_CI_SIZE = ["benchmarks.utility.limit=1", "benchmarks.bianbench.options.max_tokens=128",
                *(f"benchmarks.mtrag_generation_mini.options.max_tokens.{use}=128"
                  for use in ("generation", "rb_llm", "statements", "verdicts"))]


@_storage_pytest.fixture(scope="session")
def demo_run(ray_session, tmp_path_factory):
    """conf/sweeps/demo.yaml (at DEMO_CI_SIZE) on the session's Ray, from an empty model cache as on a new
    machine: a namespace of sweep, run (its RunRoot), outcomes ({(benchmark, model): outcome}), log (its lines) and cache (the folder
    its built-in models were made in)."""
    import types

    from jobs.loading import load_sweep
    from jobs.store.run_root import RunRoot
    from jobs.sweep.pipeline import run_sweep

    root, cache = tmp_path_factory.mktemp("results"), tmp_path_factory.mktemp("model_cache")
    sweep = load_sweep("conf/sweeps/demo.yaml", [f"storage.root={root}", *DEMO_CI_SIZE])
    # The judge and RM cells; the demo's retrieval cell is tested in test_retrievers on one domain.
    sweep.benchmarks = {name: b for name, b in sweep.benchmarks.items() if b.module != "mtrag_retrieval"}
    sweep.models = {name: model for name, model in sweep.models.items() if model.kind != "retriever"}
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        print(line)

    with _storage_pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGJUDGE_CACHE", str(cache))
        outcomes = run_sweep(sweep, log=log)
    return types.SimpleNamespace(sweep=sweep, run=RunRoot(str(root), sweep.storage.run), log=lines, cache=cache,
                                 outcomes={(o.benchmark, o.model): o for o in outcomes})


@_storage_pytest.fixture(scope="session")
def demo(demo_run):
    """(sweep, its RunRoot, {(benchmark, model): outcome}) of the demo sweep."""
    return demo_run.sweep, demo_run.run, demo_run.outcomes


# ==== hypothesis (the parsers' property tests): one fixed profile, so every run tries the same examples ====
from hypothesis import settings as _hypothesis_settings

# derandomize: examples come from each test's own code, not a random seed or a saved database, so CI reruns
# exactly what passed here; 200 examples per property keep the whole set to seconds.
_hypothesis_settings.register_profile("ragjudge", max_examples=200, deadline=None, derandomize=True,
                                     database=None)
_hypothesis_settings.load_profile("ragjudge")


# ==== skips CI does not accept: tests/skip_allowlist.py, where RAGJUDGE_ALLOWED_SKIPS names the allowlist ====
pytest_plugins = ["skip_allowlist"]


# ==== the end of the session ====
_sessions: list[_storage_pytest.Session] = []


def pytest_sessionfinish(session) -> None:
    _sessions.append(session)  # its exitstatus is read at the end: a plugin's sessionfinish may change it


@_storage_pytest.hookimpl(trylast=True)
def pytest_unconfigure(config) -> None:
    """Leave with pytest's status once everything has reported, skipping the interpreter's finalization.

    The fixtures have stopped Ray and the in-process vLLM engine by now; what is left is the finalization of
    their threads, sockets and child-process pipes, which once hung CI for an hour after `843 passed` (the
    last line was vLLM's AsyncLLM.__del__ failing on a module already torn down; not reproduced on the
    development machine). Skipping finalization makes the run's outcome the tests' outcome.
    """
    import os
    import sys

    if _sessions and ("vllm" in sys.modules or "ray" in sys.modules):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(_sessions[-1].exitstatus))
