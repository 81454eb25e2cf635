"""Weights ahead of engines: while a sweep's engines run, the next models' hub repositories download into the
Hugging Face cache, one at a time, in the order their engines will start, on a thread of the driver (so on the
driver's node: engines on other nodes read the same snapshot where the cache is shared, and fetch their own
otherwise). Only the files each engine reads are fetched (jobs.engines.weights), every request to the Hub bounded.
An engine about to start waits for its own weights (moved to the front of the queue if their download has not
begun, never fetched a second time beside it; a line every PROGRESS_S seconds says it waits) and loads the snapshot folder, a local copy,
where every engine runs on the driver's machine (`localize`: the local cluster `ragjudge run` starts). On a
cluster of other machines (cluster.address, RAY_ADDRESS; an autoscaler adds them as engines ask for GPUs) a
folder of the driver's disk may not be there: engines still wait, then load by hub id, from the same cache where
HF_HUB_CACHE is shared at the same path, else fetching their own as before.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from actors.worker_model import WorkerModel
from jobs.config import ModelConfig
from jobs.engines.weights import (
    PROGRESS_S,
    HubWeights,
    cached,
    download,
    gb,
    hub_weights,
    revision_of,
    source_of,
)

Key = tuple[str, str | None]  # (repository, revision)


class WeightsUnavailable(RuntimeError):
    """A model's hub weights could not be fetched; the cells that need them fail with this message."""


class Prefetch:
    """Downloads `weights` in order on one daemon thread; `local` hands an engine its snapshot folder."""

    def __init__(self, weights: Iterable[HubWeights], log: Callable[[str], None] = print, localize: bool = True,
                 every_s: float = PROGRESS_S):
        self.log, self.localize, self.every_s = log, localize, every_s
        self._queue = list(weights)
        self._known = {(w.repo, w.revision): w for w in self._queue}
        self._done: dict[Key, str | Exception] = {}
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="ragjudge-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                if not self._queue:
                    return
                weights = self._queue.pop(0)
            result = self._fetch(weights)
            with self._changed:
                self._done[(weights.repo, weights.revision)] = result
                self._changed.notify_all()

    def _fetch(self, weights: HubWeights) -> str | Exception:
        if found := cached(weights):  # what its engines read is here: no request
            return found.folder
        self.log(f"prefetching {weights.what} for {', '.join(weights.users)}")
        start = time.perf_counter()
        try:
            folder = download(weights, self.log, self.every_s)
        except Exception as e:  # noqa: BLE001 - the cells that need these weights fail with it; the rest run
            self.log(f"prefetching {weights.what} failed: {type(e).__name__}: {_first_line(e)}")
            return e
        done = cached(weights)
        self.log(f"prefetched {weights.what}: {gb(done.bytes if done else 0)} in {time.perf_counter() - start:.1f} s")
        return folder

    def local(self, spec: str, revision: str | None) -> str:
        """The snapshot folder of a hub spec of the sweep, once its download is done (waited for, brought to the
        front of the queue if it has not begun); any other spec unchanged."""
        key = (spec, revision)
        if key not in self._known:
            return spec
        start = time.monotonic()
        with self._changed:
            ahead = next((w for w in self._queue if (w.repo, w.revision) == key), None)
            if ahead is not None:  # its engine is starting before the queue reached it
                self._queue.remove(ahead)
                self._queue.insert(0, ahead)
            # Bounded by the download's own: each request to the Hub gives up after hub_timeout_s without an answer.
            while key not in self._done:
                if not self._changed.wait(self.every_s):
                    self.log(f"an engine waits for {self._known[key].what} to download: "
                             f"{time.monotonic() - start:.0f} s")
            result = self._done[key]
        if isinstance(result, Exception):
            raise WeightsUnavailable(f"{spec}: {type(result).__name__}: {_first_line(result)}")
        return result

    def localized(self, model: ModelConfig, worker: WorkerModel, path: str) -> tuple[WorkerModel, str]:
        """An engine's settings and weights path once the hub specs it loads (its weights, and the tokenizer of
        the model's own engine) are downloaded, those specs replaced by their local snapshots when `localize`."""
        own = path == worker.path
        local: dict[str, str] = {}
        for key in ("path", "tokenizer") if own else ("reference",):
            spec = getattr(worker, key)
            if spec and source_of(spec) == "hub":
                folder = self.local(spec, revision_of(model, key))
                local[key] = folder if self.localize else spec
        worker = replace(worker, **local)
        return worker, getattr(worker, "path" if own else "reference")

    def close(self) -> None:
        """No download starts after this (an engine that still asks for one is told); one under way finishes on
        its daemon thread, and a later fetch resumes what it left."""
        with self._changed:
            for weights in self._queue:
                self._done[(weights.repo, weights.revision)] = WeightsUnavailable("the sweep ended before its fetch")
            self._queue.clear()
            self._changed.notify_all()


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else ""


def ahead_of_engines(models: Iterable[ModelConfig], log: Callable[[str], None] = print,
                     localize: bool = True) -> Prefetch | None:
    """A prefetch of the models' hub weights in the order given (the order their engines start), or None when
    there is nothing to fetch or HF_HUB_OFFLINE=1 forbids it (preflight has then checked the cache)."""
    weights = hub_weights(models)
    if not weights or os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    return Prefetch(weights, log, localize)
