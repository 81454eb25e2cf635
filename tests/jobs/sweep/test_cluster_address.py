"""Which Ray cluster a run joins (issue 28, item 7): a configured address that does not answer fails fast with
one line naming it; no address starts a new local cluster even where a dead one left Ray's address file. And
the settings a sweep's driver gives itself once connected."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import textwrap

import pytest
from sweeps import write_sweep

from jobs.cli import main
from jobs.sweep.cluster import ClusterUnreachable, check_answers, host_port, local_start_failed


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address, expected", [
    ("10.0.0.5:6379", ("10.0.0.5", 6379)),
    ("ray://head.svc:10001", ("head.svc", 10001)),
    ("ray://head.svc", ("head.svc", 10001)),
    ("[::1]:6379", ("::1", 6379)),
])
def test_host_and_port_of_each_address_form(address, expected):
    assert host_port(address) == expected


def test_an_address_without_a_port_is_named():
    with pytest.raises(ClusterUnreachable, match="'head.svc' has no port"):
        host_port("head.svc")


def test_a_listening_address_passes_and_a_closed_one_fails_naming_it():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_answers(f"127.0.0.1:{server.getsockname()[1]}", probe_s=2.0)  # no exception
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(ClusterUnreachable) as raised:
        check_answers(address, probe_s=1.5)
    assert address in str(raised.value) and "cluster.address" in str(raised.value)


def test_run_with_a_dead_address_exits_1_with_one_line_and_no_traceback(tmp_path, capsys):
    sweep = write_sweep(tmp_path, "dead_head", ["{name: echo, path: none, kind: generative, engine: stand_in}"],
                        storage=f"root: {tmp_path / 'results'}")
    address = f"127.0.0.1:{_closed_port()}"
    status = main(["run", str(sweep), f"cluster.address={address}", "cluster.connect_timeout_s=1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err == [(f"ragjudge: no Ray cluster answers at {address} (tried for 1 s: Connection refused); "
                    "check cluster.address or RAY_ADDRESS")]


# What ray.init raises when a local cluster does not come up in time (ray._private.node and services).
RAY_START_FAILURES = [
    Exception("The current node timed out during startup. This could happen because some of the raylet failed "
              "to startup or the GCS has become overloaded."),
    TimeoutError("Timed out after 30 seconds while waiting for node to startup. Did not find socket name x"),
    RuntimeError("Failed to start GCS.  Last 2 lines of error files:\n[2026-01-01] E gcs_server.cc: bind\n."),
    ConnectionError("Could not find any running Ray instance. Please specify the one to connect to"),
]


@pytest.mark.parametrize("error", RAY_START_FAILURES, ids=lambda e: type(e).__name__)
def test_a_local_cluster_that_does_not_start_is_one_line_saying_what_to_try(error):
    unstarted = local_start_failed(error, num_cpus=8)
    message = str(unstarted)
    assert isinstance(unstarted, ClusterUnreachable) and "\n" not in message
    assert message.startswith("the local Ray cluster did not start: " + str(error).splitlines()[0].strip()[:200])
    assert "cluster.num_cpus (now 8)" in message and "ray start --head" in message and "cluster.address" in message
    assert "all of this machine's" in str(local_start_failed(error, num_cpus=None))


@pytest.mark.parametrize("error", [ValueError("num_cpus must be positive"), KeyError("x"),
                                   Exception("some other failure")])
def test_an_error_that_is_not_a_start_failing_stays_itself(error):
    assert local_start_failed(error, num_cpus=2) is None


@pytest.mark.integration
def test_no_address_starts_a_new_local_cluster_despite_a_dead_clusters_address_file():
    """Ray's ray.init() would join the address the file names and wait on a dead GCS for minutes."""
    with tempfile.TemporaryDirectory(prefix="rj", dir="/tmp") as ray_tmp:  # short: Ray's socket paths are capped
        os.makedirs(os.path.join(ray_tmp, "ray"))
        dead = f"127.0.0.1:{_closed_port()}"
        with open(os.path.join(ray_tmp, "ray", "ray_current_cluster"), "w") as f:
            f.write(dead)
        script = textwrap.dedent("""
            import ray
            from jobs.config import ClusterConfig, SweepConfig
            from jobs.sweep import connect_ray
            said = connect_ray(SweepConfig(name="x", cluster=ClusterConfig(num_cpus=1)))
            print(ray.data.DataContext.get_current().execution_no_progress_timeout_s, flush=True)
            print(said, flush=True)
            ray.shutdown()
        """)
        env = {**os.environ, "RAY_TMPDIR": ray_tmp}
        env.pop("RAY_ADDRESS", None)
        # The timeout is the failure: Ray's ray.init() reconnected to the dead GCS for 6 minutes.
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    timeout, said = done.stdout.strip().splitlines()[-2:]
    assert float(timeout) == 3600  # Ray Data's 30-minute no-progress limit, raised above an engine's restart wait
    assert said.startswith("Ray: started a local cluster (") and dead not in said, said


def test_the_driver_takes_arrows_memory_from_the_system_allocator():
    """Arrow's default pool kept a cell's freed blocks in the driver (docs/measurements.md, "The real size on
    the 2-core AVX-512 machine: what grew, and what changed"); a sweep's driver gives them back."""
    import pyarrow as pa

    from jobs.sweep.cluster import configure_ray_data

    configure_ray_data()
    assert pa.default_memory_pool().backend_name == "system"


def test_a_joined_head_that_stops_answering_is_said_while_it_is_gone_and_when_it_is_back(monkeypatch):
    """A loopback listener as the head's GCS port: closed, the driver says so every HEAD_LINE_S with Ray's
    bound, not at each probe; listening again, one line that it is back; a head that answers says nothing."""
    import threading
    import time

    from jobs.sweep import cluster

    monkeypatch.setattr(cluster, "HEAD_PROBE_S", 0.05)
    monkeypatch.setattr(cluster, "HEAD_LINE_S", 0.5)
    head = socket.socket()
    head.bind(("127.0.0.1", 0))
    head.listen()
    port = head.getsockname()[1]
    said: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=cluster.say_while_head_is_gone, args=(f"127.0.0.1:{port}", said.append, stop))
    watcher.start()
    try:
        time.sleep(0.5)
        assert said == []
        head.close()
        time.sleep(1.2)
        gone = list(said)
        assert 1 <= len(gone) <= 3, gone  # at 0 s, 0.5 s, 1 s: once per HEAD_LINE_S, not per probe (24 probes)
        assert gone[0] == (f"the Ray head at 127.0.0.1:{port} has not answered for 0 s; Ray ends this run once it "
                           "has been gone 60 s (its gcs_rpc_server_reconnect_timeout_s); what is stored stays, and "
                           "the same command resumes once a head is up")
        head = socket.socket()
        head.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        head.bind(("127.0.0.1", port))
        head.listen()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not said[-1].startswith(f"the Ray head at 127.0.0.1:{port} answers"):
            time.sleep(0.05)
        assert said[-1].startswith(f"the Ray head at 127.0.0.1:{port} answers again after ")
    finally:
        stop.set()
        watcher.join(timeout=5)
        head.close()
