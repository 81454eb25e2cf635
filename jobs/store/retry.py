"""The run root's storage calls ride out an outage, and a full disk is told apart from one.

An object store that stops answering for a while (restarted, a network blip) must not fail a cell with hours
of answers behind it, nor may a failed read pass for a missing file (the lease would count itself lost). So
each storage call of a RunRoot is tried again on a fault that may pass (a connection refused, reset or timed
out, an HTTP 5xx or a throttling reply), with waits of 0.5 s doubling to 15 s, for up to `storage.retry_s`;
past it StorageUnreachable names the file, the run root, the time waited and the last error. A full disk
(ENOSPC, EDQUOT) does not pass by waiting: StorageFull at once, naming the path. Either fails the cell
(jobs.sweep.cell), and the rerun resumes from the parts stored before. An outage and its end are logged as warnings
(logger `jobs.store.run_root`), one each per call.
"""
from __future__ import annotations

import errno
import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from jobs.store.redaction import redact

T = TypeVar("T")
FIRST_WAIT_S = 0.5
MAX_WAIT_S = 15.0
WAIT_LINE_S = 30.0  # while an outage lasts: a line this often after the first, saying how long of retry_s
_FULL = {errno.ENOSPC, errno.EDQUOT}
# S3 error codes of a store that is busy or restarting, whatever the HTTP status it came with.
_BUSY = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "ServiceUnavailable", "InternalError"}
log = logging.getLogger("jobs.store.run_root")


class StorageError(OSError):
    """A storage call of the run root failed for good: the cell fails, and a rerun resumes it."""


class StorageUnreachable(StorageError):
    """The storage did not answer for `storage.retry_s`."""


class StorageFull(StorageError):
    """No space is left on the device that holds the run."""


class UnreadableFile(StorageError):
    """A stored file is there but cannot be decoded (cut short, emptied, garbled); the message names it."""


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The error and what it was raised from (s3fs raises an OSError from botocore's ClientError)."""
    seen: list[BaseException] = []
    while error is not None and not any(error is e for e in seen):
        seen.append(error)
        yield error
        error = error.__cause__


@functools.cache
def _connection_errors() -> tuple[type[BaseException], ...]:
    """A connection that failed, broke or timed out: the builtins' (local, NFS), botocore's and aiohttp's."""
    import aiohttp
    import botocore.exceptions as boto

    return (ConnectionError, TimeoutError, boto.ConnectionError, boto.HTTPClientError,
            aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)


def transient(error: BaseException) -> bool:
    """Whether waiting may cure the fault: a failed connection, a timeout, an HTTP 5xx, a throttled request."""
    for e in _causes(error):
        if isinstance(e, _connection_errors()):
            return True
        response = getattr(e, "response", None)  # botocore's ClientError
        if isinstance(response, dict):
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            if status >= 500 or response.get("Error", {}).get("Code") in _BUSY:
                return True
    return False


def disk_full(error: BaseException) -> bool:
    return any(isinstance(e, OSError) and e.errno in _FULL for e in _causes(error))


def retrying(action: Callable[[], T], *, doing: str, file: str, root: str, retry_s: float) -> T:
    """`action()`, tried again while it fails transiently, for up to `retry_s` seconds in all.

    `doing` ("write", "read", ...), `file` and `root` (URIs) say what failed in the messages. A StorageError
    from inside (the lease's fence reading lease.json) is final: it had its own retries.
    """
    start = time.monotonic()
    wait, tries, said = FIRST_WAIT_S, 0, 0.0
    while True:
        tries += 1
        try:
            result = action()
        except StorageError:
            raise
        except Exception as e:
            if disk_full(e):
                raise StorageFull(f"cannot {doing} {file}: no space left on the device (run root {root}). Free "
                                  "space there and rerun: the run resumes from what is stored.") from e
            if not transient(e):
                raise
            waited = time.monotonic() - start
            last = redact(f"{type(e).__name__}: {e}")
            if waited >= retry_s:
                raise StorageUnreachable(
                    f"cannot {doing} {file}: the storage did not answer for {waited:.1f} s ({tries} tries, "
                    f"storage.retry_s={retry_s:g}; run root {root}); last error: {last}. Rerun once it is "
                    "back: the run resumes from what is stored.") from e
            if tries == 1:
                log.warning("storage: cannot %s %s (%s); retrying for up to %g s", doing, file, last, retry_s)
                said = waited
            elif waited - said >= WAIT_LINE_S:  # a long outage: a line now and then, what it waits for
                log.warning("storage: still cannot %s %s: %.0f s of %g s (storage.retry_s), %d tries; last error: %s",
                            doing, file, waited, retry_s, tries, last)
                said = waited
            time.sleep(min(wait, retry_s - waited))
            wait = min(2 * wait, MAX_WAIT_S)
        else:
            if tries > 1:
                log.warning("storage: %s %s done after %.1f s (%d tries)", doing, file, time.monotonic() - start, tries)
            return result
