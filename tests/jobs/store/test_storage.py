"""The run root (jobs/store/run_root.py) on a local folder and on a real S3-compatible server (moto) on 127.0.0.1."""
import os
import pickle

import pyarrow.parquet as pq
import pytest
import s3fs

from jobs.store import run_root as storage
from jobs.store.run_root import RunRoot, partition_value, redact

ROWS = [
    {"item_id": "rag_rewardbench/1", "subset": "helpfulness", "correct": 1.0, "score": -0.25,
     "truncated": False,
     "messages": [{"role": "user", "content": "Q?\nwith a newline"}, {"role": "assistant", "content": "A."}],
     "logprobs": [-0.5, None], "error": None, "n_tokens": 17},
    {"item_id": "rag_rewardbench/2", "subset": "refusal", "correct": None, "score": None, "truncated": True,
     "messages": [], "logprobs": None, "error": "context overflow: 4097 > 4096", "n_tokens": 4097},
    {"item_id": "rag_rewardbench/3", "subset": "refusal", "correct": 0.5, "score": 3.0e-12,
     "truncated": False, "messages": None, "logprobs": [None, -1e300], "error": None, "n_tokens": 0,
     "only_here": "late key"},
]


def expected(rows, benchmark, model):
    """What read_rows returns: every column of the partition in every row, the original names added."""
    keys = list(dict.fromkeys(k for row in rows for k in row)) + ["benchmark", "model"]
    return [{k: {**row, "benchmark": benchmark, "model": model}.get(k) for k in keys} for row in rows]


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


def test_local_round_trip_keeps_nested_rows_none_and_floats(tmp_path):
    root = RunRoot(str(tmp_path), "run1")
    uri = root.write_rows("predictions", "rag_rewardbench", "tiny", ROWS, part="0001")
    assert uri == str(tmp_path / "run1/predictions/benchmark=rag_rewardbench/model=tiny/part-0001.parquet")
    back = root.read_rows("predictions", "rag_rewardbench", "tiny")
    assert back == expected(ROWS, "rag_rewardbench", "tiny")
    assert back[2]["only_here"] == "late key" and back[0]["only_here"] is None  # not dropped after row 1
    assert type(back[2]["score"]) is float and back[1]["score"] is None
    assert back[0]["logprobs"] == [-0.5, None]
    assert ROWS[0].get("model") is None  # the caller's rows are not modified

    assert root.read_json("manifest.json") is None
    manifest = {"run": "run1", "cells": {"rag_rewardbench/tiny": {"status": "done"}}, "x": [1.5, None]}
    root.write_json("manifest.json", manifest)
    assert root.read_json("manifest.json") == manifest
    root.write_text("report/index.html", "<h1>ü</h1>")
    assert (tmp_path / "run1/report/index.html").read_text(encoding="utf-8") == "<h1>ü</h1>"
    root.write_json(root.metrics_path("rag_rewardbench", "tiny"), {"n": 3})
    assert (tmp_path / "run1/metrics/benchmark=rag_rewardbench/model=tiny/metrics.json").is_file()


def test_parts_are_listed_in_order_read_together_and_cleared(tmp_path):
    root = RunRoot(str(tmp_path), "run")
    # A column that is all None in one part and float in the next still reads back.
    root.write_rows("requests", "b", "m", [{"request_id": "r2", "logprob_1": None}], part="0001-0000001")
    root.write_rows("requests", "b", "m", [{"request_id": "r1", "logprob_1": -0.1}], part="0001-0000000")
    assert root.list_parts("requests", "b", "m") == ["0001-0000000", "0001-0000001"]
    assert [(r["request_id"], r["logprob_1"]) for r in root.read_rows("requests", "b", "m")] == [
        ("r1", -0.1), ("r2", None)]
    assert root.write_rows("requests", "b", "m", [], part="0002") is None  # no empty files
    assert root.read_rows("errors", "b", "m") == [] and root.list_parts("errors", "b", "m") == []

    root.clear("requests", "b", "m")
    assert root.read_rows("requests", "b", "m") == [] and root.list_parts("requests", "b", "m") == []
    root.clear("requests", "b", "m")  # clearing what is not there is fine
    assert files_under(tmp_path) == []


def test_part_write_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    root = RunRoot(str(tmp_path), "run")
    root.write_rows("requests", "b", "m", ROWS[:1], part="0")
    root.write_json("manifest.json", {"attempts": 1})
    folder = tmp_path / "run/requests/benchmark=b/model=m"
    assert files_under(tmp_path / "run") == ["manifest.json", "requests/benchmark=b/model=m/part-0.parquet"]

    real_write_table = pq.write_table

    def killed_mid_write(table, where, **kwargs):
        where.write(b"PAR1 half a file")
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(storage.pq, "write_table", killed_mid_write)
    with pytest.raises(KeyboardInterrupt):
        root.write_rows("requests", "b", "m", ROWS, part="0")  # overwriting the same part
    with pytest.raises(KeyboardInterrupt):
        root.write_rows("requests", "b", "m", ROWS, part="1")
    monkeypatch.setattr(storage.pq, "write_table", real_write_table)

    assert sorted(os.listdir(folder)) == ["part-0.parquet"]  # neither a torn part nor a temporary file
    assert root.read_rows("requests", "b", "m") == expected(ROWS[:1], "b", "m")  # the old part is whole


def test_model_names_with_slashes_make_valid_partitions_and_round_trip(tmp_path):
    assert partition_value("Qwen/Qwen2.5-7B-Instruct") == "Qwen%2FQwen2.5-7B-Instruct"  # Hive readers decode it
    assert partition_value("a b:c=d") == "a%20b%3Ac%3Dd"  # no "=" or spaces inside a Hive segment
    assert partition_value("../../etc") == "..%2F..%2Fetc"  # cannot climb out of the partition
    root = RunRoot(str(tmp_path), "run")
    for model in ("Skywork/Skywork-Reward-Llama-3.1-8B", "internlm/internlm2-7b-reward", "../../etc"):
        root.write_rows("predictions", "rag_rewardbench", model, [{"item_id": "x", "correct": 1.0}], part="0")
        rows = root.read_rows("predictions", "rag_rewardbench", model)
        assert rows == [{"item_id": "x", "correct": 1.0, "benchmark": "rag_rewardbench", "model": model}]
    assert sorted(os.listdir(tmp_path / "run/predictions/benchmark=rag_rewardbench")) == [
        "model=..%2F..%2Fetc", "model=Skywork%2FSkywork-Reward-Llama-3.1-8B",
        "model=internlm%2Finternlm2-7b-reward"]
    assert files_under(tmp_path / "run") == sorted(
        f"predictions/benchmark=rag_rewardbench/{d}/part-0.parquet"
        for d in os.listdir(tmp_path / "run/predictions/benchmark=rag_rewardbench"))
    with pytest.raises(ValueError):
        root.write_json("../outside.json", {})


def test_redact_hides_secret_environment_values(monkeypatch):
    secrets = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
               "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE42", "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEXAMPLE",
               "OPENAI_API_KEY": "sk-proj-abc123", "HF_TOKEN": "hf_xyz789", "ANTHROPIC_API_KEY": "sk-ant-999",
               "GITHUB_TOKEN": "ghp_token1", "MY_SECRET_VALUE": "s3cr3t-v4lue",
               "DB_PASSWORD": "hunter2hunter"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # a name with TOKEN in it that is no secret
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    text = " | ".join(f"{n}={v}" for n, v in secrets.items())
    text += " url=https://x/?k=wJalrXUtnFEMI%2FK7MDENG%2BbPxRfiCYEXAMPLEKEY tokenizers=false region=us-east-1"
    clean = redact(text)
    assert not any(v in clean for v in secrets.values()) and "%2FK7MDENG" not in clean
    assert "tokenizers=false" in clean and "region=us-east-1" in clean
    assert "AWS_SECRET_ACCESS_KEY=[redacted]" in clean


# ---- on S3 (moto on loopback) -------------------------------------------------------------------------

def bucket_fs(s3_server):
    return s3fs.S3FileSystem(endpoint_url=s3_server["endpoint_url"], skip_instance_cache=True,
                             use_listings_cache=False)


def test_s3_round_trip_is_partitioned_into_real_object_keys(s3_server):
    bucket = s3_server["bucket"]
    root = RunRoot(f"s3://{bucket}/runs/", "s3rt")  # endpoint and credentials from the environment
    assert str(root) == f"RunRoot('s3://{bucket}/runs/s3rt')"
    root.write_json("manifest.json", {"run": "s3rt", "cells": {}})
    root.write_rows("predictions", "rag_rewardbench", "org/judge-1", ROWS, part="0")
    root.write_rows("requests", "rag_rewardbench", "org/judge-1", ROWS[:2], part="0001-0000000")
    root.write_rows("requests", "rag_rewardbench", "org/judge-1", ROWS[2:], part="0001-0000002")
    root.write_json(root.metrics_path("rag_rewardbench", "org/judge-1"), {"n": 3, "accuracy": 0.5})

    prefix = f"{bucket}/runs/s3rt"
    cell = "benchmark=rag_rewardbench/model=org%2Fjudge-1"
    assert sorted(bucket_fs(s3_server).find(prefix)) == [
        f"{prefix}/manifest.json", f"{prefix}/metrics/{cell}/metrics.json",
        f"{prefix}/predictions/{cell}/part-0.parquet",
        f"{prefix}/requests/{cell}/part-0001-0000000.parquet",
        f"{prefix}/requests/{cell}/part-0001-0000002.parquet"]

    again = RunRoot(f"s3://{bucket}/runs", "s3rt", endpoint_url=s3_server["endpoint_url"])  # a resumed run
    assert again.read_rows("predictions", "rag_rewardbench", "org/judge-1") == expected(
        ROWS, "rag_rewardbench", "org/judge-1")
    assert again.read_rows("requests", "rag_rewardbench", "org/judge-1") == expected(
        ROWS, "rag_rewardbench", "org/judge-1")
    assert again.list_parts("requests", "rag_rewardbench", "org/judge-1") == ["0001-0000000", "0001-0000002"]
    assert again.read_json("manifest.json") == {"run": "s3rt", "cells": {}}
    assert again.read_json("missing.json") is None
    assert again.uri(again.metrics_path("rag_rewardbench", "org/judge-1")) == (
        f"s3://{prefix}/metrics/{cell}/metrics.json")

    again.clear("requests", "rag_rewardbench", "org/judge-1")
    assert again.read_rows("requests", "rag_rewardbench", "org/judge-1") == []
    assert not any("/requests/" in key for key in bucket_fs(s3_server).find(prefix))


def test_no_object_on_the_bucket_and_no_pickle_or_repr_holds_a_credential(s3_server):
    bucket, secret, key_id = s3_server["bucket"], s3_server["secret"], s3_server["key_id"]
    root = RunRoot(f"s3://{bucket}/runs", "leak", endpoint_url=s3_server["endpoint_url"])
    # an engine error that echoes the credentials back
    echoed = f"HTTP 403 from endpoint: key {key_id} with secret {secret} was refused"
    root.write_rows("errors", "rag_rewardbench", "judge", [{"item_id": "x", "error": echoed,
                                                           "detail": [{"msg": echoed}]}], part="0")
    root.write_json("manifest.json", {"config": {"note": echoed}})
    root.write_text("report/index.html", f"<pre>{echoed}</pre>")
    root.write_rows("predictions", "rag_rewardbench", "judge", ROWS, part="0")

    fs = bucket_fs(s3_server)
    keys = fs.find(bucket)
    assert f"{bucket}/runs/leak/errors/benchmark=rag_rewardbench/model=judge/part-0.parquet" in keys
    for key in keys:  # every object on the bucket, byte by byte
        body = fs.cat_file(key)
        assert secret.encode() not in body and key_id.encode() not in body, key
    stored = root.read_rows("errors", "rag_rewardbench", "judge")[0]
    assert stored["error"] == "HTTP 403 from endpoint: key [redacted] with secret [redacted] was refused"
    assert stored["detail"] == [{"msg": stored["error"]}]
    for shown in (repr(root), str(root), root.uri("manifest.json"), pickle.dumps(root),
                  pickle.dumps(root.filesystem)):
        text = shown if isinstance(shown, str) else shown.decode("latin-1")
        assert secret not in text and key_id not in text


@pytest.mark.integration
def test_ray_data_reads_the_predictions_tree_on_s3(ray_session, s3_server):
    root = RunRoot(f"s3://{s3_server['bucket']}/runs", "raydata")
    root.write_rows("predictions", "rag_rewardbench", "org/judge-1", ROWS, part="0")
    root.write_rows("predictions", "rag_rewardbench", "tiny", ROWS[:2], part="0")
    rows = root.read_dataset("predictions").take_all()
    assert sorted((r["model"], r["item_id"]) for r in rows) == sorted(
        [("org/judge-1", r["item_id"]) for r in ROWS] + [("tiny", r["item_id"]) for r in ROWS[:2]])
    assert {r["item_id"]: r["messages"] for r in rows if r["model"] == "tiny"} == {
        r["item_id"]: r["messages"] for r in ROWS[:2]}


# A real-time race: a writer thread rewrites lease.json on the S3 server while 150 reads go to it (about 4 s).
@pytest.mark.integration
def test_a_json_file_rewritten_while_it_is_read_on_s3_reads_as_one_whole_version(s3_server):
    """A lease's heartbeat rewrites lease.json while other drivers read it: every read gets one version."""
    import threading

    root = RunRoot(f"s3://{s3_server['bucket']}/rewritten", "run")
    root.write_json("lease.json", {"beat": 0, "pad": "x" * 200})
    stop, beats = threading.Event(), []

    def rewrite() -> None:
        while not stop.is_set():
            beats.append(len(beats) + 1)
            root.write_json("lease.json", {"beat": beats[-1], "pad": "x" * 200})

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        seen = [root.read_json("lease.json")["beat"] for _ in range(150)]
    finally:
        stop.set()
        writer.join()
    assert len(set(seen)) > 10 and len(beats) > 10  # the reads did overlap many rewrites
    assert seen == sorted(seen)  # whole versions, in the order they were written
