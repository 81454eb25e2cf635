"""API judge faults through a whole cell (issue 16 item 6): a RAG-RewardBench cell of 6 items (12 requests)
runs as a sweep runs it (jobs.sweep.cell.run_cell; the http engine's own code, HttpJudge and the real openai client
against tests/loopback.ScriptedApi on 127.0.0.1; only Ray Data's actor pool is replaced by a call in this
process). One item's requests are reset on every try, another's time out once, a third's get a 200 that is
not JSON on every try: the cell finishes, the failed requests are error rows naming the model, every other item
is scored."""
from __future__ import annotations

import time

import pytest
from fault_rows import record
from loopback import ScriptedApi
from stand_in import inline_actor_pool, run
from sweeps import SAMPLE

from jobs.config import BenchmarkConfig, ModelConfig
from jobs.engines.http.settings import ApiSettings

# A text in both requests (the cr and rc orders) of one item of the sample, and the steps answering them.
SCRIPT = {"Hugh Hilton Goodwin": ["reset"],  # item 1: every try
          "Three Preludes (ballet)": ["hang", "hang", "ok"],  # item 2: both requests time out once
          "Gun laws in Michigan": ["json garbage"]}  # item 3: a 200 that is not JSON, every try


def _flaky_api() -> ModelConfig:
    return ModelConfig(name="flaky_api", path="flaky", kind="api", engine="http",
                       api=ApiSettings(max_retries=1, timeout_s=2.0, base_env="RAGJUDGE_TEST_FLAKY_BASE",
                                       key_env="RAGJUDGE_TEST_FLAKY_KEY"), batch_size=12)


# Item 2's requests wait out a real 2 s timeout (timeout_s 2.0) before their retry.
@pytest.mark.integration
def test_a_cell_finishes_with_its_faulty_requests_as_error_rows(tmp_path, monkeypatch):
    inline_actor_pool(monkeypatch)
    monkeypatch.setenv("RAGJUDGE_TEST_FLAKY_KEY", "sk-flaky-0123456789")
    model = _flaky_api()
    bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                            bootstrap_resamples=10)
    with ScriptedApi(SCRIPT) as api:
        monkeypatch.setenv("RAGJUDGE_TEST_FLAKY_BASE", api.base_url)
        start = time.perf_counter()
        root, outcome = run(tmp_path / "results", bench, model)
        seconds = time.perf_counter() - start
    # 4 of 12 requests failed, over the default error budget (2%): the cell ends failed_errors, its rows stored
    assert outcome.status == "failed_errors", outcome.message
    assert outcome.message.startswith(": 4 of 12 requests failed (33.3% > max_error_rate 2%)")
    assert "; 4 retryable" in outcome.message  # the resets and the 200s that are not JSON: the provider's faults
    # items 1 and 3: 2 tries of 2 requests; item 2: 2 timeouts, then 2 answers; the others: 1 each
    assert dict(api.seen) == {"Hugh Hilton Goodwin": 4, "Three Preludes (ballet)": 4,
                              "Gun laws in Michigan": 4, "": 6}
    answers = root.read_rows("requests", bench.name, model.name)
    failed = {a["request_id"]: a["error"] for a in answers if a["error"]}
    assert len(answers) == 12 and len(failed) == 4
    for request_id, error in failed.items():
        item = request_id.split("#")[0][-1]
        assert item in "13" and "model 'flaky_api', 2 tries" in error, (request_id, error)
        assert ("Connection reset by peer" if item == "1" else "the reply is not JSON") in error, error
    rows = root.read_rows("predictions", bench.name, model.name)
    assert sorted(r["item_id"][-1] for r in rows if r["correct"] is not None) == ["2", "4", "5", "6"]
    assert sorted(e["item_id"][-1] for e in root.read_rows("errors", bench.name, model.name)) == ["1", "3"]
    assert outcome.metrics["n_errors"] == 2
    assert all(a["retryable"] for a in answers if a["error"])
    sent = sum(api.seen.values())
    record(tmp_path, fault="API judge faults in one cell (RAG-RewardBench, 6 items, 12 requests)",
           injected="ScriptedApi resets item 1's requests on every try, times out item 2's once, answers item "
                    "3's with a 200 that is not JSON on every try; max_retries 1, timeout_s 2",
           outcome=f"the cell is failed_errors (over max_error_rate 2%), its metrics written: "
                   f"{len(answers) - len(failed)} requests answered, {len(failed)} error rows "
                   f"naming the model, the fault and the tries, all retryable; items 1 and 3 in errors/, the other "
                   f"4 scored; {sent} requests at the server",
           requests_lost=len(failed), requests_duplicated=sent - len(answers),
           time_to_recover_s=round(seconds, 2))
