"""Bi'anBench and utility judgments through a real judge (SmolLM2 on vLLM, CPU) in the demo sweep.

A 135M model rarely follows these output formats, so the tests check what must hold whatever it writes:
every request answered, each stored verdict re-derived from the stored text by the module's own parser,
correctness and metrics recomputed by hand, and the parse-free verdict equal to a direct transformers
computation.
"""
from collections import defaultdict
from statistics import mean

import pytest
from reference import smollm2_first_token_logprobs

from benchmarks.bianbench import BianBench, parse_reasoning, parse_verdict
from benchmarks.options import typed_options
from benchmarks.utility import UtilityJudgments, parsing
from benchmarks.utility import metrics as utility_metrics
from jobs.flow import read_items

pytestmark = pytest.mark.integration
JUDGE = "smollm2_judge"
bb = BianBench()
ut = UtilityJudgments()


def _items(module, sweep, name):
    bench = sweep.benchmarks[name]
    return list(read_items(module, bench.data, bench.limit))  # the first `limit` items of each path, as the cell read them


def _bian_options(sweep):
    return typed_options(BianBench.Options, sweep.benchmarks["bianbench"].options)


# ---- Bi'anBench ---------------------------------------------------------------------------------------

def test_bianbench_predictions_carry_reasoning_verdict_and_correctness_for_every_run(demo):
    sweep, run, _ = demo
    items = _items(bb, sweep, "bianbench")
    runs = _bian_options(sweep).sampling.runs
    predictions = run.read_rows("predictions", "bianbench", JUDGE)
    assert sorted((p["item_id"], p["run"]) for p in predictions) == sorted(
        (i["item_id"], r) for i in items for r in range(runs))
    assert {p["split"] for p in predictions} == {"en", "zh"}
    for p in predictions:
        assert p["error"] is None and p["text"], p
        assert p["prediction"] == parse_verdict(p["text"])
        assert p["reasoning"] == parse_reasoning(p["text"])
        assert p["correct"] == float(p["prediction"] == p["label"])  # ERROR counts wrong
        assert p["logprob_prediction"] in ("PASS", "FAIL")


def test_bianbench_runs_are_sampled_with_their_own_seeds(demo):
    """Temperature 0.8 over three runs: per-run seeds from the item id, so the runs differ from each other."""
    sweep, run, _ = demo
    texts = defaultdict(set)
    for p in run.read_rows("predictions", "bianbench", JUDGE):
        texts[p["item_id"]].add(p["text"])
    assert any(len(t) > 1 for t in texts.values()), texts
    seeds = {r["seed"] for i in _items(bb, sweep, "bianbench")
             for r in bb.expand(i, "generative", _bian_options(sweep))}
    assert len(seeds) == len(texts) * _bian_options(sweep).sampling.runs


def test_bianbench_metrics_are_macro_averages_of_the_stored_predictions(demo):
    _, run, outcomes = demo
    metrics = outcomes["bianbench", JUDGE].metrics
    by_run = defaultdict(lambda: defaultdict(list))
    for p in run.read_rows("predictions", "bianbench", JUDGE):
        by_run[p["split"]][(p["subset"], p["run"])].append(p["correct"])
    for split, groups in by_run.items():
        subsets = sorted({s for s, _ in groups})
        runs = sorted({r for _, r in groups})
        per_run_avg = [mean(mean(groups[s, r]) for s in subsets) for r in runs]
        assert metrics["splits"][split]["avg"] == pytest.approx(mean(per_run_avg))


def test_bianbench_parse_free_verdict_equals_a_direct_transformers_computation(demo):
    sweep, run, _ = demo
    options = _bian_options(sweep)
    answers = {a["request_id"]: a for a in run.read_rows("requests", "bianbench", JUDGE)}
    for language in ("en", "zh"):
        item = next(i for i in _items(bb, sweep, "bianbench") if i["language"] == language)
        request = bb.expand(item, "generative", options)[0]
        expected = smollm2_first_token_logprobs(request["messages"], request["prefill"], request["candidates"])
        assert answers[request["request_id"]]["candidate_logprobs"] == pytest.approx(expected, abs=2e-3)


# ---- utility judgments ----------------------------------------------------------------------------------

def test_utility_judge_answers_every_request_of_all_four_forms(demo):
    sweep, run, _ = demo
    options = typed_options(UtilityJudgments.Options, sweep.benchmarks["utility"].options)
    items = _items(ut, sweep, "utility")
    expected = {r["request_id"]: r for i in items for r in ut.expand(i, "generative", options)}
    answers = {a["request_id"]: a for a in run.read_rows("requests", "utility", JUDGE)}
    assert set(answers) == set(expected)
    assert all(a["error"] is None and a["text"] is not None for a in answers.values())
    forms = {r["variant"].split("/")[0] for r in expected.values()}
    assert forms == {"pointwise", "pairwise", "listwise_set", "listwise_rank"}


def test_utility_rows_count_parse_failures_and_score_in_original_passage_ids(demo):
    sweep, run, outcomes = demo
    options = sweep.benchmarks["utility"].options
    answers = defaultdict(list)
    for a in run.read_rows("requests", "utility", JUDGE):
        answers[a["item_id"], a["variant"].rsplit("/", 1)[0]].append(a)
    n = 10  # passages per candidate list
    parsers = {"pointwise": parsing.parse_judgment, "pairwise": parsing.parse_choice,
               "listwise_set": lambda t: parsing.parse_selection(t, n),
               "listwise_rank": lambda t: parsing.parse_rank(t, n)}
    rows = run.read_rows("predictions", "utility", JUDGE)
    labels = {i["item_id"]: i["labels"] for i in _items(ut, sweep, "utility")}
    assert len(rows) == len(labels) * 4 > 0  # a row per question and form
    for row in rows:
        texts = [a["text"] for a in answers[row["item_id"], row["condition"]]]
        assert row["n_requests"] == len(texts)
        assert row["parse_failures"] == sum(parsers[row["form"]](t) is None for t in texts)
        chosen = row["selected"] if row["selected"] is not None else row["ranking"]
        assert all(0 <= i < len(labels[row["item_id"]]) for i in chosen)
        if row["selected"] is not None:
            assert (row["precision"], row["recall"], row["f1"]) == utility_metrics.set_prf(row["selected"],
                                                                                     labels[row["item_id"]])
        else:
            assert row["ndcg_5"] == utility_metrics.ndcg_at_k(row["ranking"], labels[row["item_id"]], 5)
    metrics = outcomes["utility", JUDGE].metrics
    for condition, entry in metrics["conditions"].items():
        values = [r["correct"] for r in rows if r["condition"] == condition]
        assert entry["all"]["correct"] == pytest.approx(mean(values))
    assert options["k"] == 3
