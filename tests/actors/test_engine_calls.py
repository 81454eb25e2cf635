"""A Ray Data task's call to an engine that is restarting (a lost node, a crash) waits for the new engine
instead of failing the dataset (actors.engine_calls; issue 28, item 2)."""
from __future__ import annotations

import os
import time

import pytest

from actors.engine_calls import call_engine


@pytest.mark.integration
def test_a_call_during_the_engines_restart_gets_the_restarted_engines_answer(ray_session, tmp_path):
    ray = ray_session
    from ray.exceptions import ActorUnavailableError

    class SlowToRestart:
        """Starts at once the first time; its restart takes `restart_s` (a model loading again). Defined
        here, so Ray pickles it by value: workers cannot import test modules."""

        def __init__(self, marker: str, restart_s: float):
            if os.path.exists(marker):
                time.sleep(restart_s)
            open(marker, "w").close()

        def answer(self, x: int) -> tuple[int, int]:
            return x, os.getpid()

    # No task retries of Ray's own: what is tested is call_engine's wait, not Ray's retry budget, which a slow
    # restart (a vLLM engine: minutes) runs through.
    actor = ray.remote(SlowToRestart).options(name="engine-calls-slow", max_restarts=2, max_task_retries=0)
    handle = actor.remote(str(tmp_path / "started"), 5.0)
    _, first_pid = ray.get(handle.answer.remote(1))

    ray.kill(handle, no_restart=False)
    time.sleep(0.5)
    with pytest.raises(ActorUnavailableError):  # what a Ray Data task saw, and the dataset failed on
        ray.get(ray.get_actor("engine-calls-slow").answer.remote(2))

    ray.kill(handle, no_restart=False)
    time.sleep(0.5)
    answer, pid = call_engine("engine-calls-slow", "answer", 3)
    assert answer == 3 and pid != first_pid
    ray.kill(handle, no_restart=True)
