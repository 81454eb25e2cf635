"""The protocol walk of a judged benchmark, as plain functions over a benchmark's items and answers: read the
items, expand their first requests, ask for the followups the answers so far make possible, combine each
item's answers into rows. Every path that walks a benchmark (the sweep's cell through jobs.flow.rounds,
`ragjudge validate`, `ragjudge plan`, the report's item viewer) calls these, so none walks it by hand.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from benchmarks.protocol import Benchmark
from benchmarks.records import Columns
from benchmarks.row_types import Answer, Item, Request, Row


def read_items(spec: Benchmark, data: Sequence[str], limit: int | None = None, columns: Columns | None = None
               ) -> Iterator[Item]:
    """Every item of the data paths, the first `limit` of each, in file order, its columns renamed by `columns`
    (the benchmark config's field -> column mapping); a bad row is an item with `error` naming its file, row
    and fields."""
    for path in data:
        yield from islice(spec.load_items(path, columns or None), limit)


def in_shards(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    """Consecutive lists of `size` items (the last shorter), read as they are needed (itertools.batched is
    Python 3.12's; the project runs on 3.11)."""
    iterator = iter(items)
    while shard := list(islice(iterator, size)):
        yield shard


def first_requests(spec: Benchmark, items: Iterable[Item], kind: str, options: Any) -> list[Request]:
    """The first round: each item's requests, adjacent so they share a batch and a prefix cache."""
    return [request for item in items for request in spec.expand(item, kind, options)]


def followup_requests(spec: Benchmark, items: Iterable[Item], answered: Iterable[Answer], kind: str,
                      options: Any) -> list[Request]:
    """Every request the answers so far make possible (the first round's included, as `followup` repeats
    them): a round is what of these is not answered yet."""
    by_item = answers_by_item(answered)
    return [request for item in items for request in spec.followup(item, by_item[item["item_id"]], kind, options)]


def item_rows(spec: Benchmark, items: Iterable[Item], answered: Iterable[Answer], kind: str, options: Any,
              verdict: str | None = None) -> list[Row]:
    """One prediction row per item, or several (e.g. one per sampled run), from all of its answers; `verdict`
    (logprob | text) overrides how the benchmark reads a generative judge's verdict."""
    by_item = answers_by_item(answered)
    rows: list[Row] = []
    for item in items:
        combined = spec.combine(item, by_item[item["item_id"]], kind, options, verdict=verdict)
        rows.extend(combined if isinstance(combined, list) else [combined])
    return rows


def answers_by_item(answers: Iterable[Answer]) -> dict[str, list[Answer]]:
    """Answers grouped by the item they belong to (an item without answers gets an empty list)."""
    by_item: dict[str, list[Answer]] = defaultdict(list)
    for row in answers:
        by_item[row["item_id"]].append(row)
    return by_item


def newest_answers(rows: Iterable[Answer]) -> dict[str, Answer]:
    """request_id -> its newest answer, of rows in the order their parts were stored (part names sort by
    attempt, then by rows stored before): an answer asked again (--retry-errors) replaces the one before it."""
    return {row["request_id"]: row for row in rows}


def routed(request: Request) -> bool:
    """Whether a request names a judge to answer it; without `route`, or with "self", the cell's model does."""
    return request.get("route") not in (None, "self")


def route_of(request: Request) -> str | None:
    """Who answers a request: None (the cell's model) or a judge's name."""
    return str(request["route"]) if routed(request) else None


def by_route(requests: Iterable[Request]) -> list[tuple[str | None, list[Request]]]:
    """Requests grouped by who answers them: None (the cell's model) first, then judges by name."""
    groups: dict[str | None, list[Request]] = defaultdict(list)
    for request in requests:
        groups[route_of(request)].append(request)
    return sorted(groups.items(), key=lambda group: (group[0] is not None, group[0] or ""))
