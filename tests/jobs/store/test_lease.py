"""The run root's lease (jobs.store.lease) on a local folder and on a real S3-compatible server on 127.0.0.1: a
live lease refuses a second holder by name, a stale one (old heartbeat, or a dead process of this host) is
taken over with a note, the heartbeat keeps it fresh, and a driver whose lease was taken notices (at its
heartbeat, or before its next write when it was frozen)."""
from __future__ import annotations

import os
import pickle
import re
import socket
import subprocess
import sys
import time

import pytest

from jobs.config import ConfigError
from jobs.store.backends import S3Backend
from jobs.store.lease import LEASE, Lease, LeaseHeld, LeaseLost
from jobs.store.run_root import RunRoot


@pytest.fixture(autouse=True)
def no_settle(monkeypatch):
    """A takeover waits SETTLE_S (1 s) for a driver taking over at the same moment before it reads the lease back;
    no other driver races these takeovers, so the wait would only add a second each (test_lease_drivers.py
    takes over with it, from real driver processes)."""
    import jobs.store.lease

    monkeypatch.setattr(jobs.store.lease, "SETTLE_S", 0.0)


def lease_file(host: str, pid: int, heartbeat: float) -> dict:
    return {"host": host, "pid": pid, "started_at": "2026-01-01T00:00:00+00:00", "heartbeat": heartbeat,
            "heartbeat_at": "then", "timeout_s": 120.0, "token": "someone-else"}


def test_a_live_lease_refuses_a_second_holder_naming_it_until_it_is_given_back(root):
    first = Lease(root, timeout_s=120, log=lambda _: None)
    with first:
        stored = root.read_json(LEASE)
        assert stored["token"] == first.record["token"] and stored["pid"] == os.getpid()
        with pytest.raises(LeaseHeld) as refused:
            Lease(root, timeout_s=120).acquire()
        message = str(refused.value)
        for part in (f"host {socket.gethostname()}", f"pid {os.getpid()}", f"started {stored['started_at']}"):
            assert part in message
    assert root.read_json(LEASE) is None  # given back
    with Lease(root, timeout_s=120):
        pass


def test_a_lease_without_a_heartbeat_for_the_timeout_is_taken_over_with_a_note(root):
    written = time.time()
    root.write_json(LEASE, lease_file("crashed-node", 4242, written - 300))
    notes: list[str] = []
    with Lease(root, timeout_s=120, log=notes.append) as lease:
        assert root.read_json(LEASE)["token"] == lease.record["token"]
        taken = time.time()
    assert len(notes) == 1 and "host crashed-node, pid 4242" in notes[0]
    # The age is read when the lease is taken, which on a loaded machine's S3 stand-in came 301 s after the
    # heartbeat: it lies between 300 s and the time the takeover took, rounded.
    age = int(re.search(r"its last heartbeat was (\d+) s ago", notes[0]).group(1))
    assert 300 <= age <= round(300 + taken - written), notes[0]
    root.write_json(LEASE, lease_file("busy-node", 4242, time.time() - 60))  # within the timeout: alive
    with pytest.raises(LeaseHeld, match="host busy-node, pid 4242"):
        Lease(root, timeout_s=120).acquire()


def test_a_lease_of_a_dead_process_of_this_host_is_taken_over_at_once(root):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    root.write_json(LEASE, lease_file(socket.gethostname(), gone.pid, time.time()))
    notes: list[str] = []
    with Lease(root, timeout_s=120, log=notes.append):
        pass
    assert notes and f"pid {gone.pid} no longer runs on this host" in notes[0]


def test_the_heartbeat_refreshes_the_lease_and_notices_when_it_is_taken(root):
    lost: list[dict] = []
    with Lease(root, timeout_s=0.4, log=lambda _: None, on_lost=lost.append) as lease:
        first = root.read_json(LEASE)["heartbeat"]
        deadline = time.time() + 10
        while root.read_json(LEASE)["heartbeat"] == first and time.time() < deadline:
            time.sleep(0.05)
        assert root.read_json(LEASE)["heartbeat"] > first
        # Not between a beat's read and its write, which would overwrite the thief's lease (seen under load on
        # S3, with a beat every 0.1 s); a real takeover comes timeout_s after the last beat.
        with lease._lock:
            root.write_json(LEASE, lease_file("thief", 7, time.time()))
        while not lost and time.time() < deadline:
            time.sleep(0.05)
        assert lost and lost[0]["host"] == "thief"
        assert lease.record["token"] != "someone-else"
    assert root.read_json(LEASE)["host"] == "thief"  # not ours: left alone on release


def test_a_driver_frozen_past_its_heartbeat_reads_the_lease_before_it_writes_and_writes_nothing(root):
    with Lease(root, timeout_s=120, log=lambda _: None) as lease:
        fenced = RunRoot(root.uri("").rsplit("/", 1)[0], "run", before_write=lease.confirm)
        fenced.write_json("before.json", {"ok": True})  # a fresh heartbeat: written without a read
        lease.record["heartbeat"] -= 100  # as if this driver had been frozen for 100 s
        root.write_json(LEASE, lease_file("newcomer", 99, time.time()))  # ... and another took over
        with pytest.raises(LeaseLost, match="host newcomer, pid 99"):
            fenced.write_json("after.json", {"ok": False})
        assert fenced.read_json("after.json") is None and lease.lost["host"] == "newcomer"


def test_a_pickled_run_root_carries_a_fence_that_reads_the_lease_before_each_write(root):
    """A Ray task that records a cell's rows (jobs.flow.shard_tasks) writes through a pickle of the driver's run
    root: its fence there reads lease.json before each write, and refuses once another driver's token is in it.
    A fence that does not say how it works elsewhere stays behind, and the root says so (`fence_travels`)."""
    with Lease(root, timeout_s=120, log=lambda _: None) as lease:
        fenced = RunRoot(root.uri("").rsplit("/", 1)[0], "run", before_write=lease.fence)
        copy = pickle.loads(pickle.dumps(fenced))
        assert fenced.fence_travels and copy.fence_travels
        copy.write_json("from-task.json", {"ok": True})
        assert fenced.read_json("from-task.json") == {"ok": True}
        root.write_json(LEASE, lease_file("newcomer", 99, time.time()))  # another driver took over
        with pytest.raises(LeaseLost, match="host newcomer, pid 99"):
            copy.write_json("after.json", {"ok": False})
        assert fenced.read_json("after.json") is None
        root.delete(LEASE)  # ... or the lease is gone
        with pytest.raises(LeaseLost, match="lease.json removed"):
            copy.write_json("after.json", {"ok": False})
    unfenceable = RunRoot(root.uri("").rsplit("/", 1)[0], "run", before_write=lambda: None)
    assert not unfenceable.fence_travels and pickle.loads(pickle.dumps(unfenceable)).before_write is None


def test_the_lease_file_holds_no_credentials(s3_server):
    root = RunRoot(f"s3://{s3_server['bucket']}/lease-secrets", "run")
    with Lease(root, timeout_s=120):
        body = root.read_bytes(LEASE)
    assert s3_server["secret"].encode() not in body and s3_server["key_id"].encode() not in body


def test_a_timeout_that_is_not_positive_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="storage.lease_timeout_s"):
        Lease(RunRoot(str(tmp_path), "run"), timeout_s=0)


def test_a_create_whose_reply_was_lost_is_not_refused_as_another_drivers_lease(root, monkeypatch):
    """The store took the first try of the create but the connection broke before its reply: the retry finds
    lease.json, and it is this driver's own."""
    if isinstance(root.backend, S3Backend):
        target, real = root.backend.s3, root.backend.s3.pipe_file
        name = "pipe_file"
    else:
        target, real, name = os, os.link, "link"
    tries = []

    def landed_then_reset(*args, **kwargs):
        tries.append(1)
        real(*args, **kwargs)
        if len(tries) == 1:
            raise ConnectionResetError("connection reset after the request was sent")

    monkeypatch.setattr(target, name, landed_then_reset)
    with Lease(root, timeout_s=120, log=lambda _: None) as lease:
        assert len(tries) == 2
        assert root.read_json(LEASE)["token"] == lease.record["token"]
    assert root.read_json(LEASE) is None


def test_a_driver_whose_lease_was_taken_clears_no_retrieval_strategy_folders(root):
    """A retrieval cell clears its strategy=* folders before it writes them again; that deletion passes the run's
    write fence like every other change, so a driver that lost its lease deletes nothing of the new holder's."""
    cell = "runs/benchmark=mtrag_retrieval/model=bm25"
    for name in ("strategy=lastturn/run.jsonl", "strategy=rewrite/run.jsonl", "notes.json"):
        root.write_text(f"{cell}/{name}", "kept")
    with Lease(root, timeout_s=120, log=lambda _: None) as lease:
        fenced = RunRoot(root.uri("").rsplit("/", 1)[0], "run", before_write=lease.confirm)
        lease.record["heartbeat"] -= 100  # frozen past half the timeout, and another driver took over
        root.write_json(LEASE, lease_file("newcomer", 99, time.time()))
        with pytest.raises(LeaseLost, match="host newcomer, pid 99"):
            fenced.clear_strategies("runs", "mtrag_retrieval", "bm25")
    assert root.read_bytes(f"{cell}/strategy=lastturn/run.jsonl") == b"kept"
    assert root.read_bytes(f"{cell}/strategy=rewrite/run.jsonl") == b"kept"
    root.delete(LEASE)
    root.clear_strategies("runs", "mtrag_retrieval", "bm25")  # the holder itself clears them, and only them
    assert root.read_bytes(f"{cell}/strategy=lastturn/run.jsonl") is None
    assert root.read_bytes(f"{cell}/strategy=rewrite/run.jsonl") is None
    assert root.read_bytes(f"{cell}/notes.json") == b"kept"
