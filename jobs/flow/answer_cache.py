"""A cell's requests through the answer store (jobs.store.answers): those it holds come back from it, marked
`cached`, and only the rest reach the engine; once a shard has every answer, the ones its engines gave are
added to the store for the next run. `CellAnswerStore` is a judged cell's one way to the store; a ranked cell's
query rewrites use the functions below it directly, in one call.

Answers are kept per model path (a hub id, a folder, a built-in spec, an API model's name), so two model files
of one model share them where their identities (jobs.engines.identity) agree.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from actors.sampling import REQUEST_INPUTS
from benchmarks.protocol import Answer, Request
from jobs.config import ModelConfig, to_dict
from jobs.engines.identity import model_identity
from jobs.store.answers import AnswerStore, answer_key

Keys = dict[str, tuple[str, str]]  # request id -> (the answering model's path, the answer's key)


def answer_keys(store: AnswerStore, answerer: ModelConfig, requests: list[Request]) -> Keys:
    """Each request's key in the store."""
    identity = identity_of(store, answerer)
    return {r["request_id"]: (answerer.path, answer_key(identity, r)) for r in requests}


def identity_of(store: AnswerStore, answerer: ModelConfig) -> str:
    """The answerer's identity, worked out once per store (a folder's weights identity hashes its files) and
    kept in `store.identities`, which a Ray task's copy of the store is handed (jobs.flow.shard_tasks)."""
    settings = json.dumps(to_dict(answerer), sort_keys=True, default=str)
    if (identity := store.identities.get(settings)) is None:
        identity = store.identities[settings] = model_identity(answerer)
    return identity


def asked_or_cached(store: AnswerStore | None, answerer: ModelConfig, requests: list[Request], keys: Keys,
                    ask: Callable[[list[Request]], Iterable[Answer]], log: Callable[[str], None]) -> Iterator[Answer]:
    """The answers to `requests`: the store's first, then `ask`'s for the rest (not called when none is left).
    Records each request's key in `keys`; without a store, all are asked."""
    if store is None:
        yield from ask(requests) if requests else ()
        return
    these = answer_keys(store, answerer, requests)
    keys.update(these)
    mine = {request_id: key for request_id, (_, key) in these.items()}
    found = store.find(answerer.path, mine.values())
    asked = [r for r in requests if mine[r["request_id"]] not in found]
    if found:
        log(f"{len(requests) - len(asked)} answers of {answerer.name} from the answer store, {len(asked)} to ask")
    for r in requests:
        if mine[r["request_id"]] in found:
            yield {**{k: v for k, v in r.items() if k not in REQUEST_INPUTS}, **found[mine[r["request_id"]]],
                   "cached": True}
    if asked:
        yield from ask(asked)


def keep_answers(store: AnswerStore | None, run: str, answered: list[Answer], keys: Keys) -> None:
    """Add the answers the cell's engines gave (not the store's, not failed ones) to the store: those of this
    attempt and, where `keys` has them, of attempts before it."""
    if store is None:
        return
    by_model: dict[str, dict[str, Answer]] = defaultdict(dict)
    for row in answered:
        if row["request_id"] in keys and not row.get("cached") and not row.get("error"):
            path, key = keys[row["request_id"]]
            by_model[path][key] = row
    for path, answers in by_model.items():
        store.add(path, run, answers)


class CellAnswerStore:
    """A judged cell's answer store: the answers it holds for a shard's requests, and, once the shard is
    answered, the answers its engines gave kept for the next run. Each shard's keys are held from its first
    look until it is kept. Without a store (storage.answer_cache off) everything is asked and nothing kept."""

    def __init__(self, store: AnswerStore | None, run: str, log: Callable[[str], None] | None = None):
        self.store, self.run = store, run
        self.log = log or self.store_log  # a task's copy has no log of its own: its store's, which prints
        self.keys: dict[int, Keys] = {}  # shard -> request id -> (its answerer's path, its answer's key)

    def store_log(self, line: str) -> None:
        if self.store is not None:
            self.store.log(line)

    def found(self, model: ModelConfig, requests: Iterable[Request]) -> list[Answer]:
        """The store's answers to `requests`; none is asked, no key is held."""
        if self.store is None:
            return []
        return list(asked_or_cached(self.store, model, list(requests), {}, lambda asked: (), self.log))

    def asked_or_cached(self, shard: int, model: ModelConfig, requests: list[Request],
                        ask: Callable[[list[Request]], Iterable[Answer]]) -> Iterator[Answer]:
        """The shard's answers to `requests`, the store's first and `ask`'s for the rest; their keys held."""
        return asked_or_cached(self.store, model, requests, self.keys.setdefault(shard, {}), ask, self.log)

    def answered_before(self, shard: int, model: ModelConfig, requests: list[Request]) -> None:
        """Hold the keys of requests an attempt before this one answered (a resume), so they are kept too."""
        if self.store is not None:
            self.keys.setdefault(shard, {}).update(answer_keys(self.store, model, requests))

    def keep(self, shard: int, answers: list[Answer]) -> None:
        """The shard is answered: the answers its engines gave go into the store, and its keys are let go."""
        keep_answers(self.store, self.run, answers, self.keys.pop(shard, {}))

    @classmethod
    def for_task(cls, store: AnswerStore | None, run: str, model: ModelConfig) -> CellAnswerStore:
        """One for a Ray task that walks a cell's shards (jobs.flow.shard_tasks): `store` pickles without what
        it has read, and the model's identity is worked out here once (a folder's weights are hashed)."""
        if store is not None:
            identity_of(store, model)
        return cls(store, run)
