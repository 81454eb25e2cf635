"""What a wait on the cluster says: an engine waiting to be placed names what it needs and what the cluster has
free ('needs 4 GPU, 1 CPU; the cluster has 2 GPU, 6 CPU free'), and a wait past its bound fails with one line.

docs/reliability.md lists every wait of the product with its bound ("Waits").
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SHOWN = ("GPU", "CPU")  # the resources a line names, in this order, then any other the engine asks for


class WaitTimeout(Exception):
    """A wait on something outside the driver (an engine's placement or start, a Serve deployment) passed its
    bound; the message is the one line that says what, how long and what was missing. The cell that waited
    fails with it; a rerun of the same command resumes."""


def amounts(resources: Mapping[str, float], keys: list[str]) -> str:
    """'4 GPU, 1 CPU', whole numbers without their '.0'."""
    return ", ".join(f"{resources.get(key, 0.0):g} {key}" for key in keys)


def shortfall(need: Mapping[str, float], free: Mapping[str, float],
              nodes: list[Mapping[str, float]] | None = None) -> str:
    """'needs 4 GPU, 1 CPU; the cluster has 2 GPU, 6 CPU free' (the resources the engine asks for, and what
    of them Ray's cluster holds unused now); where it all adds up but no one node has it (an actor, or a
    STRICT_PACK group, is placed on one node), ', at most 2 GPU, 4 CPU on one node' from `nodes`' free."""
    keys = [key for key in SHOWN if need.get(key)] + sorted(k for k in need if k not in SHOWN and need[k])
    if not keys:
        return "needs no CPU or GPU"
    said = f"needs {amounts(need, keys)}; the cluster has {amounts(free, keys)} free"
    enough = all(free.get(key, 0.0) >= need[key] for key in keys)
    if enough and nodes:
        most = {key: max(node.get(key, 0.0) for node in nodes) for key in keys}
        said += f", at most {amounts(most, keys)} on one node"
    return said


def cluster_free() -> dict[str, float]:
    """The cluster's unused resources (Ray's `available_resources`); empty where Ray cannot say."""
    import ray

    try:
        return {key: float(value) for key, value in ray.available_resources().items()}
    except Exception:  # noqa: BLE001 - the GCS busy or restarting: the line says nothing free rather than fail
        return {}


def nodes_free() -> list[dict[str, float]]:
    """Each alive node's unused resources; empty where Ray cannot say."""
    from ray._private import state

    try:
        return [{key: float(value) for key, value in free.items()}
                for free in state.available_resources_per_node().values()]
    except Exception:  # noqa: BLE001 - the GCS busy or restarting: the line leaves the nodes out
        return []


def unplaced_demand() -> str | None:
    """'Ray cannot place 3 tasks or actors yet (3 x 0.25 CPU); the cluster has 0 CPU free', from the demand Ray's
    autoscaler sees (what Ray could not place yet); None when nothing waits or Ray cannot say."""
    import ray
    from ray.autoscaler.v2.sdk import get_cluster_status

    try:
        demand = get_cluster_status(ray.get_runtime_context().gcs_address).resource_demands
    except Exception:  # noqa: BLE001 - the GCS busy: unknown this time, asked again at the next line
        return None
    shapes = [(request.bundle, request.count) for waiting in demand.ray_task_actor_demand
              for request in waiting.bundles_by_count]
    if not shapes:
        return None
    keys = [key for key in SHOWN if any(bundle.get(key) for bundle, _ in shapes)]
    count = sum(n for _, n in shapes)
    each = ", ".join(f"{n} x {amounts(bundle, [k for k in keys if bundle.get(k)])}" for bundle, n in shapes)
    return (f"Ray cannot place {count} task{'s' if count > 1 else ''} or actor{'s' if count > 1 else ''} yet "
            f"({each}); the cluster has {amounts(cluster_free(), keys)} free")


def placed(handle: Any) -> bool | None:
    """Whether Ray has placed the actor (a worker process runs its constructor, or ran it); None where Ray's
    actor table cannot say. An actor waiting for room has no process yet (its table's Pid is 0)."""
    entry = _actor_entry(handle)
    return None if entry is None else bool(entry.get("Pid"))


def actor_state(handle: Any) -> str | None:
    """The actor's state in Ray's actor table (ALIVE, RESTARTING, PENDING_CREATION, DEAD); None where the
    table cannot say."""
    entry = _actor_entry(handle)
    return None if entry is None else entry.get("State")


def _actor_entry(handle: Any) -> Mapping | None:
    from ray._private import state

    try:
        entry = state.actors(handle._actor_id.hex())
    except Exception:  # noqa: BLE001 - the GCS busy: unknown this time, asked again at the next line
        return None
    return entry if isinstance(entry, Mapping) and entry else None
