"""What the batch engines (openai_batch, anthropic_batch) share: a route's requests sent as one provider batch,
at the provider's batch price, instead of one call each.

The batch's id and state go into the cell's BatchSlot (manifest.json) the moment it is submitted, and again at
every change of state, so a driver killed while the provider works is resumed by a rerun that polls the same
batch. The batch is polled every `batch.poll_s` until the provider says it ended; a run that waits longer than
`batch.max_wait_s` fails the cell with BatchPending and leaves the batch to the rerun. Results are mapped back to
the requests by custom_id and stream to the cell like any engine's answers. A request the batch did not answer
is an error row in Failure.row_error's words ('api: HTTP 500 (model 'x'): ...', 'api: batch expired (model
'x')'), so retrying retryable errors treats it as it treats the http engine's. The engine waits in the driver:
no actor, no GPU.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, ClassVar, Protocol

from actors.sampling import REQUEST_INPUTS
from actors.worker_model import WorkerModel
from benchmarks.boundary_types import JsonObject
from benchmarks.protocol import Answer, Request
from benchmarks.row_types import PromptAnswer
from jobs.config import ModelConfig
from jobs.engines.base import BatchSlot, Log, Servers, worker_model
from jobs.engines.http.client import TEXT_ONLY, Failure, api_credentials
from jobs.engines.http.engine import Http
from jobs.store.manifest import BatchEntry

Result = tuple[str, PromptAnswer]  # a request's custom_id and its answer
WAIT_LINE_S = 600.0  # while a submitted batch runs: at most one line of its wait this often (a new state: at once)


class BatchPending(RuntimeError):
    """The batch did not end within batch.max_wait_s: the cell fails, the batch is kept for the rerun."""


class BatchGone(RuntimeError):
    """The provider no longer knows a batch a stopped run submitted (e.g. deleted after its retention)."""


class Provider(Protocol):
    """One provider's batch protocol; an entry is what the BatchSlot keeps (id, state in the provider's words)."""

    final: frozenset[str]  # states after which the batch changes no more

    def custom_id(self, request_id: str) -> str: ...

    def submit(self, requests: list[Request]) -> BatchEntry: ...

    def poll(self, entry: BatchEntry) -> BatchEntry:
        """The entry with the batch's state now; BatchGone where the provider does not know the batch."""
        ...

    def results(self, entry: BatchEntry) -> Iterator[Result | None]:
        """Each result of an ended batch; None for a line that cannot be read (counted, never raised)."""
        ...

    def unanswered(self, entry: BatchEntry) -> Failure:
        """Why a request of the ended batch has no result (e.g. the batch failed its validation, or expired)."""
        ...


class _Unkept:
    """A BatchSlot outside a cell (e.g. `ragjudge validate`): the batch is kept for this call only."""

    def __init__(self) -> None:
        self.entry: BatchEntry | None = None

    def get(self) -> BatchEntry | None:
        return self.entry

    def set(self, entry: BatchEntry) -> None:
        self.entry = entry


class BatchApi(Http):
    """An API judge asked through its provider's batch API; credentials, the `api:` section and checks as the
    http engine's, and a `batch:` section of its own."""

    submits = True
    streams = False  # a provider batch is one list of requests, submitted once: asked shard by shard
    sections = Http.sections | {"batch"}  # jobs/engines/http/settings.py

    provider: ClassVar[Callable[..., Provider]]  # its provider's batch protocol, made with (model, **credentials)

    def answer(self, requests: list[Request], model: ModelConfig, log: Log, host: Servers,
               batch: BatchSlot | None = None) -> Iterator[Answer]:
        worker = worker_model(model)
        provider = self.provider(worker, **api_credentials(worker))
        slot = batch if batch is not None else _Unkept()
        todo = {provider.custom_id(str(r["request_id"])): r for r in requests}
        if (entry := slot.get()) is not None:  # submitted by a run that stopped: its answers are not stored
            log(f"model '{model.name}': polling batch {entry['id']} ({entry['state']}), submitted before")
            try:
                entry = _kept(slot, entry, provider.poll(entry), log, model.name)
            except BatchGone:
                log(f"WARNING model '{model.name}': the provider no longer knows batch {entry['id']}; "
                    "its requests are submitted again")
            else:
                yield from _collect(provider, slot, entry, todo, None, worker, log)
        if todo:
            entry = provider.submit(list(todo.values()))
            slot.set(entry)
            log(f"model '{model.name}': submitted batch {entry['id']} of {len(todo)} requests ({entry['state']})")
            yield from _collect(provider, slot, entry, todo, set(todo), worker, log)


def _kept(slot: BatchSlot, before: BatchEntry, after: BatchEntry, log: Log, name: str) -> BatchEntry:
    """`after`, written to the slot where it differs from `before`; a new state is logged."""
    if after != before:
        slot.set(after)
        if after["state"] != before["state"]:
            log(f"model '{name}': batch {after['id']} {before['state']} -> {after['state']}")
    return after


def _collect(provider: Provider, slot: BatchSlot, entry: BatchEntry, todo: dict[str, Request],
             held: set[str] | None, model: WorkerModel, log: Log) -> Iterator[Answer]:
    """The answers of the batch to the requests in `todo` (popped as they come). `held`: the custom_ids this call
    submitted in it, each answered (with an error where the batch has no result for it); None for a batch an
    earlier run submitted, whose other requests stay in `todo` to be submitted again."""
    entry = _wait(provider, slot, entry, model, log)
    unreadable = 0
    for result in provider.results(entry):
        if result is None:
            unreadable += 1
        elif (request := todo.pop(result[0], None)) is not None:  # else stored before, or not asked now
            yield _row(request, result[1])
    if unreadable:
        log(f"WARNING model '{model.name}': {unreadable} lines of batch {entry['id']}'s results cannot be read")
    failure = provider.unanswered(entry)
    for custom_id in sorted(held or ()):
        if custom_id in todo:
            yield _row(todo.pop(custom_id), {"text": None, "n_tokens": 0, "error": failure.row_error(model.name)})


def _wait(provider: Provider, slot: BatchSlot, entry: BatchEntry, model: WorkerModel, log: Log
          ) -> BatchEntry:
    """The entry once its batch ended, polled every batch.poll_s; BatchPending after batch.max_wait_s. A new
    state is a line; so, every WAIT_LINE_S at most, is the wait ('model 'm': batch B still in_progress: 20 min
    of 1500 min (batch.max_wait_s)')."""
    wait_s, poll_s = float(model.batch_max_wait_s), float(model.batch_poll_s)
    start = said = time.monotonic()
    deadline = start + wait_s
    while entry["state"] not in provider.final:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BatchPending(f"model '{model.name}': batch {entry['id']} still {entry['state']} after "
                               f"{wait_s:g} s (batch.max_wait_s); manifest.json keeps it and a rerun polls it")
        time.sleep(min(poll_s, left))
        entry = _kept(slot, entry, provider.poll(entry), log, model.name)
        if entry["state"] not in provider.final and time.monotonic() - said >= WAIT_LINE_S:
            log(f"model '{model.name}': batch {entry['id']} still {entry['state']}: "
                f"{(time.monotonic() - start) / 60:.0f} min of {wait_s / 60:.0f} min (batch.max_wait_s)")
            said = time.monotonic()
    return entry


def _row(request: Request, answer: PromptAnswer) -> Answer:
    """The answer row of a request, as the http engine writes it (the request's keys but its inputs)."""
    return {**{k: v for k, v in request.items() if k not in REQUEST_INPUTS}, **answer, **TEXT_ONLY}


def as_object(body: Any) -> Any:
    """A JSON body read with attribute access, as jobs.engines.http.client.completion_text reads the client's objects;
    anything but an object is handed over as it is (completion_text says what is wrong with it)."""
    return json.loads(json.dumps(body), object_hook=lambda d: SimpleNamespace(**d)) if isinstance(body, dict) else body


def json_lines(text: str) -> Iterator[JsonObject | None]:
    """The objects of a JSONL results file; None for a line that is not one."""
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            yield None
            continue
        yield record if isinstance(record, dict) and isinstance(record.get("custom_id"), str) else None
