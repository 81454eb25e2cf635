"""The run root's lease (ROOT/RUN/lease.json): one driver at a time writes a run.

Two drivers on one run would both ask the model and write parts under the same attempt number, so
`ragjudge run` takes the lease before it connects to Ray and gives it back when it ends; a thread refreshes
its heartbeat every quarter of `storage.lease_timeout_s`. A second driver that finds a live lease refuses at
once, naming its holder (host, pid, start time). A lease is stale, and taken over with a printed note, when
its heartbeat is older than the timeout (a crashed or unreachable driver) or, at once, when its holder was a
process of this host that no longer exists (SIGKILL, the OOM killer).

Taking is create-if-absent (`RunRoot.create`, each backend's own: jobs.store.backends): locally a finished
temporary file is hard-linked to lease.json (atomic, never half a file); on S3 a conditional PUT
(If-None-Match: *), which AWS S3 and moto honour (an S3-compatible store that ignores it lets two drivers that
start in the same instant both create it: the later PUT wins, and the earlier driver stops at its next
heartbeat). A stale lease is overwritten, then read back after a
second, so of two drivers taking over together the later writer holds it. The heartbeat reads the lease
before each refresh, and every write of the run is fenced (`confirm`): a driver whose own heartbeat is half
a timeout old (frozen, suspended, cut off) reads the lease before it writes. A driver that finds another's
token there, or no lease at all, has lost it and stops. Left open: a write already past its fence when the
driver froze lands when it wakes. Staleness compares the heartbeat with this host's clock: hosts' clocks
must agree to well within the timeout.

Every read and write of lease.json is tried again through a storage outage for up to `storage.retry_s`
(jobs.store.retry), so an unreachable store is never taken for a removed lease (which would count as
lost); a heartbeat that still fails is logged and tried again at the next beat, and a release that fails
leaves the lease to go stale.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Self, TypedDict

from jobs.config import ConfigError
from jobs.store.layout import LEASE
from jobs.store.redaction import redact
from jobs.store.retry import StorageError
from jobs.store.run_root import RunRoot

SETTLE_S = 1.0  # how long a takeover waits before reading the lease back


class LeaseHeld(RuntimeError):
    """Another driver holds the run root's lease."""


class LeaseLost(RuntimeError):
    """Another driver took this driver's lease (this one looked gone); it must not write the run any more."""


class LeaseRecord(TypedDict, total=False):
    """The run root's lease file: who holds it and its last heartbeat (total=False: a file another version of
    ragjudge wrote may lack a key)."""

    host: str
    pid: int
    started_at: str  # ISO 8601, UTC
    heartbeat: float  # Unix time ...
    heartbeat_at: str  # ... and the same in ISO 8601
    timeout_s: float
    token: str  # this holder's own; another token in the file means another driver took the lease


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def holder(lease: LeaseRecord) -> str:
    """Who holds a lease, in the words a refusal prints."""
    return f"host {lease.get('host')}, pid {lease.get('pid')}, started {lease.get('started_at')}"


def stale_reason(lease: LeaseRecord, timeout_s: float, now: float) -> str | None:
    """Why a lease's holder is gone, or None while it may still be running."""
    age = now - float(lease.get("heartbeat", 0.0))
    if age > timeout_s:
        return f"its last heartbeat was {age:.0f} s ago (storage.lease_timeout_s={timeout_s:g})"
    pid = int(lease.get("pid") or 0)
    if lease.get("host") == socket.gethostname() and pid > 0 and not _running(pid):
        return f"pid {pid} no longer runs on this host"
    return None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class Lease:
    """The lease of one run root, held from `__enter__` (or `acquire`) to `__exit__` (or `release`).

    `on_lost(current)` runs (on the heartbeat thread, or before a write) when another driver's token replaced
    this one's; `confirm` is the run's write fence (RunRoot's before_write).
    """

    def __init__(self, root: RunRoot, timeout_s: float, log: Callable[[str], None] = print,
                 on_lost: Callable[[LeaseRecord], None] | None = None) -> None:
        if timeout_s <= 0:
            raise ConfigError(f"storage.lease_timeout_s must be positive, got {timeout_s:g}")
        self.root, self.timeout_s, self.log, self.on_lost = root, timeout_s, log, on_lost
        now = time.time()
        self.record: LeaseRecord = {"host": socket.gethostname(), "pid": os.getpid(), "started_at": _iso(now),
                       "heartbeat": now, "heartbeat_at": _iso(now), "timeout_s": timeout_s,
                       "token": uuid.uuid4().hex}
        self.lost: LeaseRecord | None = None  # the lease that replaced this one's, once it did
        self._lock = threading.Lock()  # the heartbeat thread and writers' confirm() both refresh
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lease, or raise LeaseHeld naming the driver that holds it."""
        for _ in range(3):  # a holder may give it back between our create and our read
            if self.root.create(LEASE, redact(json.dumps(self.record, indent=2) + "\n").encode("utf-8")):
                break
            current = self.root.read_json(LEASE)
            if current is None:
                continue
            if current.get("token") == self.record["token"]:
                break  # an earlier try of the create landed, but its reply was lost in the outage
            why = stale_reason(current, self.timeout_s, time.time())
            if why is None:
                age = time.time() - float(current.get("heartbeat", 0.0))
                raise LeaseHeld(f"{self.root.uri('')} is being written by another driver ({holder(current)}; "
                                f"last heartbeat {age:.0f} s ago, in {self.root.uri(LEASE)}). Wait for it to "
                                f"end; if it is gone, its lease is stale {self.timeout_s:g} s after its last "
                                "heartbeat (storage.lease_timeout_s).")
            self.log(f"Taking over the lease of {self.root.uri('')} from {holder(current)}: {why}")
            self.root.write_json(LEASE, self.record)
            time.sleep(SETTLE_S)
            break
        else:
            raise LeaseHeld(f"{self.root.uri(LEASE)}: taken and given back by other drivers three times over")
        current = self.root.read_json(LEASE) or {}
        if current.get("token") != self.record["token"]:
            raise LeaseHeld(f"{self.root.uri('')}: another driver took the lease at the same time "
                            f"({holder(current)})")
        self._thread = threading.Thread(target=self._beat, name="run-root-lease", daemon=True)
        self._thread.start()

    @property
    def fence(self) -> LeaseFence:
        """`confirm` as the run's write fence (RunRoot's before_write), which a pickled run root carries into a
        Ray task as a `TokenFence`."""
        return LeaseFence(self)

    def confirm(self) -> None:
        """Called before each write of the run. A driver whose heartbeat is half a timeout old (it was frozen,
        suspended or cut off, so another may have taken over) reads the lease first: if it is no longer its
        own, the write does not happen (on_lost runs, or LeaseLost is raised)."""
        if time.time() - self.record["heartbeat"] > self.timeout_s / 2 and not self._refresh():
            raise LeaseLost(f"{self.root.uri('')}: this driver's lease was taken by {holder(self.lost or {})}")

    def release(self) -> None:
        """Stop the heartbeat and remove lease.json if it is still this driver's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            current = self.root.read_json(LEASE)
            if current and current.get("token") == self.record["token"]:
                self.root.delete(LEASE)
        except StorageError as e:  # the run's outcome stands; the lease goes stale after the timeout
            self.log(f"Could not give back the lease {self.root.uri(LEASE)} ({e}); another driver may take it "
                     f"{self.timeout_s:g} s after its last heartbeat (storage.lease_timeout_s)")

    def _refresh(self) -> bool:
        """Write a new heartbeat if the lease is still this driver's; else report it lost and return False.

        A missing lease.json counts as lost too: a driver that took over and finished gives it back by removing
        it, and this one must not take back a run that was finished without it.
        """
        with self._lock:
            if self.lost is None:
                current = self.root.read_json(LEASE)
                if current is not None and current.get("token") == self.record["token"]:
                    now = time.time()
                    self.record.update(heartbeat=now, heartbeat_at=_iso(now))
                    self.root.write_json(LEASE, self.record)
                    return True
                self.lost = current or {"host": None, "pid": None, "started_at": "(lease.json removed)"}
                self.log(f"Lost the lease of {self.root.uri('')} to {holder(self.lost)}")
                if self.on_lost:
                    self.on_lost(self.lost)
            return False

    def _beat(self) -> None:
        while not self._stop.wait(self.timeout_s / 4):
            try:
                if not self._refresh():
                    return
            except Exception as e:  # noqa: BLE001 - a failed beat (a network blip) is retried at the next one
                self.log(f"Lease heartbeat on {self.root.uri(LEASE)} failed, retrying: {redact(str(e))}")


class LeaseFence:
    """The run's write fence in the driver that holds the lease: its `confirm`. `for_other_process()` is the fence of a
    copy of the run root in another process (a Ray task that records a shard's rows: jobs.flow.shard_tasks)."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease

    def __call__(self) -> None:
        self.lease.confirm()

    def for_other_process(self) -> TokenFence:
        return TokenFence(self.lease.root, self.lease.record["token"])


@dataclass(frozen=True)
class TokenFence:
    """The write fence of a process other than the lease holder's, which has no heartbeat of its own to go by:
    before each write it reads lease.json, and refuses once the file holds another driver's token or none (the
    driver lost its lease, or gave it back)."""

    root: RunRoot
    token: str

    def __call__(self) -> None:
        current = self.root.read_json(LEASE)
        if current is None or current.get("token") != self.token:
            raise LeaseLost(f"{self.root.uri('')}: the lease this task wrote under is gone "
                            f"({holder(current) if current else 'lease.json removed'})")

    def for_other_process(self) -> TokenFence:
        return self
