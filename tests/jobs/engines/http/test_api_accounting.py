"""An API judge fully counted (issue 63, item 6): its entry in manifest.json's `engines` against a loopback
server's own count of the requests it answered, the HTTP calls, what each retried try met, and the tokens its
replies' usage billed; dollars at conf/prices.yaml's list price for the model's path. A RAG-RewardBench cell of 6
items (12 requests, both orders of each) against tests/loopback.ScriptedApi: in process (the http engine,
HttpJudge and the real openai client; only Ray Data's actor pool is a call here), then through `ragjudge run`
as a user runs it, on the session's Ray, where a malformed reply that persists past the retries is stored
retryable, the console's last line says `--retry-errors` fixes it, and it does."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from loopback import ScriptedApi
from stand_in import inline_actor_pool
from sweeps import SAMPLE, write_sweep

from jobs.cli.run import list_price
from jobs.config import BenchmarkConfig, ModelConfig, StorageConfig, SweepConfig
from jobs.engines.host import EngineHost
from jobs.engines.http.settings import ApiSettings
from jobs.plan.prices import load_prices
from jobs.store.layout import REPORT_LEADERBOARD
from jobs.store.manifest import MANIFEST, Manifest
from jobs.store.run_root import RunRoot, open_run
from jobs.sweep.cell import Cell, run_cell

# A text in both requests (the cr and rc orders) of one item of the sample, one item each.
ITEMS = ("Hugh Hilton Goodwin", "Three Preludes (ballet)", "Gun laws in Michigan", "voter registration",
         "Bet Shira Congregation", "Mountain (TV series)")
# gpt-4o-mini's list price in conf/prices.yaml, dollars per 1M tokens: input, output
INPUT, OUTPUT = 0.15, 0.60
KEY = "sk-counted-0123456789"


def test_the_rates_here_are_the_price_tables():
    price = load_prices().prices["gpt-4o-mini"]
    assert (price.input, price.output) == (INPUT, OUTPUT)


def _judge(**settings) -> ModelConfig:
    return ModelConfig(**{"name": "api_judge", "path": "gpt-4o-mini", "kind": "api", "engine": "http",
                          "api": ApiSettings(max_retries=1, base_env="RAGJUDGE_TEST_COUNTED_BASE",
                                             key_env="RAGJUDGE_TEST_COUNTED_KEY"), "batch_size": 12, **settings})


def test_an_api_judges_entry_is_the_servers_own_count_of_calls_retries_and_tokens(tmp_path, monkeypatch):
    """Item 1's first try gets a 500, item 2's a 200 that is not JSON, item 3's a 200 with no choices (its usage
    billed); each is asked again and answered: 12 requests, 15 calls, every item scored."""
    inline_actor_pool(monkeypatch)
    monkeypatch.setenv("RAGJUDGE_TEST_COUNTED_KEY", KEY)
    script = {ITEMS[0]: ["500", "ok"], ITEMS[1]: ["json garbage", "ok"], ITEMS[2]: ["no choices", "ok"]}
    storage = StorageConfig(run="counted", root=str(tmp_path / "results"))
    root = RunRoot.of(storage)
    bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                            bootstrap_resamples=10)
    host = EngineHost(price=list_price())
    with ScriptedApi(script) as api:
        monkeypatch.setenv("RAGJUDGE_TEST_COUNTED_BASE", api.base_url)
        cell = Cell(root, Manifest(root, SweepConfig(name="test", storage=storage)), bench, _judge(),
                    flush_every=2, engines=host)
        outcome = run_cell(cell)
    assert outcome.status == "done", outcome.message
    assert outcome.metrics["n"] == 6 and outcome.metrics["n_errors"] == 0
    assert dict(api.seen) == {ITEMS[0]: 3, ITEMS[1]: 3, ITEMS[2]: 3, "": 6}  # 15: one retry per scripted item
    prompt, completion = api.tokens["prompt_tokens"], api.tokens["completion_tokens"]
    assert completion == 2 * 13  # 12 answers and the reply with no choices, 2 tokens each
    [entry] = host.close()
    assert entry == {"model": "api_judge", "engine": "http", "requests": 12, "http_calls": 15,
                     "retries": {"HTTP 500": 1, "malformed reply": 2}, "prompt_tokens": prompt,
                     "cached_prompt_tokens": 0, "generated_tokens": completion, "thinking_tokens": 0,
                     "dollars": pytest.approx((prompt * INPUT + completion * OUTPUT) / 1e6, rel=1e-12)}
    assert host.accounting() == []  # a closed host accounts for nothing


def test_an_api_model_without_a_price_says_so_and_one_without_a_table_is_not_priced(tmp_path, monkeypatch):
    inline_actor_pool(monkeypatch)
    monkeypatch.setenv("RAGJUDGE_TEST_COUNTED_KEY", KEY)
    storage = StorageConfig(run="unpriced", root=str(tmp_path / "results"))
    root = RunRoot.of(storage)
    bench = BenchmarkConfig(name="rag_rewardbench", module="rag_rewardbench", data=[str(SAMPLE)],
                            bootstrap_resamples=10, limit=1)
    priced, unpriced = EngineHost(price=list_price()), EngineHost()
    with ScriptedApi({}) as api:
        monkeypatch.setenv("RAGJUDGE_TEST_COUNTED_BASE", api.base_url)
        for host, name, path in ((priced, "gateway_judge", "my-own-gateway-model"),
                                 (unpriced, "unpriced_judge", "gpt-4o-mini")):
            run_cell(Cell(root, Manifest(root, SweepConfig(name="test", storage=storage)), bench,
                          _judge(name=name, path=path), flush_every=2, engines=host))
    [no_price] = priced.accounting()
    [no_table] = unpriced.accounting()
    assert no_price["requests"] == no_table["requests"] == 2 and no_price["dollars"] is None
    assert "dollars" not in no_table


def _ragjudge(ray_session, sweep, root: str, api: ScriptedApi, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_ADDRESS": ray_session.get_runtime_context().gcs_address,
           "RAGJUDGE_TEST_COUNTED_BASE": api.base_url, "RAGJUDGE_TEST_COUNTED_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "jobs", "run", str(sweep), f"storage.root={root}", *flags],
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def _api_entry(run: RunRoot) -> dict:
    [entry] = [e for e in run.read_json(MANIFEST)["engines"] if e["model"] == "api_judge"]
    return entry


# A real 2 s timeout, and two `ragjudge run`s as a user runs them.
@pytest.mark.integration
def test_ragjudge_run_records_the_servers_counts_and_retry_errors_asks_a_persisting_malformed_reply_again(
        ray_session, tmp_path):
    model = ("{name: api_judge, path: gpt-4o-mini, kind: api, engine: http, api: {base_env: RAGJUDGE_TEST_COUNTED_BASE, "
             "key_env: RAGJUDGE_TEST_COUNTED_KEY, max_retries: 1, timeout_s: 2.0}, batch_size: 12, num_cpus: 0.25}")
    sweep = write_sweep(tmp_path, "counted", [model])
    root = str(tmp_path / "results")
    # items 1-4: a timeout, a 500, a 200 that is not JSON, a 200 with no choices, each once; item 5: not JSON on
    # every try; the judge says 'Choose 1' whatever the order
    script = {ITEMS[0]: ["hang", "ok"], ITEMS[1]: ["500", "ok"], ITEMS[2]: ["json garbage", "ok"],
              ITEMS[3]: ["no choices", "ok"], ITEMS[4]: ["json garbage"]}
    with ScriptedApi(script, answer="Choose 1") as api:
        first = _ragjudge(ray_session, sweep, root, api)
    assert first.returncode == 1, first.stderr[-3000:]
    assert dict(api.seen) == {**{item: 3 for item in ITEMS[:4]}, ITEMS[4]: 4, "": 2}  # 18 calls
    run = open_run(f"{root}/counted")
    prompt, completion = api.tokens["prompt_tokens"], api.tokens["completion_tokens"]
    assert _api_entry(run) == {
        "model": "api_judge", "engine": "http", "requests": 12, "http_calls": 18,
        "retries": {"timeout": 1, "HTTP 500": 1, "malformed reply": 4}, "prompt_tokens": prompt,
        "cached_prompt_tokens": 0, "generated_tokens": completion, "thinking_tokens": 0,
        "dollars": pytest.approx((prompt * INPUT + completion * OUTPUT) / 1e6, rel=1e-12)}
    failed = [a for a in run.read_rows("requests", "rag_rewardbench", "api_judge") if a["error"]]
    assert sorted(a["item_id"][-1] for a in failed) == ["5", "5"] and all(a["retryable"] for a in failed)
    assert all(a["error"].startswith("api: the reply is not JSON (model 'api_judge', 2 tries)") for a in failed)
    lines = first.stderr.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("FAILED_ERRORS rag_rewardbench x api_judge")))
    assert lines[at + 2:] == [
        "  to fix: the same `ragjudge run` with --retry-errors asks its 2 retryable failed requests again"]
    # 'Choose 1' in both orders, read from the text (no log-probs): every scored item's first pick, twice
    metrics = run.read_json(run.metrics_path("rag_rewardbench", "api_judge"))
    assert metrics["n"] == 5 and metrics["position"]["first_position_rate"] == 1.0
    [judge] = run.read_json(REPORT_LEADERBOARD)["benchmarks"]["rag_rewardbench"]["models"]
    assert judge["bias"]["position"]["first_position_rate"] == 1.0

    with ScriptedApi({ITEMS[4]: ["ok"]}, answer="Choose 1") as api:
        retried = _ragjudge(ray_session, sweep, root, api, "--retry-errors")
    assert retried.returncode == 0, retried.stderr[-3000:]
    assert dict(api.seen) == {ITEMS[4]: 2}  # item 5's two requests, nothing else
    assert run.read_json(MANIFEST)["cells"]["rag_rewardbench/api_judge"]["status"] == "done"
    prompt, completion = api.tokens["prompt_tokens"], api.tokens["completion_tokens"]
    assert _api_entry(run) == {  # this attempt's
        "model": "api_judge", "engine": "http", "requests": 2, "http_calls": 2, "retries": {},
        "prompt_tokens": prompt, "cached_prompt_tokens": 0, "generated_tokens": completion, "thinking_tokens": 0,
        "dollars": pytest.approx((prompt * INPUT + completion * OUTPUT) / 1e6, rel=1e-12)}
