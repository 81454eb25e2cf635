"""A cell's requests through the answer store (jobs.store.answers): those it holds come back from it, marked
`cached`, and only the rest reach the engine; once the cell has every answer, the ones its engines gave are
added to the store for the next run.

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
