"""Combining a toy judge's answers into one row per condition: votes in original passage indices, the
metrics of each form, failed and missing requests."""
import math

import pytest
from utility_cases import BENCH, opts

from benchmarks.utility import shuffles

LOG2_3 = math.log2(3)

ITEM = {"item_id": "utility/toy", "subset": "NQ", "question": "q?", "passages": ["A", "B", "C", "D"],
        "labels": [0, 1, 0, 1]}
OPTIONS = opts(k=3)
PREFERENCE = {1: 4, 3: 3, 0: 2, 2: 1}  # the toy judge's taste: 1 > 3 > 0 > 2


def toy_text(request):
    """A judge with realistic wording that knows which original passage sits where."""
    form, *_, unit = request["variant"].split("/")
    perm = request["permutation"]
    position = {original: p for p, original in enumerate(perm)}
    if form == "pointwise":
        return {0: "It mentions it.\nMy judgment: yes", 1: "My judgment: **Yes**", 2: "My judgment: no",
                3: "I am not sure."}[perm[0]]
    if form == "pairwise":
        if perm == [2, 0]:
            return "My choice: Passage-0"  # position bias on one order of one pair
        return f"My choice: Passage-{0 if PREFERENCE[perm[0]] > PREFERENCE[perm[1]] else 1}"
    chosen = {"s1": {"listwise_set": [1, 3], "listwise_rank": [3, 1, 0, 2]},
              "s2": {"listwise_set": [0, 1], "listwise_rank": [1, 2]},
              "s3": {"listwise_set": None, "listwise_rank": [2, 0, 1, 3]}}[unit][form]
    if chosen is None:
        return "All of these passages seem relevant."
    if form == "listwise_set":
        return "Answer: x.\nMy selection: [" + ", ".join(f"Passage-{position[i]}" for i in chosen) + "]"
    return "Answer: x.\nMy rank: " + ">".join(f"[{position[i]}]" for i in chosen)


def answer(request, **extra):
    return {"request_id": request["request_id"], "item_id": request["item_id"], "subset": request["subset"],
            "variant": request["variant"], "error": None, "truncated": False, "n_tokens": 10,
            "text": toy_text(request), **extra}


def toy_rows():
    requests = BENCH.expand(ITEM, "generative", OPTIONS)
    return {r["form"]: r for r in BENCH.combine(ITEM, [answer(q) for q in requests], "generative", OPTIONS)}


def test_combine_votes_in_original_indices_and_scores_each_form():
    rows = toy_rows()
    point, pair, lset, lrank = rows["pointwise"], rows["pairwise"], rows["listwise_set"], rows["listwise_rank"]
    assert point["condition"] == "pointwise/utility/q_first/reasoning"
    assert point["selected"] == [0, 1] and point["parse_failures"] == 1
    assert (point["precision"], point["recall"], point["f1"]) == (0.5, 0.5, 0.5) and point["correct"] == 0.5
    assert point["ndcg_5"] is None and point["n_requests"] == 4 and point["n_tokens"] == 40
    # wins 1:6, 3:4, 0:1, 2:1 (the biased answer gives 2 a win over 0); 0 and 2 tie, broken by a seeded order
    assert pair["ranking"][:2] == [1, 3] and sorted(pair["ranking"][2:]) == [0, 2]
    assert (pair["ndcg_1"], pair["ndcg_5"], pair["mrr_5"], pair["correct"]) == (1.0, 1.0, 1.0, 1.0)
    assert pair["consistency"] == pytest.approx(5 / 6) and pair["first_position_rate"] == pytest.approx(7 / 12)
    assert pair["parse_failures"] == 0 and pair["n_requests"] == 12 and pair["f1"] is None
    # selections {1,3}, {0,1}, unparseable -> 1 has 2 of 3 votes
    assert lset["selected"] == [1] and lset["parse_failures"] == 1
    assert (lset["precision"], lset["recall"]) == (1.0, 0.5) and lset["f1"] == pytest.approx(2 / 3)
    assert lset["shuffle_scores"] == [1.0, 0.5, 0.0]
    # RR means: 1 -> (1/2+1+1/3)/3, 2 -> (1/4+1/2+1)/3, 3 -> (1+0+1/4)/3, 0 -> (1/3+0+1/2)/3
    assert lrank["ranking"] == [1, 2, 3, 0] and lrank["parse_failures"] == 0
    ideal = 1 + 1 / LOG2_3
    assert lrank["ndcg_1"] == 1.0 and lrank["ndcg_5"] == pytest.approx(1.5 / ideal) and lrank["mrr_5"] == 1.0
    assert lrank["correct"] == lrank["ndcg_5"]
    assert lrank["shuffle_scores"] == pytest.approx([1.0, 1 / ideal, (0.5 + 1 / math.log2(5)) / ideal])
    perms = shuffles(ITEM, 3)
    assert lset["shuffle_gt_positions"] == [min(p.index(1), p.index(3)) for p in perms]
    assert all(set(r) == set(rows["pointwise"]) for r in rows.values())  # one column set for every row


def test_failed_or_missing_requests_fail_their_condition_only():
    requests = BENCH.expand(ITEM, "generative", OPTIONS)
    answers = [answer(q) for q in requests if q["variant"] != "listwise_set/utility/q_first/answer_first/s2"]
    answers = [a if a["variant"] != "pointwise/utility/q_first/reasoning/p2" else
               {**a, "error": "context overflow", "text": None, "truncated": True} for a in answers]
    rows = {r["form"]: r for r in BENCH.combine(ITEM, answers, "generative", OPTIONS)}
    assert rows["pointwise"]["error"] == "p2: context overflow" and rows["pointwise"]["correct"] is None
    assert rows["pointwise"]["truncated"] is True
    assert rows["listwise_set"]["error"] == "no answer for request(s) s2"
    assert rows["pairwise"]["error"] is None and rows["listwise_rank"]["correct"] is not None
    far = BENCH.combine(ITEM, [], "generative", opts(forms=["listwise_rank"], gt_position=7))
    assert far[0]["error"] == "gt_position 7 is beyond the item's 4 passages" and far[0]["n_requests"] == 0



def test_combine_reads_verdicts_from_the_text_whatever_verdict_is_asked():
    requests = BENCH.expand(ITEM, "generative", OPTIONS)
    answers = [answer(q) for q in requests]
    rows = BENCH.combine(ITEM, answers, "generative", OPTIONS)
    assert rows == BENCH.combine(ITEM, answers, "generative", OPTIONS, verdict="logprob")
    assert rows == BENCH.combine(ITEM, answers, "generative", OPTIONS, verdict="text")


def test_mrr_and_ndcg_at_5_give_nothing_for_a_relevant_passage_at_rank_6():
    """Seven passages, the only relevant one ranked sixth: MRR@5, nDCG@5 and nDCG@1 are 0 (at k = 6 MRR would
    be 1/6)."""
    from benchmarks.utility.options import Condition
    from benchmarks.utility.rows import score
    item = {"item_id": "utility/seven", "labels": [0, 0, 0, 0, 0, 1, 0]}
    out = score(item, Condition("listwise_rank", "w", "o", "r"),
                [([0, 1, 2, 3, 4, 5, 6], "My rank: [0]>[1]>[2]>[3]>[4]>[5]>[6]")])
    assert out == {"ranking": [0, 1, 2, 3, 4, 5, 6], "shuffle_scores": [0.0], "shuffle_gt_positions": [5],
                   "parse_failures": 0, "ndcg_1": 0.0, "ndcg_5": 0.0, "mrr_5": 0.0}
