"""GTU answer generation (utility benchmark, Section 5 / Table 4) through the pipeline: the two rounds of a cell
(jobs.sweep.cell.run_cell) with the registered stand-in engine (stand_in.py) on a small fixture in the GTU schema
(tests/data/utility_gtu.jsonl; the real GTU data is not reachable here). The pure GTU tests are in
tests/benchmarks/utility/test_utility_gtu.py."""
from pathlib import Path

import pytest
from stand_in import run, stand_in_engine

from benchmarks.utility import metrics as um
from jobs.config import BenchmarkConfig

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "data" / "utility_gtu.jsonl"
CONDITIONS = {"pointwise": "pointwise/utility/q_first/reasoning", "pairwise": "pairwise/utility/q_first/none",
              "listwise_set": "listwise_set/utility/q_first/answer_first",
              "listwise_rank": "listwise_rank/utility/q_first/answer_first"}


# ------------------------------------------------------------------------------------------------ pipeline

def pipeline_reply(requests):
    """The stand-in engine's text: the toy judge's taste (original passages 1 and 3 first) for judgments; for
    answers, the gold answer when the shown passages hold it, else 'unknown'."""
    def text(request):
        if not request["variant"].startswith("answer/"):
            perm = request["permutation"]
            position = {original: p for p, original in enumerate(perm)}
            form = request["variant"].split("/")[0]
            if form == "pointwise":
                return f"My judgment: {'yes' if perm[0] in (1, 3) else 'no'}"
            if form == "pairwise":
                return f"My choice: Passage-{position[min(perm, key=[1, 3, 0, 2].index)]}"
            if form == "listwise_set":
                return "My selection: [" + ", ".join(f"Passage-{position[i]}" for i in (1, 3)) + "]"
            return "My rank: " + ">".join(f"[{position[i]}]" for i in (1, 3, 0, 2))
        prompt = request["messages"][-1]["content"].split("Question:")[0]
        for clue, answer in (("Shakespeare", "William Shakespeare"), ("fell on 9 November 1989", "1989"),
                             ("Paleolithic", "The paleo diet is based on foods from the Paleolithic era.")):
            if clue in prompt:
                return answer
        return "unknown"

    def answer(request, model):
        requests.append(request)
        return text(request)

    return answer


def test_two_rounds_through_the_pipeline_on_the_gtu_fixture(tmp_path, monkeypatch):
    seen: list[dict] = []
    calls = stand_in_engine(monkeypatch, pipeline_reply(seen))
    options = {"k": 3, "max_tokens": 64}
    bench = BenchmarkConfig(name="utility_gtu", module="utility", data=[str(FIXTURE)], bootstrap_resamples=50,
                            options=options)
    root, outcome = run(tmp_path, bench)
    m = outcome.metrics
    # round 0: 5 items x (4 pointwise + 12 pairwise + 3 + 3 listwise); round 1: the 4 GTU items' sources
    # (8 each; the Canberra row has no labelled passage: no ground_truth request); the HotpotQA row (GTI) none
    assert [len(call) for call in calls] == [5 * 22, 8 + 8 + 7 + 8]
    assert all(r.split("#")[1].startswith("answer/") for r in calls[1])
    assert not any("gti-hotpot-1" in r for r in calls[1])
    assert {tuple(sorted(r)) for r in seen} == {
        ("item_id", "max_tokens", "messages", "permutation", "request_id", "subset", "variant")}
    predictions = root.read_rows("predictions", "utility_gtu", "judge")
    qa = [r for r in predictions if r["form"] == "qa"]
    assert len(predictions) == 5 * 4 + 32 and len(qa) == 32
    dense_nq = next(r for r in qa if r["item_id"] == "utility/gtu-nq-1" and r["source"] == "dense")
    assert (dense_nq["answer"], dense_nq["em"], dense_nq["evidence"]) == ("William Shakespeare", 1.0,
                                                                          [0, 1, 2, 3])
    wall = {r["source"]: r for r in qa if r["item_id"] == "utility/gtu-nq-2"}
    # the judge keeps passages 1 and 3 (both labelled): every source but none hands over passage 1
    assert wall["none"]["answer"] == "unknown" and wall[CONDITIONS["pointwise"]]["evidence"] == [1, 3]
    rank = wall[CONDITIONS["listwise_rank"]]
    assert (rank["evidence"], rank["m"]) == ([1, 3], 2)
    assert all(wall[s]["em"] == 1.0 for s in wall if s != "none")
    assert m["qa"]["none"]["subsets"]["NQ"]["em"] == 0.0 and m["qa"]["dense"]["subsets"]["NQ"]["em"] == 2 / 3
    ground_truth = m["qa"]["ground_truth"]["subsets"]["NQ"]
    assert (ground_truth["n"], ground_truth["em"]) == (2, 1.0)
    assert ground_truth["error_rate"] == pytest.approx(1 / 3)
    gold = ["The paleo diet is a diet based on foods similar to those eaten during the Paleolithic era."]
    assert m["qa"]["dense"]["subsets"]["MSMARCO-QA"]["rouge_l"] == pytest.approx(
        um.rouge_l("The paleo diet is based on foods from the Paleolithic era.", gold))
    assert m["conditions"][CONDITIONS["listwise_set"]]["subsets"]["HotpotQA"]["f1"] == 0.5  # {1,3} vs {0,1}
    calls.clear()
    root.write_json("manifest.json", {"run": "run", "cells": {}, "attempts": 1})  # not done: resume
    _, again = run(tmp_path, bench)
    assert calls == [] and again.metrics == m  # resumed: nothing asked twice, the same metrics
