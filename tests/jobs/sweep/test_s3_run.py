"""A sweep whose run root is on a real S3-compatible server (moto) on 127.0.0.1."""
import pyarrow.parquet as pq
import pytest
import s3fs

from jobs.loading import load_sweep
from jobs.sweep.pipeline import run_sweep

pytestmark = pytest.mark.integration


def test_run_root_on_s3_is_partitioned_readable_and_free_of_secrets(ray_session, s3_server, capsys):
    bucket = s3_server["bucket"]
    sweep = load_sweep("conf/sweeps/demo.yaml", [
        f"storage.root=s3://{bucket}/runs", "storage.run=s3demo", "models.tiny_classifier.engine=transformers",
        "models.tiny_classifier.vllm.enforce_eager=false"])  # the model file's vLLM setting, back to its default
    sweep.models = {"tiny_classifier": sweep.models["tiny_classifier"]}
    sweep.benchmarks = {"rag_rewardbench": sweep.benchmarks["rag_rewardbench"]}
    outcomes = run_sweep(sweep)
    assert [o.status for o in outcomes] == ["done"], outcomes

    fs = s3fs.S3FileSystem(endpoint_url=s3_server["endpoint_url"])
    keys = sorted(fs.find(f"{bucket}/runs/s3demo"))
    partition = f"{bucket}/runs/s3demo/predictions/benchmark=rag_rewardbench/model=tiny_classifier"
    assert f"{partition}/part-000000.parquet" in keys  # one shard: its item rows in one part
    assert f"{bucket}/runs/s3demo/metrics/benchmark=rag_rewardbench/model=tiny_classifier/metrics.json" in keys
    assert len([k for k in keys if k.startswith(partition)]) == 1  # few files per partition, not one per block
    assert "model" not in pq.read_schema(f"{partition}/part-000000.parquet", filesystem=fs).names  # the folder's
    table = pq.read_table(f"{bucket}/runs/s3demo/predictions", filesystem=fs)  # the table, as one Hive dataset
    assert table.num_rows == 6 and set(table.column("model").to_pylist()) == {"tiny_classifier"}

    secrets = [s3_server["secret"].encode(), s3_server["key_id"].encode()]
    for key in keys:
        body = fs.cat_file(key)
        assert not any(secret in body for secret in secrets), key
    printed = capsys.readouterr()
    assert not any(secret.decode() in printed.out + printed.err for secret in secrets)
