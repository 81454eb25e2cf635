"""Which Ray cluster a sweep runs on: the configured one, after checking that it answers, or a new local one.

Ray's own `ray.init()` without an address joins whatever /tmp/ray/ray_current_cluster names, and a cluster that
died without cleaning up leaves that file behind: the driver then spent minutes reaching a dead GCS
(docs/measurements.md, "Figures moved from the code's comments"). So a run with no address asks for a new
local cluster explicitly, and a configured address is probed over TCP first, so one that does not answer fails
in seconds, naming it, instead of in Ray's reconnect loop.
"""
from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable

import pyarrow as pa

from actors.engine_calls import RESTART_WAIT_S
from jobs.config import SweepConfig
from jobs.engines.rows import LIGHT

# Ray Data fails a dataset that moves no block for 30 min (its default). A cell's batches can rightly wait longer:
# on an engine still loading its weights, restarting on another node (actors.engine_calls waits RESTART_WAIT_S),
# or busy with other cells' queues. A fresh-clone demo on a loaded machine lost its mtRAG cell that way.
NO_PROGRESS_S = 2 * RESTART_WAIT_S
HEAD_PROBE_S, HEAD_LINE_S = 5.0, 15.0  # a joined head: how often it is probed, how often its silence is said
HEAD_RECONNECT_S = 60.0  # Ray's gcs_rpc_server_reconnect_timeout_s default, after which Ray ends a driver


class ClusterUnreachable(Exception):
    """The configured Ray address does not answer, or a new local cluster did not start."""


def cluster_address(sweep: SweepConfig) -> str | None:
    """The Ray cluster the sweep joins (cluster.address, else RAY_ADDRESS), or None: a local one of this machine."""
    return sweep.cluster.address or os.environ.get("RAY_ADDRESS")


def connect_ray(sweep: SweepConfig) -> str:
    """Join the cluster in cluster.address or RAY_ADDRESS, or start a local one; the line that says which."""
    import ray

    address = cluster_address(sweep)
    if address:  # before anything else: a configured address that does not answer is the user's to fix
        check_answers(address, sweep.cluster.connect_timeout_s)
    if ray.is_initialized():
        return "Ray: already connected in this process"
    if address:
        try:
            ray.init(address=address, log_to_driver=False)
        except Exception as e:  # Ray raises RuntimeError, ConnectionError or its own for a refusal
            raise join_failed(address, e) from e
        said = f"Ray: joined the cluster at {address}"
        if address != "auto":
            threading.Thread(target=say_while_head_is_gone, args=(address,), name="ragjudge-head", daemon=True).start()
    else:
        # "local", not None: None would join the cluster named in Ray's address file, dead or alive.
        try:
            ray.init(address="local", num_cpus=sweep.cluster.num_cpus, include_dashboard=False,
                     log_to_driver=False,
                     _system_config={"num_workers_soft_limit": idle_workers(sweep.cluster.num_cpus)})
        except Exception as e:
            if (unstarted := local_start_failed(e, sweep.cluster.num_cpus)) is None:
                raise
            raise unstarted from e
        said = f"Ray: started a local cluster ({ray.get_runtime_context().gcs_address})"
    configure_ray_data()
    return said


def local_start_failed(error: Exception, num_cpus: int | None) -> ClusterUnreachable | None:
    """The one-line error for a local cluster that `ray.init` could not start in time (its GCS or raylet did not
    come up: a machine under load), saying what to try; None for any other error, which is no start's.

    Ray raises a TimeoutError, ConnectionError or RuntimeError for its GCS, and a bare Exception when the
    raylet does not register within its fixed 30 s: of that type, only its own message is taken."""
    if not isinstance(error, (TimeoutError, ConnectionError, RuntimeError)) and not (
            type(error) is Exception and "timed out" in str(error)):
        return None
    said = first_line(error)
    cpus = f"cluster.num_cpus (now {num_cpus})" if num_cpus else "cluster.num_cpus (now all of this machine's)"
    return ClusterUnreachable(
        f"the local Ray cluster did not start: {said[:200]}; try again once the machine is less busy, with a "
        f"smaller {cpus}, or start one first (`ray start --head`) and give its address in cluster.address")


def first_line(error: BaseException) -> str:
    """The error's first non-blank line (Ray's messages run to pages), or its type's name."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)


def join_failed(address: str, error: BaseException) -> ClusterUnreachable:
    """The one-line error for a cluster that answers but that `ray.init` could not join, with what to check: a
    head that wants a token says so only in the error's cause, which is searched too."""
    chain, cause = [], error
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    first = first_line(error)
    if any("AuthToken" in str(e) or "Unauthenticated" in str(e) for e in chain):
        return ClusterUnreachable(
            f"cannot join the Ray cluster at {address}: its head wants a token (Ray's token authentication); set "
            "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH (or RAY_AUTH_TOKEN) to the head's token")
    return ClusterUnreachable(f"cannot join the Ray cluster at {address}: {first[:240]}; check that this machine's "
                              "Ray and Python versions are the head's (`ray status` on the head)")


def idle_workers(num_cpus: int | None) -> int:
    """Worker processes a local cluster keeps when they are idle: as many as Ray Data's light tasks (the `ask`
    stage's) that fit its CPUs. With Ray's default, one a CPU, the others were killed a second after each
    shard's dataset ended and started again for the next, and those starts slowed a cell with a fast engine
    (perf/framework_ceiling.py; docs/measurements.md, "The framework's ceiling: a judged cell with an engine that
    costs nothing, 10k to 1M requests"). A joined cluster sets its own (RAY_num_workers_soft_limit where its nodes
    start)."""
    return math.ceil((num_cpus or os.cpu_count() or 1) / LIGHT["num_cpus"])


def configure_ray_data() -> None:
    """This process's Ray Data settings for sweeps: no progress bars (the sweep prints its own), the
    no-progress limit above an engine's restart wait, and Arrow's memory from the system allocator.

    Arrow's default pool (mimalloc) keeps what it frees for reuse. The driver's Arrow work comes in bursts: a
    cell's requests made into Ray Data blocks, its answers written as Parquet. The system allocator gives
    large buffers back, and the driver kept about half as much with it (docs/measurements.md, "The real size on the
    2-core AVX-512 machine: what grew, and what changed"). Ray Data's workers keep their default."""
    import ray

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_no_progress_timeout_s = NO_PROGRESS_S
    pa.set_memory_pool(pa.system_memory_pool())


def check_answers(address: str, probe_s: float) -> None:
    """Raise ClusterUnreachable unless the address's host:port accepts a TCP connection within `probe_s`.

    "auto" is Ray's to resolve, so it is not probed. Refused connections are tried again every half second until
    the deadline (a head being started by the same job script).
    """
    if address == "auto":
        return
    host, port = host_port(address)
    deadline = time.monotonic() + probe_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, min(5.0, deadline - time.monotonic()))):
                return
        except OSError as e:
            if time.monotonic() + 0.5 >= deadline:
                raise ClusterUnreachable(f"no Ray cluster answers at {address} (tried for {probe_s:.0f} s: "
                                         f"{e.strerror or e}); check cluster.address or RAY_ADDRESS") from None
            time.sleep(0.5)


def say_while_head_is_gone(address: str, log: Callable[[str], None] = print,
                           until: threading.Event | None = None) -> None:
    """For the driver's life (or `until` is set): the joined cluster's head probed every HEAD_PROBE_S; while it
    does not answer, a line every HEAD_LINE_S (Ray ends the driver once it has been gone for its GCS reconnect
    timeout, with no line of its own on the console), and one when it answers again."""
    gone_at, said, until = None, 0.0, until or threading.Event()
    while not until.wait(HEAD_PROBE_S):
        try:
            check_answers(address, HEAD_PROBE_S / 2)
        except ClusterUnreachable:
            gone_at = gone_at or time.monotonic() - HEAD_PROBE_S
            if time.monotonic() - said >= HEAD_LINE_S:
                said = time.monotonic()
                log(f"the Ray head at {address} has not answered for {said - gone_at:.0f} s; Ray ends this run "
                    f"once it has been gone {HEAD_RECONNECT_S:.0f} s (its gcs_rpc_server_reconnect_timeout_s); what is "
                    "stored stays, and the same command resumes once a head is up")
            continue
        if gone_at is not None:
            log(f"the Ray head at {address} answers again after {time.monotonic() - gone_at:.0f} s")
            gone_at, said = None, 0.0


def host_port(address: str) -> tuple[str, int]:
    """(host, port) of a Ray address: 'host:port' or 'ray://host:port' (Ray Client, port 10001 by default)."""
    rest = address.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host:
        if address.startswith("ray://"):
            return rest, 10001
        raise ClusterUnreachable(f"Ray address {address!r} has no port: expected host:port or ray://host:port")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise ClusterUnreachable(f"Ray address {address!r}: port {port!r} is not a number") from None
