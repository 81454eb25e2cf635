"""A Ray Data task's call to a sweep's long-lived engine actor, waiting out the engine's restart.

When the node under an engine is lost, Ray restarts the actor elsewhere (max_restarts) and retries the calls it
held (max_task_retries); but a call made while the actor is unreachable or restarting fails at once with
ActorUnavailableError, and Ray Data ends the whole dataset on the first task that raises. Waiting here until
the engine answers again turns a lost node into a restart, not a failed cell.
"""
from __future__ import annotations

import time
from typing import Any

RESTART_WAIT_S = 1800.0  # a 70B engine's restart on another node: its weights load again, from disk or the hub


def call_engine(server: str, method: str, *args: Any, wait_s: float = RESTART_WAIT_S) -> Any:
    """`server.method(*args)` on the named actor, tried again every 2 s while it is unavailable, for `wait_s`."""
    import ray
    from ray.exceptions import ActorUnavailableError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return ray.get(getattr(ray.get_actor(server), method).remote(*args))
        except ActorUnavailableError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(2.0)
