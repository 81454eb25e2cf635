"""Benchmark data on object storage (benchmarks.object_store), on a real S3-compatible server on 127.0.0.1
(moto): an object reads as the same bytes read from a local file, bad rows named by the object's URL and row;
a prefix reads as a folder does; a cell scores it as it scores the local file, and its answers' hash sees an
object's new bytes of the same size."""
from __future__ import annotations

import gzip
import io
import json
import uuid

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stand_in import pick, run, stand_in_engine, stand_in_model

from benchmarks.protocol import benchmark
from benchmarks.rag_rewardbench import synthetic
from benchmarks.records import data_files, read_records
from jobs.config import BenchmarkConfig
from jobs.sweep.cell import answers_hash

BAD_LINE = 5


@pytest.fixture
def put(s3_server):
    """Store bytes under a fresh prefix of the test bucket; returns the object's s3:// URL."""
    client = boto3.client("s3", endpoint_url=s3_server["endpoint_url"])
    prefix = f"data-{uuid.uuid4().hex[:8]}"

    def put(key: str, body: bytes) -> str:
        client.put_object(Bucket=s3_server["bucket"], Key=f"{prefix}/{key}", Body=body)
        return f"s3://{s3_server['bucket']}/{prefix}/{key}"

    put.prefix = f"s3://{s3_server['bucket']}/{prefix}"
    return put


def _pairs() -> list[dict]:
    return list(synthetic.generate(scale=0.02, max_pairs=1))


def _jsonl(pairs: list[dict]) -> bytes:
    lines = [json.dumps(p) for p in pairs]
    return ("\n".join(lines[:BAD_LINE - 1] + ["{not json"] + lines[BAD_LINE - 1:]) + "\n").encode()


def _parquet(pairs: list[dict]) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(pairs), out)
    return out.getvalue()


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".parquet"])
def test_an_object_reads_as_the_same_bytes_in_a_local_file(put, tmp_path, suffix):
    raw = _jsonl(_pairs())
    body = {".jsonl": raw, ".jsonl.gz": gzip.compress(raw), ".parquet": _parquet(_pairs())}[suffix]
    local = tmp_path / f"pairs{suffix}"
    local.write_bytes(body)
    url = put(f"pairs{suffix}", body)
    here, there = list(read_records(str(local))), list(read_records(url))
    assert len(there) > 20 and [(r.row, r.data, r.problem) for r in there] == [(r.row, r.data, r.problem) for r in here]
    assert {r.source for r in there} == {url}
    spec = benchmark("rag_rewardbench")
    errors = [item["error"] for item in spec.load_items(url) if item.get("error")]
    local_errors = [item["error"] for item in spec.load_items(str(local)) if item.get("error")]
    assert errors == [error.replace(str(local), url) for error in local_errors]  # a pair with an empty response
    if suffix != ".parquet":  # and the bad line, named by the object's URL and its row
        assert any(error.startswith(f"{url}: row {BAD_LINE}: not valid JSON") for error in errors), errors


def test_a_prefix_reads_its_data_objects_sorted_and_a_missing_path_is_named(put):
    b = put("b.jsonl", b"{}\n")
    a = put("a/c.parquet", _parquet(_pairs()[:2]))
    put(".hidden.jsonl", b"{}\n")
    put("notes.txt", b"not data")
    assert data_files(put.prefix) == [a, b]
    assert data_files(put.prefix + "/") == [a, b]
    with pytest.raises(FileNotFoundError, match=f"{put.prefix}/nothing-here: no such object"):
        data_files(put.prefix + "/nothing-here")


def test_a_cell_scores_object_data_as_the_local_file_and_its_hash_sees_new_bytes(put, tmp_path, monkeypatch):
    stand_in_engine(monkeypatch, pick)
    raw = _jsonl(_pairs())
    local = tmp_path / "pairs.jsonl"
    local.write_bytes(raw)
    url = put("pairs.jsonl", raw)
    benches = {where: BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[path],
                                      bootstrap_resamples=50) for where, path in [("local", str(local)), ("s3", url)]}
    outcomes = {where: run(tmp_path / where, bench) for where, bench in benches.items()}
    assert all(outcome.status == "done" for _, outcome in outcomes.values())
    assert outcomes["s3"][1].metrics == outcomes["local"][1].metrics
    assert outcomes["s3"][1].metrics["n_bad_rows"] == 2  # the bad line and a pair with an empty response
    rows = {where: sorted(root.read_rows("predictions", "rag_rewardbench", "judge"), key=lambda r: r["item_id"])
            for where, (root, _) in outcomes.items()}
    assert rows["s3"] == rows["local"] and 0 < sum(r["correct"] for r in rows["s3"]) < len(rows["s3"])

    model = stand_in_model()
    prefix = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[put.prefix])
    before, prefix_before = answers_hash(benches["s3"], model), answers_hash(prefix, model)
    put("pairs.jsonl", raw)  # the same bytes again
    assert answers_hash(benches["s3"], model) == before
    at = raw.index(b"Choose") if b"Choose" in raw else raw.index(b"a")
    other = raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1:]  # one byte other, the same size
    put("pairs.jsonl", other)
    assert len(other) == len(raw) and answers_hash(benches["s3"], model) != before
    assert answers_hash(prefix, model) != prefix_before  # an object under a prefix too
