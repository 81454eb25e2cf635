"""A part of answered requests cut in half on disk (or on the S3 server): the rerun moves it to quarantine/,
says so, records it in manifest.json, asks the model for that part's requests only, and ends with the metrics
of a run that was never damaged. The cell runs through jobs.sweep.cell.run_cell with the stand-in engine; the
damage is real bytes truncated in the stored file."""
from __future__ import annotations

import time
import uuid

import pytest
from fault_rows import record
from stand_in import run, stand_in_engine
from sweeps import SAMPLE

from jobs.config import BenchmarkConfig
from jobs.store.retry import UnreadableFile
from jobs.store.run_root import RunRoot

BENCH = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                        bootstrap_resamples=0)
CELL = "requests/benchmark=rag_rewardbench/model=judge"


def verdict(request, model) -> str:
    return "Choose 1"


class EngineDied(RuntimeError):
    pass


@pytest.fixture(params=["local", "s3"])
def root_uri(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "results")
    bucket = request.getfixturevalue("s3_server")["bucket"]
    return f"s3://{bucket}/quarantine-{uuid.uuid4().hex[:8]}"


def cut(root: RunRoot, relpath: str, keep: float) -> int:
    """Replace the stored file with its first `keep` share of bytes, as a torn copy or a full disk leaves it;
    the number of bytes left."""
    path = root.path(relpath)
    with root.filesystem.open_input_stream(path) as f:
        data = f.read()
    with root.filesystem.open_output_stream(path) as out:
        out.write(data[: int(len(data) * keep)])
    return int(len(data) * keep)


@pytest.mark.parametrize("keep", [0.5, 0.0], ids=["cut-in-half", "emptied"])
def test_a_damaged_part_is_quarantined_and_only_its_requests_are_asked_again(root_uri, keep, tmp_path,
                                                                             monkeypatch, capsys):
    answered = []

    def dies_after_six(request, model):
        if len(answered) == 6:
            raise EngineDied("the engine died")
        answered.append(request["request_id"])
        return verdict(request, model)

    stand_in_engine(monkeypatch, dies_after_six)
    root, outcome = run(root_uri, BENCH)  # six pairs, two orders: 12 requests; three parts of two stored
    assert outcome.status == "failed" and "the engine died" in outcome.message
    parts = root.list_parts("requests", "rag_rewardbench", "judge")
    assert len(parts) == 3
    damaged = f"{CELL}/part-{parts[1]}.parquet"
    before = {row["request_id"] for row in root.read_rows("requests", "rag_rewardbench", "judge")}
    left = cut(root, damaged, keep)
    # the damage is real: pyarrow cannot read the part any more, and a plain read names it
    with pytest.raises(UnreadableFile, match=f"{damaged}.*ArrowInvalid"):
        root.read_rows("requests", "rag_rewardbench", "judge")

    calls = stand_in_engine(monkeypatch, verdict)
    start = time.perf_counter()
    root, outcome = run(root_uri, BENCH)
    seconds = time.perf_counter() - start
    assert outcome.status == "done", outcome.message

    asked = [request_id for call in calls for request_id in call]
    stored = [row["request_id"] for row in root.read_rows("requests", "rag_rewardbench", "judge")]
    assert len(stored) == 12 and len(set(stored)) == 12  # nothing lost, nothing stored twice
    assert len(asked) == len(set(asked)) == 12 - 4  # the damaged part's 2 and the 6 never answered
    assert len(before) == 6 and len(set(asked) & before) == 2  # of the 6 stored before, the damaged part's
    moved = f"quarantine/{damaged}"
    assert root.read_bytes(moved) is not None and root.read_bytes(damaged) is None
    assert len(root.read_bytes(moved)) == left  # kept as it was found
    [entry] = root.read_json("manifest.json")["quarantined"]
    assert entry["cell"] == "rag_rewardbench/judge" and entry["path"] == damaged
    assert entry["moved_to"] == moved and entry["attempt"] == 2 and entry["reason"]
    printed = capsys.readouterr().out
    assert f"{root.uri(damaged)} cannot be read" in printed and root.uri(moved) in printed

    stand_in_engine(monkeypatch, verdict)
    _, reference = run(root_uri, BENCH, run_name="undamaged")
    assert outcome.metrics == reference.metrics
    damage = "cut in half" if keep else "emptied (0 bytes)"
    record(tmp_path, fault=f"a requests/ part {damage} ({'S3' if root_uri.startswith('s3://') else 'local'})",
           injected=f"first run stops after 6 of 12 answers (3 parts); part 2 of 3 truncated to {keep:.0%} of "
                    "its bytes",
           outcome=f"rerun moves it to {moved}, warns, lists it in manifest.json `quarantined`, asks its 2 "
                   "requests again with the 6 unanswered; metrics equal an undamaged run's",
           requests_lost=12 - len(set(stored)), requests_duplicated=len(stored) - len(set(stored)),
           time_to_recover_s=round(seconds, 3))


def test_a_part_damaged_while_its_cell_runs_is_quarantined_before_the_cell_is_done(tmp_path, monkeypatch):
    """Chaos seed 2 (tests/chaos.py, issue 44): a requests part overwritten with garbage while its cell was still
    answering was never read again; the cell ended `done` with the part unreadable outside quarantine/ and its
    requests in no readable part. The cell reads its parts back before it is done: the damaged one is moved to
    quarantine/ and its requests asked again."""
    root_uri = str(tmp_path / "results")
    observer = RunRoot(root_uri, "run")
    asked: list[str] = []
    damaged: list[str] = []

    def damages_the_first_part(request, model):
        if len(asked) == 4:  # mid-cell: once the first part is stored, garbage over it (a torn copy, bit rot)
            deadline = time.monotonic() + 30
            while not (parts := observer.list_parts("requests", BENCH.name, "judge")):
                assert time.monotonic() < deadline, "no part stored"
                time.sleep(0.01)
            first = f"{observer.partition('requests', BENCH.name, 'judge')}/part-{parts[0]}.parquet"
            with observer.filesystem.open_output_stream(observer.path(first)) as out:
                out.write(b"garbage, not a parquet file")
            damaged.append(first)
        asked.append(request["request_id"])
        return verdict(request, model)

    stand_in_engine(monkeypatch, damages_the_first_part)
    root, outcome = run(root_uri, BENCH)
    assert damaged and outcome.status == "done", outcome.message
    rows, unreadable = root.read_whole_rows("requests", BENCH.name, "judge")
    assert unreadable == [], unreadable  # nothing left to quarantine: it was moved before the cell was done
    ids = [row["request_id"] for row in rows]
    assert len(ids) == 12 == len(set(ids))  # every request in a readable part, once
    assert len(asked) == 14  # the damaged part's 2 requests asked again
    [moved] = root.read_json("manifest.json")["quarantined"]
    assert moved["path"] == damaged[0] and moved["moved_to"] == f"quarantine/{damaged[0]}"


def test_after_a_quarantined_part_the_new_parts_are_named_past_every_stored_part(tmp_path):
    """A shard's parts of 8 rows (named 0) and 4 (named 8); the first garbled. Read again, 4 rows read: the 8
    requests asked again are stored in parts of 4, and neither may take the name of the part of 4 rows that
    still reads (chaos seed 2: the second new part was named 8 and replaced it, its 4 answers lost)."""
    from jobs.config import StorageConfig, SweepConfig
    from jobs.flow.recorder import CellRecorder
    from jobs.store import Manifest

    settings = StorageConfig(run="run", root=str(tmp_path))
    root = RunRoot.of(settings)
    manifest = Manifest(root, SweepConfig(name="test", storage=settings))
    cell = CellRecorder(root, manifest, "rag_rewardbench", "judge", say=lambda line: None)
    answers = [{"request_id": f"r{i:02d}", "item_id": f"i{i // 2}", "text": "1", "error": None} for i in range(12)]
    first = cell.shard_answers(0)
    first.record_answers(answers[:8])
    first.record_answers(answers[8:])
    [garbled, _] = root.list_parts("requests", "rag_rewardbench", "judge")
    with root.filesystem.open_output_stream(root.path(
            f"{root.partition('requests', 'rag_rewardbench', 'judge')}/part-{garbled}.parquet")) as out:
        out.write(b"garbage, not a parquet file")

    again = cell.shard_answers(0)
    assert [a["request_id"] for a in again.stored_answers()] == [a["request_id"] for a in answers[8:]]
    again.record_answers(answers[:4])
    again.record_answers(answers[4:8])
    rows, unreadable = root.read_whole_rows("requests", "rag_rewardbench", "judge")
    assert unreadable == []
    assert sorted(r["request_id"] for r in rows) == [a["request_id"] for a in answers]  # each once, none lost
    assert [r["request_id"] for r in rows][-8:] == [a["request_id"] for a in answers[:8]]  # stored last, read last
