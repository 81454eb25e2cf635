"""The run root's storage failing for real mid-cell (jobs.store.retry): a moto S3 server of the test's own
on 127.0.0.1 stopped as a crashed server stops (its socket closed, open connections cut) and started again,
and a local run root on a full tmpfs. A short outage is ridden out by writes and by the lease; past
`storage.retry_s`, or on a full disk, the cell fails with a message naming the file and the rerun completes
with the metrics of an undisturbed run; no reader ever sees a half-written part. Cells run through
jobs.sweep.cell.run_cell with the stand-in engine (no Ray); each test prints its row of docs/reliability.md.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import re
import socket
import subprocess
import threading
import time
import uuid
from contextlib import suppress
from pathlib import Path

import botocore.exceptions
import pytest
from fault_rows import record
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from s3fs.errors import translate_boto_error
from stand_in import run, stand_in_engine
from sweeps import SAMPLE
from werkzeug.serving import make_server

from jobs.config import BenchmarkConfig
from jobs.store import retry as storage_retry
from jobs.store.lease import LEASE, Lease
from jobs.store.retry import StorageFull, StorageUnreachable, retrying, transient
from jobs.store.run_root import RunRoot

BENCH = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                        bootstrap_resamples=0)
REQUESTS = 12  # the sample's 6 pairs, each in both orders; stored two at a time (stand_in.run)
STORED_BEFORE = 2  # parts stored before the fault


class _Tracked(MotoRequestHandler):
    """moto's request handler, its connection known to the server so that `stop` can cut it."""

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        with suppress(OSError):  # the connection was cut by stop()
            super().finish()


class OutageS3:
    """moto's S3 server on a port of its own: `stop` ends it as a crashed server ends (connections refused,
    open ones cut), `start` brings it back on the same port with its objects (moto keeps them in-process)."""

    def __init__(self) -> None:
        self.port = 0
        self.server = None
        self.timer: threading.Timer | None = None
        self.started_at = 0.0  # time.time() of the latest start

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.server = make_server("127.0.0.1", self.port, DomainDispatcherApplication(create_backend_app),
                                  threaded=True, request_handler=_Tracked)
        self.server.connections = set()
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.started_at = time.time()

    def stop(self) -> float:
        """Stop now; the time it stopped."""
        server, self.server = self.server, None
        server.shutdown()
        server.server_close()
        for connection in list(server.connections):
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        return time.time()

    def down_for(self, seconds: float) -> float:
        """Stop now and start again after `seconds`; the time it stopped."""
        stopped = self.stop()
        self.timer = threading.Timer(seconds, self.start)
        self.timer.start()
        return stopped

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()
        if self.server is not None:
            self.stop()


@pytest.fixture
def outage(s3_server, monkeypatch):
    """A stoppable S3 server; botocore's own retries off, so the time storage_retry waits is its own."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    server = OutageS3()
    server.start()
    yield server
    server.close()


def fault_after_parts(observer: RunRoot, fault, asked: list[str]):
    """A stand-in reply that, when the request after the first STORED_BEFORE parts' is asked, waits until those
    parts are stored (as `observer`, which stays reachable, lists them) and calls `fault()` once."""
    def reply(request, model) -> str:
        if len(asked) == 2 * STORED_BEFORE:
            while len(observer.list_parts("requests", BENCH.name, "judge")) < STORED_BEFORE:
                time.sleep(0.01)
            fault()
        asked.append(request["request_id"])
        return "Choose 1"
    return reply


def stored_ids(root: RunRoot) -> list[str]:
    return [row["request_id"] for row in root.read_rows("requests", BENCH.name, "judge")]


def undisturbed_metrics(tmp_path: Path, monkeypatch) -> dict:
    stand_in_engine(monkeypatch, lambda request, model: "Choose 1")
    _, outcome = run(tmp_path / "undisturbed", BENCH)
    assert outcome.status == "done", outcome.message
    return outcome.metrics


def recoveries(caplog) -> list[tuple[float, int, float]]:
    """(seconds, tries, when) of each storage call that succeeded after failing (jobs.store.retry's log)."""
    found = []
    for rec in caplog.records:
        if match := re.search(r"done after ([\d.]+) s \((\d+) tries\)", rec.getMessage()):
            found.append((float(match[1]), int(match[2]), rec.created))
    return found


def s3_root(s3_server) -> str:
    return f"s3://{s3_server['bucket']}/faults-{uuid.uuid4().hex[:8]}"


@pytest.mark.integration
def test_a_3_s_s3_outage_mid_cell_is_ridden_out(outage, s3_server, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="jobs.store.run_root")
    uri, asked, down_s = s3_root(s3_server), [], 3.0
    observer = RunRoot(uri, "run", endpoint_url=s3_server["endpoint_url"])
    stopped = []
    calls = stand_in_engine(monkeypatch, fault_after_parts(observer, lambda: stopped.append(outage.down_for(down_s)),
                                                           asked))
    root, outcome = run(uri, BENCH, endpoint_url=outage.endpoint, retry_s=30)
    assert stopped and outcome.status == "done", outcome.message
    stored = stored_ids(root)
    assert sorted(stored) == sorted(set(stored)) and len(stored) == REQUESTS  # none lost, none stored twice
    assert sum(map(len, calls)) == len(asked) == REQUESTS  # nothing asked twice
    assert outcome.metrics == undisturbed_metrics(tmp_path, monkeypatch)
    retried = recoveries(caplog)
    assert retried  # the outage was real: a write failed, and succeeded when the server was back
    seconds, tries, when = retried[0]
    recover_s = when - outage.started_at
    print(f"storage-faults: S3 down {down_s:g} s mid-cell: the part write took {tries} tries over {seconds:.2f} s, "
          f"done {recover_s:.2f} s after the server was back; {len(stored)} stored, {len(set(stored))} distinct")
    record(tmp_path, fault=f"S3 down {down_s:g} s mid-cell", injected="the test's moto server stopped after 2 "
           f"parts stored, started again {down_s:g} s later (`storage.retry_s` 30)",
           outcome=f"the part write retried ({tries} tries) and the cell finished; metrics equal an undisturbed run's",
           requests_lost=REQUESTS - len(set(stored)), requests_duplicated=len(stored) - len(set(stored)),
           time_to_recover_s=round(recover_s, 2))


@pytest.mark.integration
def test_an_s3_outage_past_retry_s_fails_the_cell_clearly_and_the_rerun_completes(outage, s3_server, tmp_path,
                                                                                  monkeypatch):
    uri, asked, retry_s = s3_root(s3_server), [], 2.0
    observer = RunRoot(uri, "run", endpoint_url=s3_server["endpoint_url"])
    stopped = []
    # back 1 s after the part write gave up: manifest.json can then record the failure (it retries too)
    stand_in_engine(monkeypatch, fault_after_parts(observer, lambda: stopped.append(outage.down_for(retry_s + 1)),
                                                   asked))
    root, outcome = run(uri, BENCH, endpoint_url=outage.endpoint, retry_s=retry_s)
    failed_after = time.time() - stopped[0]
    assert outcome.status == "failed"
    message = outcome.message
    part = re.search(r"cannot write (\S+/part-[\w-]+\.parquet)", message)
    assert part and part[1].startswith(root.uri("requests/")), message
    for words in ("StorageUnreachable", f"run root {root.uri('')}", "the storage did not answer for",
                  "storage.retry_s=2", "EndpointConnectionError", "the run resumes"):
        assert words in message, message
    assert s3_server["secret"] not in message and s3_server["key_id"] not in message
    waited = float(re.search(r"did not answer for ([\d.]+) s", message)[1])
    entry = root.read_json("manifest.json")["cells"]["rag_rewardbench/judge"]
    assert entry["status"] == "failed" and entry["error"] in message
    before = stored_ids(root)
    assert len(before) == 2 * STORED_BEFORE  # the parts stored before the outage, whole; the failed one absent

    rerun_asked: list[str] = []
    stand_in_engine(monkeypatch, lambda request, model: rerun_asked.append(request["request_id"]) or "Choose 1")
    start = time.perf_counter()
    root, rerun = run(uri, BENCH, endpoint_url=outage.endpoint, retry_s=retry_s)
    rerun_s = time.perf_counter() - start
    assert rerun.status == "done", rerun.message
    stored = stored_ids(root)
    assert len(stored) == len(set(stored)) == REQUESTS
    assert not set(rerun_asked) & set(before)  # what was stored is never asked again
    assert rerun.metrics == undisturbed_metrics(tmp_path, monkeypatch)
    sent_twice = len(set(asked) & set(rerun_asked))
    print(f"storage-faults: S3 down past storage.retry_s={retry_s:g}: the part write gave up after {waited:.1f} s, "
          f"the cell outcome {failed_after:.1f} s after the stop (manifest.json written once the server was "
          f"back); rerun {rerun_s:.2f} s asked {len(rerun_asked)}, {sent_twice} of them answered before but not "
          f"stored; {len(stored) - len(set(stored))} stored twice")
    record(tmp_path, fault=f"S3 down past `storage.retry_s` ({retry_s:g} s)",
           injected=f"the test's moto server stopped after 2 parts stored, started again {retry_s + 1:g} s later",
           outcome=f"the cell fails after {waited:.1f} s: `StorageUnreachable: cannot write <part URI>: the storage "
                   "did not answer for ...`, recorded in manifest.json; the rerun completes, metrics equal an "
                   "undisturbed run's",
           requests_lost=REQUESTS - len(set(stored)), requests_duplicated=sent_twice,
           time_to_recover_s=round(rerun_s, 2))


@pytest.mark.integration
def test_the_lease_rides_out_an_outage_and_is_given_back_after_one(outage, s3_server):
    uri = s3_root(s3_server)
    root = RunRoot(uri, "run", endpoint_url=outage.endpoint, retry_s=10)
    notes, lost = [], []
    with Lease(root, timeout_s=2, log=notes.append, on_lost=lost.append) as lease:
        fenced = RunRoot(uri, "run", endpoint_url=outage.endpoint, retry_s=10, before_write=lease.confirm)
        before = root.read_json(LEASE)["heartbeat"]
        stopped = outage.down_for(3.0)
        fenced.write_json("during.json", {"written": True})  # fenced by the lease: it waits the outage out
        written_after = time.time() - stopped
        deadline = time.time() + 10
        while root.read_json(LEASE)["heartbeat"] <= outage.started_at and time.time() < deadline:
            time.sleep(0.1)
        beating_s = time.time() - outage.started_at
        assert root.read_json(LEASE)["heartbeat"] > outage.started_at > before  # beating again
        assert not lost and lease.lost is None and not any("Lost the lease" in n for n in notes), notes
        assert root.read_json("during.json") == {"written": True}
        outage.down_for(2.0)  # the release, too, meets an outage
        with pytest.raises(StorageUnreachable):  # an unreachable store is no missing lease.json
            RunRoot(uri, "run", endpoint_url=outage.endpoint, retry_s=0.5).read_json(LEASE)
        released_at = time.time()
    assert time.time() - released_at < 10 and root.read_json(LEASE) is None  # given back once it was up
    print(f"storage-faults: lease (timeout 2 s) across a 3 s S3 outage: not lost, the fenced write stored "
          f"{written_after:.2f} s after the stop, heartbeat fresh {beating_s:.2f} s after the server was back; "
          f"released across a 2 s outage in {time.time() - released_at:.2f} s")


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs mounted for the test, where the machine lets it (root, mount(8)); else skipped."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a tmpfs of the test's own: mounting one takes root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=False,
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a full disk needs a tmpfs of the test's own; mount failed: {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def fill(folder: Path) -> Path:
    """A file that takes every byte left on folder's device."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (65536, 4096, 1):
            with suppress(OSError):
                while True:
                    out.write(b"\0" * chunk)
    return filler


def test_a_full_disk_fails_the_cell_clearly_leaves_nothing_half_written_and_the_rerun_completes(
        full_disk, tmp_path, monkeypatch, capsys):
    root_uri, asked, filled = str(full_disk / "results"), [], []
    observer = RunRoot(root_uri, "run")
    stand_in_engine(monkeypatch, fault_after_parts(observer, lambda: filled.append(fill(full_disk)), asked))
    root, outcome = run(root_uri, BENCH)
    assert filled and outcome.status == "failed"
    message = outcome.message
    assert re.search(rf"StorageFull: cannot write {re.escape(root.uri('requests/'))}\S+/part-[\w-]+\.parquet: no "
                     "space left on the device", message), message
    assert "Free space there and rerun" in message
    assert "manifest.json could not record it" in capsys.readouterr().out  # the disk took no manifest either
    leftovers = [f"{d}/{f}" for d, _, files in os.walk(full_disk) for f in files if ".tmp-" in f]
    assert leftovers == []  # no temporary file of a write that failed
    before = stored_ids(root)  # every part stored reads whole
    assert len(before) == 2 * STORED_BEFORE
    assert json.loads(Path(root.path("manifest.json")).read_text())["cells"]  # whole, as last written

    filled[0].unlink()  # space freed
    rerun_asked: list[str] = []
    stand_in_engine(monkeypatch, lambda request, model: rerun_asked.append(request["request_id"]) or "Choose 1")
    start = time.perf_counter()
    root, rerun = run(root_uri, BENCH)
    rerun_s = time.perf_counter() - start
    assert rerun.status == "done", rerun.message
    stored = stored_ids(root)
    assert len(stored) == len(set(stored)) == REQUESTS and not set(rerun_asked) & set(before)
    assert rerun.metrics == undisturbed_metrics(tmp_path, monkeypatch)
    sent_twice = len(set(asked) & set(rerun_asked))
    print(f"storage-faults: disk full (1 MiB tmpfs) mid-cell: cell failed with StorageFull, no temporary file "
          f"left, {len(before)} stored answers readable; rerun after freeing space {rerun_s:.2f} s, asked "
          f"{len(rerun_asked)}, {sent_twice} answered before but not stored")
    record(tmp_path, fault="the run root's disk full mid-cell (local)",
           injected="a 1 MiB tmpfs mounted by the test as the run root's folder, filled after 2 parts stored",
           outcome="the cell fails at once: `StorageFull: cannot write <part path>: no space left on the device "
                   "... Free space there and rerun`; no temporary file left, every stored part whole (manifest.json "
                   "keeps `running`: the disk took no more); after freeing space the rerun completes, metrics "
                   "equal an undisturbed run's",
           requests_lost=REQUESTS - len(set(stored)), requests_duplicated=sent_twice,
           time_to_recover_s=round(rerun_s, 2))


class _Clock:
    """time.monotonic and time.sleep of storage_retry, without waiting: sleeping moves the clock."""

    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_retries_back_off_give_up_after_retry_s_naming_the_file_and_never_retry_a_full_disk(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(storage_retry, "time", clock)
    secret = "retry-secret-4f1e9b2c"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    tries = []

    def refused() -> None:
        tries.append(clock.now)
        raise botocore.exceptions.EndpointConnectionError(endpoint_url=f"http://127.0.0.1:9/?sig={secret}")

    where = {"doing": "write", "file": "s3://b/runs/run/manifest.json", "root": "s3://b/runs/run"}
    with pytest.raises(StorageUnreachable) as gave_up:
        retrying(refused, retry_s=20, **where)
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 4.5]  # doubling, the last wait cut to end at retry_s
    assert tries == [0.0, 0.5, 1.5, 3.5, 7.5, 15.5, 20.0]
    message = str(gave_up.value)
    assert message.startswith("cannot write s3://b/runs/run/manifest.json: the storage did not answer for 20.0 s "
                              "(7 tries, storage.retry_s=20; run root s3://b/runs/run); last error: "
                              "EndpointConnectionError: Could not connect to the endpoint URL")
    assert secret not in message and "[redacted]" in message

    full = []

    def no_space() -> None:
        full.append(1)
        raise OSError(errno.ENOSPC, "No space left on device", "/runs/run/.part-0.parquet.tmp-1")

    with pytest.raises(StorageFull, match=r"cannot write s3://b/runs/run/manifest.json: no space left"):
        retrying(no_space, retry_s=20, **where)
    assert full == [1]  # waiting does not free a disk

    with pytest.raises(PermissionError):  # not transient: raised as it is, at once
        retrying(lambda: (_ for _ in ()).throw(PermissionError("denied")), retry_s=20, **where)
    busy = botocore.exceptions.ClientError(
        {"Error": {"Code": "ServiceUnavailable", "Message": "restarting"}, "ResponseMetadata": {"HTTPStatusCode": 503}},
        "PutObject")
    denied = botocore.exceptions.ClientError(
        {"Error": {"Code": "AccessDenied", "Message": "no"}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "PutObject")
    assert transient(translate_boto_error(busy)) and not transient(translate_boto_error(denied))


def test_a_long_outage_says_now_and_then_how_long_of_retry_s_it_has_waited(monkeypatch, caplog):
    """The storage's wait is bounded (storage.retry_s) and, past its first warning, says every WAIT_LINE_S what it
    waits for (issue 64)."""
    monkeypatch.setattr(storage_retry, "WAIT_LINE_S", 0.1)
    monkeypatch.setattr(storage_retry, "FIRST_WAIT_S", 0.05)
    monkeypatch.setattr(storage_retry, "MAX_WAIT_S", 0.05)

    def refused() -> None:
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    with caplog.at_level(logging.WARNING), pytest.raises(StorageUnreachable):
        retrying(refused, doing="write", file="s3://b/run/part.parquet", root="s3://b", retry_s=0.5)
    still = [r.getMessage() for r in caplog.records if "still cannot" in r.getMessage()]
    assert still and re.fullmatch(r"storage: still cannot write s3://b/run/part\.parquet: \d s of 0\.5 s "
                                  r"\(storage\.retry_s\), \d+ tries; last error: ConnectionRefusedError: .*",
                                  still[0]), still
