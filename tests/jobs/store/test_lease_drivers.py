"""Real `ragjudge run` driver processes on one run root, local and on a real S3-compatible server: a second
driver refuses at once, naming the first, while the first is mid-cell (its API judge, a loopback server,
holds every answer until the test lets it go); a lease left by a crashed driver elsewhere is taken over with
a note once its heartbeat is older than storage.lease_timeout_s, and so is a frozen driver's, which stops
when it wakes. (A driver SIGKILLed on this host is taken over at once: test_resume.py.)"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
import ray
from fault_rows import record
from loopback import JsonHandler, chat_completion, serving
from sweeps import write_sweep

from jobs.store.lease import LEASE
from jobs.store.run_root import open_run

pytestmark = pytest.mark.integration

GATED = ("{name: gated, path: gated, kind: api, engine: http, api: {base_env: RAGJUDGE_TEST_GATED_BASE, "
         "key_env: RAGJUDGE_TEST_GATED_KEY, max_concurrency: 4}, max_new_tokens: 4, batch_size: 6, "
         "num_cpus: 0.25}")
STAND_IN = "{name: echo, path: none, kind: generative, engine: stand_in}"


class _Gate(JsonHandler):
    """Chat completions that wait until the test opens the gate; `asked` is set by the first request."""

    asked = threading.Event()
    opened = threading.Event()

    def do_POST(self) -> None:  # http.server's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.asked.set()
        self.opened.wait(timeout=300)
        self._reply(200, chat_completion(body["model"], "Choose 1"))


@pytest.fixture
def gate():
    _Gate.asked.clear()
    _Gate.opened.clear()
    with serving(_Gate, _Gate.opened) as base:
        yield base


@pytest.fixture(params=["local", "s3"])
def root_uri(request, tmp_path) -> str:
    if request.param == "local":
        return str(tmp_path / "results")
    return f"s3://{request.getfixturevalue('s3_server')['bucket']}/drivers-{uuid.uuid4().hex[:8]}"


def driver(sweep_file, root_uri: str, *overrides: str, env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address, **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "jobs", "run", str(sweep_file), f"storage.root={root_uri}",
                             *overrides], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_second_driver_refuses_at_once_naming_the_first(ray_session, gate, root_uri, tmp_path):
    sweep = write_sweep(tmp_path, "lease", [GATED])
    env = {"RAGJUDGE_TEST_GATED_BASE": gate, "RAGJUDGE_TEST_GATED_KEY": "sk-gated-0123456789"}
    first = driver(sweep, root_uri, env=env)
    while not _Gate.asked.wait(timeout=0.2):  # until the first driver is mid-cell, its answers held
        assert first.poll() is None, first.communicate()
    run = open_run(f"{root_uri}/lease")
    held = run.read_json(LEASE)
    assert held["pid"] == first.pid

    start = time.perf_counter()
    second = driver(sweep, root_uri, env=env)
    out, err = second.communicate(timeout=120)
    refused_s = time.perf_counter() - start
    assert second.returncode == 3, out + err
    for part in (f"host {held['host']}", f"pid {first.pid}", f"started {held['started_at']}"):
        assert part in err, err
    assert run.read_json("manifest.json")["attempts"] == 1  # the second driver wrote nothing
    assert first.poll() is None

    _Gate.opened.set()
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, out + err
    assert run.read_json(LEASE) is None  # given back at the end
    ids = [row["request_id"] for row in run.read_rows("requests", "rag_rewardbench", "gated")]
    assert len(ids) == 12 == len(set(ids))
    record(tmp_path, fault=f"a second driver on one run root ({'S3' if root_uri.startswith('s3://') else 'local'})",
           injected="`ragjudge run` started again while the first driver is mid-cell (its API judge held)",
           outcome=f"refused with exit 3 in {refused_s:.1f} s (process start included), naming host, pid, start "
                   "time; the first finishes, 12 answers, lease.json removed",
           requests_lost=12 - len(set(ids)), requests_duplicated=len(ids) - len(set(ids)),
           time_to_recover_s=round(refused_s, 2))


def test_a_lease_left_by_a_crashed_driver_is_taken_over_after_its_timeout(ray_session, root_uri, tmp_path):
    sweep = write_sweep(tmp_path, "lease", [STAND_IN])
    run = open_run(f"{root_uri}/lease")
    timeout_s = 5.0
    crashed = time.time()
    run.write_json(LEASE, {"host": "crashed-node", "pid": 4242, "started_at": "2026-01-01T00:00:00+00:00",
                           "heartbeat": crashed, "heartbeat_at": "", "timeout_s": timeout_s, "token": "crashed"})
    refused = driver(sweep, root_uri, f"storage.lease_timeout_s={timeout_s}")
    _, err = refused.communicate(timeout=120)
    assert refused.returncode == 3 and "host crashed-node, pid 4242" in err, err

    while time.time() - crashed <= timeout_s:
        time.sleep(0.1)
    taker = driver(sweep, root_uri, f"storage.lease_timeout_s={timeout_s}")
    out, err = taker.communicate(timeout=300)
    recovered_s = time.time() - crashed
    assert taker.returncode == 0, out + err
    assert "Taking over the lease" in out and "from host crashed-node, pid 4242" in out, out
    assert run.read_json(LEASE) is None
    ids = [row["request_id"] for row in run.read_rows("requests", "rag_rewardbench", "echo")]
    assert len(ids) == 12 == len(set(ids))
    record(tmp_path, fault=f"a driver crashed on another host, its lease left ({'S3' if root_uri.startswith('s3://') else 'local'})",
           injected=f"lease.json of host crashed-node written with a heartbeat, storage.lease_timeout_s={timeout_s:g}",
           outcome="a driver within the timeout is refused naming crashed-node; the first after it takes the "
                   "lease over with a note and finishes the run (time: last heartbeat to the run finished)",
           requests_lost=12 - len(set(ids)), requests_duplicated=len(ids) - len(set(ids)),
           time_to_recover_s=round(recovered_s, 2))


def test_a_frozen_driver_is_taken_over_after_its_timeout_and_stops_when_it_wakes(ray_session, gate, root_uri,
                                                                                tmp_path):
    timeout_s = 3.0
    sweep = write_sweep(tmp_path, "lease", [GATED], storage=f"lease_timeout_s: {timeout_s}")
    env = {"RAGJUDGE_TEST_GATED_BASE": gate, "RAGJUDGE_TEST_GATED_KEY": "sk-gated-0123456789"}
    run = open_run(f"{root_uri}/lease")
    first = driver(sweep, root_uri, env=env)
    try:
        while not _Gate.asked.wait(timeout=0.2):  # mid-cell, its answers held
            assert first.poll() is None, first.communicate()
        first.send_signal(signal.SIGSTOP)  # frozen: alive, but its heartbeat stops (a suspended VM, a partition)
        frozen = time.time()
        while time.time() - run.read_json(LEASE)["heartbeat"] <= timeout_s:
            time.sleep(0.1)
        second = driver(sweep, root_uri, env=env)
        while (run.read_json(LEASE) or {}).get("pid") != second.pid:
            assert second.poll() is None, second.communicate()
            time.sleep(0.1)
        taken_s = time.time() - frozen

        first.send_signal(signal.SIGCONT)
        _, err = first.communicate(timeout=60)
        assert first.returncode == 3, err
        assert f"another driver took over this run (host {socket.gethostname()}, pid {second.pid})" in err
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGCONT)
            first.kill()
    _Gate.opened.set()
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, out + err
    assert f"Taking over the lease of {run.uri('')} from host {socket.gethostname()}, pid {first.pid}" in out, out
    assert run.read_json(LEASE) is None and run.read_json("manifest.json")["attempts"] == 2
    ids = [row["request_id"] for row in run.read_rows("requests", "rag_rewardbench", "gated")]
    assert len(ids) == 12 == len(set(ids))
    record(tmp_path, fault=f"a driver frozen mid-cell past the lease timeout ({'S3' if root_uri.startswith('s3://') else 'local'})",
           injected=f"SIGSTOP of the first driver, storage.lease_timeout_s={timeout_s:g}; a second driver "
                    "started once its heartbeat is stale; SIGCONT after the takeover",
           outcome="the second takes the lease over with a note and finishes; the first, woken, finds another's "
                   "lease and exits 3 before writing (time: freeze to takeover)",
           requests_lost=12 - len(set(ids)), requests_duplicated=len(ids) - len(set(ids)),
           time_to_recover_s=round(taken_s, 2))
