"""Answer rows from Ray Data to the driver: streamed as they come, and merged back where an engine split a
request in parts."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from benchmarks.boundary_types import ArrowRow
from benchmarks.protocol import Answer
from jobs.config import ModelConfig
from jobs.engines.base import Requests

if TYPE_CHECKING:
    from ray.data import Dataset

LIGHT = {"num_cpus": 0.25}  # a Ray Data task that prepares, forwards and reads: the engine does the work


def dataset_rows(ds) -> Iterator[ArrowRow]:
    """Stream a Ray dataset's rows to the driver as plain dicts, without materializing it. Each block as soon
    as it is ready: Ray's prefetching holds a block back until the next one is ready, and answers held there
    are neither stored when a run stops (jobs.sweep.interrupt) nor seen by progress while the engine waits."""
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
        yield from batch.to_pylist()


def as_dataset(requests: Requests):
    """The requests as a Ray dataset: a list is put in the object store, a dataset (a cell's first round read
    by its own read task: jobs.flow.first_round) is taken as it is."""
    import ray

    return requests if isinstance(requests, ray.data.Dataset) else ray.data.from_items(requests)


def in_blocks_of(ds: Dataset, rows: int) -> Dataset:
    """`ds.repartition(target_num_rows_per_block=rows, strict=True)` in light tasks, so the next stage's tasks
    take `rows` each (Ray Data gives a task a whole block, however many batches it holds). Strict: blocks of
    exactly `rows` but the last, where the input's blocks do not divide by it (a read block of full-length
    requests held about 40: cut into 64s each left a block of 40, and the engine got batches of 40, 64 and
    16).

    Dataset.repartition takes no resources, and Ray gives its tasks a whole CPU each, which an engine holding
    part of the CPUs may never leave free (on a 1-CPU Ray with an actor holding a quarter, Ray's repartition
    stalled a stream; this one streamed). Ray is pinned (pyproject.toml); the operator is the one
    Dataset.repartition builds, with LIGHT resources."""
    from ray.data import Dataset
    from ray.data._internal.logical.interfaces import LogicalPlan
    from ray.data._internal.logical.operators.map_operator import StreamingRepartition

    op = StreamingRepartition(rows, input_dependencies=[ds._logical_plan.dag], strict=True, ray_remote_args=dict(LIGHT))
    return Dataset._from_parent(ds, LogicalPlan(op, ds.context))


def actor_pool(requests: Requests, model: ModelConfig, actor: type, kwargs: Mapping[str, object]) -> Iterator[Answer]:
    """`requests` answered by a pool of `actor`s of the model's own (min_actors to max_actors)."""
    import ray

    ds = as_dataset(requests).map_batches(
        actor, fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(min_size=model.min_actors, max_size=model.max_actors),
        batch_size=model.batch_size, num_cpus=model.num_cpus, num_gpus=model.num_gpus)
    return merge_parts(dataset_rows(ds))


def merge_parts(rows: Iterable[Answer]) -> Iterator[Answer]:
    """Engine rows -> one answer per request: an engine that split a request (`n_parts`) is merged back.

    The parts carry different answer columns; a batch that mixes them fills the other part's columns with
    None, so a value is never overwritten by None, flags are or-ed and token counts take the maximum.
    """
    pending: dict[str, list[Answer]] = {}
    for row in rows:
        row.pop("part", None)
        n_parts = row.pop("n_parts", None)
        if not n_parts:
            yield row
            continue
        parts = pending.setdefault(row["request_id"], [])
        parts.append(row)
        if len(parts) < n_parts:
            continue
        merged = {}
        for part in pending.pop(row["request_id"]):
            for key, value in part.items():
                if key == "n_tokens":
                    merged[key] = max(merged.get(key) or 0, value or 0)
                elif merged.get(key) is None or merged.get(key) is False:  # not `in (None, False)`: 0 == False
                    merged[key] = value
        yield merged
