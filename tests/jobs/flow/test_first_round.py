"""A cell whose engine takes a Ray dataset (jobs.engines.base `streams`) asks its first round as one stream
(jobs.flow.first_round): one read task on the session's Ray reads the items and expands them, the engine gets
every shard's requests in one call, and each answer is stored in the parts of its item's shard, so the
shard-by-shard walk after it scores exactly as a cell asked shard by shard. A stream killed part way resumes
asking only what was not stored; `--retry-errors` streams the retryable failures again.

The engine is the registered stand-in with `streams` set: it reads the dataset's rows in this process and
answers each with the test's reply (the real engines' Ray Data stages take a dataset as they take a list:
jobs.engines.rows.as_dataset)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from stand_in import pick, stand_in_engine
from stand_in import run as run_without_host

from benchmarks.rag_rewardbench import synthetic
from jobs.config import BenchmarkConfig
from jobs.engines.base import engines
from jobs.engines.host import EngineHost
from jobs.flow import first_round, judged_cell, shard_walk

PAIRS = 82  # the good pairs of 88 (Table 4's 22 subset shapes, 4 each, 6 with an empty response)
REQUESTS = 2 * PAIRS  # both orders of each
SHARD = 20  # 89 lines: 5 shards, the bad line in the second
BAD_LINE = 26


@pytest.fixture
def bench(tmp_path) -> BenchmarkConfig:
    pairs = [json.dumps(p) for p in synthetic.generate(scale=0.02, max_pairs=4)]
    lines = pairs[:BAD_LINE - 1] + ["{not json"] + pairs[BAD_LINE - 1:]
    data = tmp_path / "pairs.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(data)], bootstrap_resamples=50)


def run(path, bench, **kwargs):
    """One cell as the sweep runs it on its cluster, with an engine host: its first round streams."""
    return run_without_host(path, bench, host=EngineHost(lambda line: None), **kwargs)


def streaming(monkeypatch, reply=pick, blocks: list[int] | None = None) -> list[list[str]]:
    """The stand-in as an engine that takes a dataset: each call's request ids, the stream's in one call, and
    the rows of each block it came in (in `blocks`)."""
    calls: list[list[str]] = []

    def rows_of(requests):
        for block in requests.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
            if blocks is not None:
                blocks.append(block.num_rows)
            yield from block.to_pylist()

    def answer(requests, model, log=print, host=None):
        rows = requests if isinstance(requests, list) else rows_of(requests)
        call: list[str] = []
        calls.append(call)
        for r in rows:
            call.append(r["request_id"])
            yield {"request_id": r["request_id"], "item_id": r["item_id"], "subset": r["subset"],
                   "variant": r["variant"], "text": reply(r, model), "error": None}

    monkeypatch.setattr(engines()["stand_in"], "answer", answer)
    monkeypatch.setattr(engines()["stand_in"], "streams", True)
    monkeypatch.setattr(judged_cell, "SHARD_ITEMS", SHARD)
    return calls


def _shards(bench: BenchmarkConfig) -> dict[str, int]:
    """Each pair's item id -> its shard: line i (from 0) of the data file is in shard i // SHARD."""
    lines = Path(bench.data[0]).read_text().splitlines()
    return {f"rag_rewardbench/{json.loads(line)['id']}": i // SHARD for i, line in enumerate(lines)
            if line != "{not json"}


def _whole(tmp_path, bench, monkeypatch):
    """The cell asked shard by shard, the stand-in taking lists, as the reference."""
    stand_in_engine(monkeypatch, pick)
    monkeypatch.setattr(judged_cell, "SHARD_ITEMS", SHARD)
    root, outcome = run_without_host(tmp_path / "whole", bench)
    assert outcome.status == "done"
    return outcome, sorted(root.read_rows("predictions", bench.name, "judge"), key=lambda r: r["item_id"])


def _watch_walks(monkeypatch, ray_session) -> tuple[list[int], list[tuple[int, bool]]]:
    """The shards whose rounds the driver walks, and each shard the Ray task reports (walked, or handed back)."""
    from jobs.flow import shard_tasks

    walked_here: list[int] = []
    driver_rounds = shard_walk.answer_rounds

    def rounds(cell, shard, items, streamed):
        walked_here.append(shard)
        return driver_rounds(cell, shard, items, streamed)

    monkeypatch.setattr(shard_walk, "answer_rounds", rounds)
    walked_elsewhere: list[tuple[int, bool]] = []
    task_shards = shard_tasks.walked_shards

    def shards(walk, node):
        for tally, state in task_shards(walk, node):
            walked_elsewhere.append((tally.shard, tally.walked))
            assert (state is None) == (not tally.walked) and (state is None or isinstance(state, ray_session.ObjectRef))
            yield tally, state

    monkeypatch.setattr(shard_walk, "walked_shards", shards)
    return walked_here, walked_elsewhere


def test_the_first_round_is_one_stream_stored_by_shard_and_scores_as_shard_by_shard(
        tmp_path, bench, monkeypatch, ray_session):
    whole, whole_rows = _whole(tmp_path, bench, monkeypatch)
    assert 0.2 < sum(r["correct"] for r in whole_rows) / PAIRS < 0.8
    blocks: list[int] = []
    calls = streaming(monkeypatch, blocks=blocks)
    root, streamed = run(tmp_path / "streamed", bench)
    assert streamed.status == "done"
    assert len(calls) == 1 and len(calls[0]) == REQUESTS  # every shard's requests in one call
    # in blocks of the engine's batch (16), in any order: each batch's answers come back as it is done
    assert sorted(blocks, reverse=True) == [16] * (REQUESTS // 16) + [REQUESTS % 16]
    assert streamed.metrics == whole.metrics  # the bootstrap intervals and n_bad_rows included
    rows = sorted(root.read_rows("predictions", bench.name, "judge"), key=lambda r: r["item_id"])
    assert rows == whole_rows
    shard_of = _shards(bench)
    parts = root.list_parts("requests", bench.name, "judge")
    assert sorted({p.split("-")[0] for p in parts}) == [f"s{k:05d}" for k in range(5)]
    for part in parts:  # each part holds answers of its own shard's items only
        shard = int(part.split("-")[0][1:])
        answers, _ = root.read_whole_rows("requests", bench.name, "judge", lambda name, part=part: name == part)
        assert answers and {shard_of[a["item_id"]] for a in answers} == {shard}


def test_a_stream_killed_part_way_resumes_asking_only_what_was_not_stored(tmp_path, bench, monkeypatch,
                                                                         ray_session):
    whole, _ = _whole(tmp_path, bench, monkeypatch)
    left = {"n": 57}  # answers before the engine dies: most of the first shards, none of the last

    def dies(request, model):
        left["n"] -= 1
        if left["n"] < 0:
            raise RuntimeError("engine died")
        return pick(request, model)

    calls = streaming(monkeypatch, dies)
    root, first = run(tmp_path / "killed", bench)
    assert first.status == "failed" and "engine died" in first.message
    stored = [a["request_id"] for a in root.read_rows("requests", bench.name, "judge")]
    assert len(stored) == 56  # parts of 2 (flush_every): the 57th answer was not stored
    calls.clear()
    left["n"] = 10_000
    root, again = run(tmp_path / "killed", bench)
    assert again.status == "done" and again.metrics == whole.metrics
    assert len(calls) == 1 and not set(calls[0]) & set(stored) and len(calls[0]) == REQUESTS - len(stored)
    answers = [a["request_id"] for a in root.read_rows("requests", bench.name, "judge")]
    assert len(answers) == len(set(answers)) == REQUESTS  # each request stored once


def test_the_survey_counts_every_chunk_of_a_shards_requests_and_reads_none_for_a_cell_without_a_store(
        tmp_path, bench, monkeypatch, ray_session):
    """The survey expands a shard's items READ_ITEMS at a time (3 here: 7 chunks a shard of 20): its plan counts
    the requests of every chunk and the stored answers among them, and an answerer without an answer store is
    handed the shard's unanswered requests as a generator it never reads."""
    from jobs.sweep.cell import CellAnswerer

    monkeypatch.setattr(first_round, "READ_ITEMS", 3)
    left = {"n": 57}

    def dies(request, model):
        left["n"] -= 1
        if left["n"] < 0:
            raise RuntimeError("engine died")
        return pick(request, model)

    streaming(monkeypatch, dies)
    run(tmp_path / "killed", bench)
    plans = []
    real = first_round.stream_first_round

    def planned(cell, plan):
        plans.append((plan.items, plan.first, plan.answered, plan.shards))
        return real(cell, plan)

    monkeypatch.setattr(first_round, "stream_first_round", planned)
    left["n"] = 10_000
    _, again = run(tmp_path / "killed", bench)
    assert again.status == "done"
    assert plans == [(PAIRS, REQUESTS, 56, 5)]  # parts of 2: 56 stored before the engine died

    def unread():
        raise AssertionError("read")
        yield

    no_store = type("NoStore", (), {"answer_store": None, "judges": {}, "engines": None, "key": "b/m", "model": None,
                                    "root": type("Root", (), {"run": "r"})})()
    assert CellAnswerer(no_store).answers_in_store(unread()) == []


def test_retry_errors_streams_the_retryable_failures_again(tmp_path, bench, monkeypatch, ray_session):
    whole, _ = _whole(tmp_path, bench, monkeypatch)
    calls = streaming(monkeypatch)
    first_answer = engines()["stand_in"].answer
    failing: set[str] = set()

    def flaky(requests, model, log=print, host=None):  # every fifth request fails with a 503 the first time
        for answer in first_answer(requests, model, log, host):
            if int(hashlib.sha256(answer["request_id"].encode()).hexdigest(), 16) % 5 == 0:
                failing.add(answer["request_id"])
                answer = {**answer, "text": None, "error": "api: HTTP 503 (overloaded)"}
            yield answer

    monkeypatch.setattr(engines()["stand_in"], "answer", flaky)
    _, first = run(tmp_path / "flaky", bench)
    assert first.status in ("done", "failed_errors") and first.metrics["request_errors"]["retryable"] == len(failing)
    assert 10 < len(failing) < 60
    calls.clear()
    monkeypatch.setattr(engines()["stand_in"], "answer", first_answer)
    _, again = run(tmp_path / "flaky", bench, retry_errors=True)
    assert again.status == "done" and again.metrics == whole.metrics
    assert len(calls) == 1 and sorted(calls[0]) == sorted(failing)  # the failures, and nothing else


def test_a_request_without_a_key_the_engine_reads_fails_the_cell_before_it_asks(tmp_path, bench, monkeypatch,
                                                                               ray_session):
    calls = streaming(monkeypatch)
    monkeypatch.setattr(engines()["stand_in"], "reads", frozenset({"request_id", "no_such_key"}))
    _, outcome = run(tmp_path / "keys", bench)
    assert outcome.status == "failed" and "no_such_key" in outcome.message and calls == []


def test_answers_the_answer_store_keeps_are_stored_before_the_stream_and_not_asked(tmp_path, bench, monkeypatch,
                                                                                  ray_session):
    calls = streaming(monkeypatch)
    _, first = run(tmp_path / "store", bench, run_name="first", cache=True)
    assert first.status == "done" and len(calls) == 1 and len(calls[0]) == REQUESTS
    calls.clear()
    walked_here, walked_elsewhere = _watch_walks(monkeypatch, ray_session)
    root, second = run(tmp_path / "store", bench, run_name="second", cache=True)  # a new run, the same store
    assert second.status == "done" and calls == []  # every answer from the store: no stream at all
    assert second.metrics == first.metrics
    # nothing streamed, but the first round is answered: the shards are walked in the task all the same
    assert walked_here == [] and walked_elsewhere == [(k, True) for k in range(5)]
    entry = root.read_json("manifest.json")["cells"]["rag_rewardbench/judge"]
    assert entry["cached_answers"] == REQUESTS


def test_a_block_holds_whole_batches_64_blocks_or_more_up_to_64_batches():
    from jobs.flow.first_round import block_rows

    assert block_rows(24, 2) == 2  # 12 batches: a block each
    assert block_rows(REQUESTS, 16) == 16  # 11 batches
    assert block_rows(64 * 16 * 2 - 1, 16) == 16  # one request short of 64 blocks of 2 batches
    assert block_rows(64 * 16 * 2, 16) == 32
    assert block_rows(10_000, 16) == 144  # 9 batches a block: 70 blocks
    assert block_rows(64 * 16 * 40, 16) == 640  # 40 batches a block: 64 blocks
    assert block_rows(100_000, 16) == 1_024  # 64 batches a block (not 97): 98 blocks
    assert block_rows(1_000_000, 16) == 1_024  # 64 batches, not 976
    assert block_rows(0, 8) == 8


def test_in_blocks_of_cuts_blocks_into_blocks_of_a_batch_in_light_tasks(ray_session):
    import ray

    from jobs.engines.rows import LIGHT, in_blocks_of

    # 4 blocks of 11: a block of 8 would leave 3 of each behind
    four = ray.data.from_items([{"request_id": f"r{i}"} for i in range(44)], override_num_blocks=4)
    cut = in_blocks_of(four, 8)
    assert cut._logical_plan.dag.ray_remote_args == LIGHT  # not Ray's whole CPU a task
    blocks = [b.num_rows for b in cut.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0)]
    assert sorted(blocks, reverse=True) == [8, 8, 8, 8, 8, 4]  # in the order they are done
    assert sorted(r["request_id"] for r in cut.take_all()) == sorted(f"r{i}" for i in range(44))  # each once


def test_the_streams_read_task_cuts_its_own_blocks_of_whole_batches(ray_session):
    """The read and the repartition behind it are one task (Ray Data fuses them): the read's pieces of 40
    requests leave it in blocks of 64, none through a repartition task of its own."""
    import pyarrow as pa

    from jobs.engines.rows import LIGHT

    def read():
        for piece in range(30):  # 1,200 requests, no piece a whole block
            yield pa.table({"request_id": [f"r{piece}-{i}" for i in range(40)]})

    ds = first_round._dataset(read, 64)
    blocks = [b.num_rows for b in ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0)]
    assert blocks == [64] * 18 + [48]  # in the read's order: one task
    assert "MapBatches(_read_blocks)->StreamingRepartition[num_rows_per_block=64,strict=True]: 1 tasks" in ds.stats()
    assert ds._logical_plan.dag.input_dependencies[0].ray_remote_args == LIGHT


def test_the_shards_parts_of_the_plan_join_sorted_with_each_answered_request_once():
    """Item digests sorted with their shards moved along; answered digests sorted and unique (a request can be
    answered in two shards' parts only by a bug, but a retried one is found twice in its shard's)."""
    parts = first_round._PlanParts()
    parts.add(np.array([50, 10], np.uint64), np.array([0, 0], np.uint32), np.array([90, 30, 30], np.uint64))
    parts.add(np.array([30], np.uint64), np.array([1], np.uint32), np.array([70, 30], np.uint64))
    parts.add(np.empty(0, np.uint64), np.empty(0, np.uint32), np.empty(0, np.uint64))
    digests, shards, done = first_round._joined(parts)
    assert digests.tolist() == [10, 30, 50] and shards.tolist() == [0, 1, 0] and done.tolist() == [30, 70, 90]
    assert parts == first_round._PlanParts()  # emptied as it was read
    one = first_round._PlanParts()
    one.add(np.array([1], np.uint64), np.array([0], np.uint32), np.empty(0, np.uint64))
    _, _, none = first_round._joined(one)
    assert none.tolist() == []


def test_after_the_stream_a_ray_task_walks_the_shards_and_the_driver_only_one_with_a_damaged_part(
        tmp_path, bench, monkeypatch, ray_session):
    """Once the stream has answered everything, the shards are combined, recorded and reduced in a Ray task
    (jobs.flow.shard_tasks), not in the driver; a shard whose stored part no longer reads is handed back, and
    the driver walks that one alone: it quarantines the part and asks its requests again."""
    from jobs.store import RunRoot

    whole, whole_rows = _whole(tmp_path, bench, monkeypatch)
    calls = streaming(monkeypatch)
    walked_here, walked_elsewhere = _watch_walks(monkeypatch, ray_session)
    root, streamed = run(tmp_path / "walked", bench)
    assert streamed.status == "done" and streamed.metrics == whole.metrics
    assert walked_here == [] and walked_elsewhere == [(k, True) for k in range(5)]
    assert sorted(root.read_rows("predictions", bench.name, "judge"), key=lambda r: r["item_id"]) == whole_rows
    # bad input rows, each an error row: the unreadable line, and the 6 pairs with an empty response
    assert streamed.metrics["n_bad_rows"] == 7 == len(root.read_rows("errors", bench.name, "judge"))

    # Again, with a part of shard 2 garbled between the stream and the walk.
    damaged: list[str] = []
    stream = first_round.stream_first_round

    def stream_then_damage(*args):
        streamed = stream(*args)
        observer = RunRoot(str(tmp_path / "damaged"), "run")
        part = next(p for p in observer.list_parts("requests", bench.name, "judge") if p.startswith("s00002-"))
        damaged.append(f"{observer.partition('requests', bench.name, 'judge')}/part-{part}.parquet")
        with observer.filesystem.open_output_stream(observer.path(damaged[0])) as out:
            out.write(b"garbage, not a parquet file")
        return streamed

    monkeypatch.setattr(first_round, "stream_first_round", stream_then_damage)
    walked_elsewhere.clear()
    calls.clear()
    root, again = run(tmp_path / "damaged", bench)
    assert again.status == "done" and again.metrics == whole.metrics
    assert walked_elsewhere == [(0, True), (1, True), (2, False), (3, True), (4, True)]
    assert walked_here == [2]
    assert len(calls) == 2 and len(calls[1]) == 2  # the stream, then the damaged part's 2 answers (parts of 2)
    [moved] = root.read_json("manifest.json")["quarantined"]
    assert moved["path"] == damaged[0]
    assert sorted(root.read_rows("predictions", bench.name, "judge"), key=lambda r: r["item_id"]) == whole_rows
