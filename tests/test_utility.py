"""Utility judgments (PROTOCOLS.md 4 and 5) with hand-computed expectations. Pure Python, well under a second."""
import itertools
import json
import math
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks import benchmark_module
from benchmarks import utility as ut
from benchmarks.utility import metrics as um
from benchmarks.utility import parsing as up
from benchmarks.utility.prompts import answer_prompt
from jobs.reducers import aggregate

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "data" / "utility" / "candidate_passages.jsonl"  # bundled: data/README.md
LOG2_3 = math.log2(3)


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def row(**changes):
    base = {"question": "who wrote hamlet", "passage": ["a", "b", "c"], "ground_truth_label": [0, 1, 0]}
    return {**base, **changes}


# ------------------------------------------------------------------------------------------------ metrics

def test_set_prf():
    labels = [0, 1, 0, 0, 1]
    assert um.set_prf([1, 3], labels) == (0.5, 0.5, 0.5)
    p, r, f = um.set_prf([1, 4, 2], labels)
    assert (p, r) == (pytest.approx(2 / 3), 1.0) and f == pytest.approx(0.8)  # 2*(2/3)*1 / (5/3)
    assert um.set_prf([], labels) == (0.0, 0.0, 0.0)
    assert um.set_prf([0], [0, 0]) == (0.0, 0.0, 0.0)  # nothing to find
    assert um.set_prf([1, 1, 4], labels) == (1.0, 1.0, 1.0)  # a set: repeats count once


def test_ndcg_binary_gains_log2_discount_ties_in_the_ideal_and_no_relevant():
    labels = [1, 0, 1]  # two relevant passages: the ideal ranking has a tie at the top
    assert um.ndcg_at_k([2, 0, 1], labels, 5) == pytest.approx(1.0)
    assert um.ndcg_at_k([0, 2, 1], labels, 5) == pytest.approx(1.0)  # either order of the tied pair is ideal
    # relevant at ranks 2 and 3: (1/log2 3 + 1/log2 4) / (1 + 1/log2 3)
    assert um.ndcg_at_k([1, 2, 0], labels, 5) == pytest.approx((1 / LOG2_3 + 0.5) / (1 + 1 / LOG2_3))
    assert um.ndcg_at_k([1, 2, 0], labels, 1) == 0.0
    assert um.ndcg_at_k([1, 2, 0], labels, 2) == pytest.approx((1 / LOG2_3) / (1 + 1 / LOG2_3))
    assert um.ndcg_at_k([2], [0, 1, 1], 5) == pytest.approx(1 / (1 + 1 / LOG2_3))  # partial ranking
    assert um.ndcg_at_k([0, 1, 2], [0, 0, 0], 5) == 0.0


def test_mrr():
    assert um.mrr_at_k([1, 2, 0], [1, 0, 1], 5) == 0.5
    assert um.mrr_at_k([1, 2, 0], [1, 0, 1], 1) == 0.0
    assert um.mrr_at_k([1, 0], [0, 0, 1], 5) == 0.0  # the relevant passage is not ranked
    assert um.mrr_at_k([3, 4, 5, 6, 0, 2], [0, 0, 1, 0, 0, 0, 0], 5) == 0.0  # relevant at rank 6 > k
    assert um.mrr_at_k([3, 4, 5, 6, 2], [0, 0, 1, 0, 0, 0, 0], 5) == 0.2


def test_vote_sets_needs_more_than_half():
    assert um.vote_sets([[1, 2], [2, 3], [2]]) == [2]
    assert um.vote_sets([[3, 1], [1, 3], []]) == [1, 3]  # ascending; an unparseable answer is []
    assert um.vote_sets([[1, 2], [2], [1, 2], [3]]) == [2]  # 1 is in exactly half (2 of 4): not selected
    assert um.vote_sets([[1], []]) == []  # 1 of 2 is half
    assert um.vote_sets([[1, 1], [], []]) == []  # a repeat inside one answer is one vote
    assert um.vote_sets([]) == []


def test_vote_ranks_mean_reciprocal_rank_and_ties():
    # RR means: 2 -> (1 + 1/2 + 1)/3, 0 -> (1/2 + 1 + 0)/3, 1 -> (1/3 + 0 + 1/2)/3
    assert um.vote_ranks([[2, 0, 1], [0, 2], [2, 1]]) == [2, 0, 1]
    assert um.vote_ranks([[0, 1], [1, 0]]) == [0, 1]  # tie (0.75 each): the earliest ranking decides
    assert um.vote_ranks([[1, 0], [0, 1]]) == [1, 0]
    assert um.vote_ranks([[0, 1, 2], [1, 0], [2]]) == [0, 1, 2]  # 0 and 1 tie at 0.5; 2 has (1/3+0+1)/3
    assert um.vote_ranks([[3], []]) == [3]  # passages no ranking mentions are left out
    assert um.vote_ranks([[], []]) == []


def test_rank_by_wins():
    # both orders of each pair: 0 beats 1 twice, 0 and 2 split, 2 beats 1 twice -> wins 0:3, 2:3, 1:0
    wins = [(0, 1), (0, 1), (0, 2), (2, 0), (2, 1), (2, 1)]
    assert um.rank_by_wins(wins) == [0, 2, 1]  # tie: lower index without a tie order
    assert um.rank_by_wins(wins, tie_order=[2, 0, 1]) == [2, 0, 1]
    assert um.rank_by_wins([(3, 1)]) == [3, 1]  # passages in no parsed comparison are left out
    assert um.rank_by_wins([]) == []


def test_k_sampling_evidence_and_top_m():
    assert um.k_sampling_evidence([[1, 2], [2], [1, 2]]) == [2, 1]  # size of (1, 2), the most frequent set
    assert um.k_sampling_evidence([[3], [1, 2], [2]]) == [2]  # all sets once: the earliest (size 1)
    assert um.k_sampling_evidence([]) == []
    assert um.top_m([4, 1, 7], 2) == [4, 1] and um.top_m([4], 3) == [4]


def test_exact_match_and_token_f1_squad_normalisation_best_over_gold():
    assert um.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert um.exact_match("The Eiffel Tower!", ["eiffel tower"]) == 1.0
    assert um.exact_match("Paris, France", ["paris", "lyon"]) == 0.0
    assert um.exact_match("an apple", ["Apple."]) == 1.0
    assert um.exact_match("x", []) == 0.0
    assert um.token_f1("Paris, France", ["paris"]) == pytest.approx(2 / 3)  # P 1/2, R 1
    assert um.token_f1("in 1980", ["1979", "1980"]) == pytest.approx(2 / 3)  # best gold
    assert um.token_f1("the the cat", ["a cat"]) == 1.0
    assert um.token_f1("cat cat dog", ["cat dog dog"]) == pytest.approx(2 / 3)  # clipped counts: 2 common
    assert um.token_f1("", [""]) == 1.0 and um.token_f1("", ["x"]) == 0.0 and um.token_f1("the", ["x"]) == 0.0


def test_rouge_l_best_over_gold():
    pytest.importorskip("rouge_score", reason="rouge-score is a project dependency (pyproject.toml)")
    # LCS "the cat on the mat" = 5 of 6 tokens on both sides
    assert um.rouge_l("the cat sat on the mat", ["the cat is on the mat"]) == pytest.approx(5 / 6)
    assert um.rouge_l("the cat sat on the mat", ["dogs bark", "the cat is on the mat"]) == pytest.approx(5 / 6)
    assert um.rouge_l("anything", []) == 0.0


def test_bleu_sentence_and_corpus():
    pytest.importorskip("sacrebleu", reason="sacrebleu is a project dependency (pyproject.toml)")
    b1, b2, b3, b4 = um.bleu("the cat sat on the mat", ["the cat is on the mat"])
    # n-gram precisions 5/6, 3/5, 1/4, 0/3 (exp smoothing: 1/(2*3)); brevity penalty 1
    assert b1 == pytest.approx(5 / 6)
    assert b2 == pytest.approx(math.sqrt(5 / 6 * 3 / 5))
    assert b3 == pytest.approx((5 / 6 * 3 / 5 * 1 / 4) ** (1 / 3))
    assert b4 == pytest.approx((5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** (1 / 4))
    c1, c2, *_ = um.corpus_bleu(["the cat sat on the mat", "hello world"],
                                [["the cat is on the mat"], ["hello world", "hi world"]])
    assert c1 == pytest.approx(7 / 8)  # pooled unigrams: 5 of 6 + 2 of 2
    assert c2 == pytest.approx(math.sqrt(7 / 8 * 4 / 6))  # pooled bigrams: 3 of 5 + 1 of 1


# ------------------------------------------------------------------------------------------------ parsers

@pytest.mark.parametrize("text, verdict", [
    ("The passage defines the paleo diet directly.\n\nMy judgment: yes", 1),
    ("Reasoning: it talks about Bulletproof, not Paleo.\nMy judgment: No.", 0),
    ("**My judgment:** **Yes**", 1),
    ("My judgment is yes, since it answers the question.", 1),
    ("At first glance, my judgment: yes. But on reflection the date is wrong. My judgment: no", 0),
    ("I would answer like 'My judgment: yes/no'.", None),  # the format echoed back
    ("The passage is useful.", None),
    ("", None), (None, None),
])
def test_parse_judgment(text, verdict):
    assert up.parse_judgment(text) == verdict


@pytest.mark.parametrize("text, verdict", [
    ("Passage-1 states the Housing Act 1980 directly.\nMy choice: Passage-1", 1),
    ("My choice: **Passage-0**.", 0),
    ("My choice: Passage 0", 0),
    ("My choice is Passage-1 because it names the year.", 1),
    ("You asked for 'My choice: Passage-0 or Passage-1'. My choice: Passage-0", 0),
    ("My choice: Passage-0 or Passage-1", None),
    ("Both passages are equally useful.", None),
    ("My choice: Passage-2", None),
])
def test_parse_choice(text, verdict):
    assert up.parse_choice(text) == verdict


@pytest.mark.parametrize("text, ids", [
    ("Answer: The Right to Buy scheme started in 1980.\nMy selection: [Passage-3, Passage-7]", [3, 7]),
    ("My selection: [3], [7]", [3, 7]),
    ("My selection: 3, 7", [3, 7]),
    ("My selection: [passage-2 passage-2 passage-9]", [2, 9]),  # deduplicated
    ("**My selection:** [Passage-4, Passage-12]", [4]),  # out of range dropped
    ("Draft - My selection: [Passage-1]\nOn second thought:\nMy selection: [Passage-5]", [5]),  # the last
    ("My selection:\n[Passage-6]", [6]),  # on the next line
    ("My selection: []", []),
    ("My selection: None of the passages.", []),
    ("Then write 'My selection: [<passage-i>, ...]' in the last line.", None),  # the format echoed back
    ("The answer is 1980.", None),
    (None, None),
])
def test_parse_selection(text, ids):
    assert up.parse_selection(text, 10) == ids


@pytest.mark.parametrize("text, ids", [
    ("The scheme started in 1980.\nMy rank: [3]>[1]>[0]>[2]", [3, 1, 0, 2]),
    ("My rank: [3] > [1] > [3] > [12] > [2]", [3, 1, 2]),  # deduplicated, out of range dropped
    ("My rank: 4 > 0 > 9", [4, 0, 9]),
    ("**My rank:** [Passage-2] > [Passage-5]", [2, 5]),
    ("My rank: Passage-2 > Passage-5", [2, 5]),
    ("First try: My rank: [1]>[2]\nFinal: My rank: [2]>[1]", [2, 1]),
    ("My rank: [i]>[j]>...>[k]", None),
    ("I cannot rank these passages.", None),
    ("My rank: [11]>[12]", None),
])
def test_parse_rank(text, ids):
    assert up.parse_rank(text, 10) == ids


# ------------------------------------------------------------------------------------------------ loading

def test_the_two_released_rows_load():
    items = list(ut.load_items(str(REAL)))
    assert [i["error"] for i in items] == [None, None]
    assert [i["subset"] for i in items] == ["GTI", "GTI"]
    assert [i["labels"].index(1) for i in items] == [3, 9]
    assert items[0]["question"] == "definition of the paleo diet" and len(items[0]["passages"]) == 10
    assert items[0]["item_id"] == ut.item_id({"question": "definition of the paleo diet"})
    assert items[0]["item_id"].startswith("utility/") and items[0]["answers"] == []
    assert benchmark_module("utility") is ut


def test_bad_rows_are_error_items_naming_file_row_and_field(tmp_path):
    path = write_jsonl(tmp_path / "gti.jsonl", [
        row(id="q1", dataset="NQ", answers=["Shakespeare"], passages_types=["cp", "gold", "hrnp"]),
        row(question="q2", ground_truth_label=[0, 1]),
        row(question="q3", passage=["a", "  ", "c"]),
        {k: v for k, v in row(question="q4").items() if k != "ground_truth_label"},
        {"passage": ["a"], "ground_truth_label": [1]},
        "{not json",
        row(question="q7", ground_truth_label=[0, 2, 0]),
        row(id="q1"),
        row(question="q9", answers="Shakespeare"),
        row(question="q10", passages_types=["cp"]),
    ])
    items = list(ut.load_items(path))
    errors = [i["error"] for i in items]
    assert errors[0] is None and items[0]["item_id"] == "utility/q1" and items[0]["subset"] == "NQ"
    assert items[0]["answers"] == ["Shakespeare"] and items[0]["passages_types"] == ["cp", "gold", "hrnp"]
    assert errors[1] == f"{path}: row 2: field 'ground_truth_label': 2 labels for 3 passages"
    assert errors[2] == f"{path}: row 3: field 'passage': passage 1 empty or not text"
    assert errors[3] == f"{path}: row 4: field 'ground_truth_label' missing"
    assert errors[4] == f"{path}: row 5: field 'question' missing"
    assert errors[5].startswith(f"{path}: row 6: not valid JSON")
    assert errors[6] == f"{path}: row 7: field 'ground_truth_label': labels must be 0 or 1"
    assert errors[7] == f"{path}: row 8: duplicate of {path}: row 1 (same id, or same question)"
    assert errors[8] is None and items[8]["answers"] == ["Shakespeare"] and items[8]["subset"] == "GTI"
    assert errors[9] == f"{path}: row 10: field 'passages_types': expected a list of 3"
    assert len({i["item_id"] for i in items}) == len(items)  # error items keep distinct ids


# ------------------------------------------------------------------------------------------------ expansion

def real_items():
    return list(ut.load_items(str(REAL)))


def user(request):
    return request["messages"][-1]["content"]


def shown(request, passages):
    """The original index of the passage on each line of a listwise prompt, in prompt order."""
    tag = "Passage-{}: " if request["variant"].startswith("listwise_set") else "[{}]: "
    lines = [line.rstrip() for line in user(request).split("\n")]
    return [next(k for k, p in enumerate(passages) if tag.format(i) + p in lines) for i in range(len(passages))]


def test_default_expansion_counts_and_the_authors_prompts():
    item = real_items()[1]
    requests = ut.expand(item, "generative")
    forms = [r["variant"].split("/")[0] for r in requests]
    assert {f: forms.count(f) for f in set(forms)} == {"pointwise": 10, "pairwise": 90, "listwise_set": 3,
                                                      "listwise_rank": 3}
    assert len({r["request_id"] for r in requests}) == len(requests)
    assert all(r["request_id"] == f"{item['item_id']}#{r['variant']}" for r in requests)
    by_variant = {r["variant"]: r for r in requests}
    point = by_variant["pointwise/utility/q_first/reasoning/p9"]
    assert point["messages"][0] == {"role": "system", "content": (
        "Given a question and passage, please judge whether the passage has utility in answering the question.\n"
        "Please first provide a brief reasoning you used to judge whether the passage has utility in answering "
        "the above question or not and tell me your overall judgment, like 'My judgment: yes/no'.")}
    assert user(point) == (f"Given a question: when did the right to buy scheme start, a passage: "
                           f"{item['passages'][9]} \n\n" + point["messages"][0]["content"].split("\n", 1)[1])
    pair = by_variant["pairwise/utility/q_first/none/p2v5"]
    assert user(pair) == (f"Given a question: when did the right to buy scheme start, two passages: \n"
                          f"Passage-0: {item['passages'][2]}\nPassage-1: {item['passages'][5]} \n\n"
                          "Please tell me which passage would contribute more utility to answering the above "
                          "question, like 'My choice: Passage-0 or Passage-1'.")
    listset = by_variant["listwise_set/utility/q_first/answer_first/s1"]
    assert user(listset).startswith("Given a question: when did the right to buy scheme start. Please select the "
                                    "passage(s) with utility in answering the question from the following 10 "
                                    "passages: \nPassage-0: ")
    assert user(listset).endswith("that you have selected and then write 'My selection: [<passage-i>, ...]' "
                                  "in the last line.")
    rank = by_variant["listwise_rank/utility/q_first/answer_first/s2"]
    assert rank["messages"][0]["content"] == ("Given a question and rank all following passages in descending "
                                              "order based on their utility in answering the question.\n")
    assert "\n[0]: " in user(rank) and user(rank).endswith("like 'My rank: [i]>[j]>...>[k]'.")
    assert all("temperature" not in r and "max_tokens" not in r for r in requests)  # engine defaults: greedy


def test_listwise_shuffles_are_seeded_distinct_deterministic_shared_and_map_back():
    item = real_items()[0]
    options = {"forms": ["listwise_set", "listwise_rank"], "wordings": ["utility", "relevance"], "k": 5}
    requests = ut.expand(item, "generative", options)
    assert requests == ut.expand(dict(item), "generative", dict(options))  # same prompts on every call
    perms = {r["variant"]: r["permutation"] for r in requests}
    assert len(perms) == 2 * 2 * 5
    first = [perms[f"listwise_set/utility/q_first/answer_first/s{s}"] for s in range(1, 6)]
    assert len({tuple(p) for p in first}) == 5 and all(sorted(p) == list(range(10)) for p in first)
    assert first != [list(range(10))] * 5
    for variant, perm in perms.items():  # every condition sees the same k inputs
        assert perm == first[int(variant.rsplit("/s", 1)[1]) - 1]
        request = next(r for r in requests if r["variant"] == variant)
        assert shown(request, item["passages"]) == perm  # prompt position i shows original passage perm[i]
    assert ut.shuffles(item, 5) == first
    other = real_items()[1]
    assert ut.shuffles(other, 5) != first  # seeds come from the item id


def test_gt_position_places_a_ground_truth_passage():
    item = real_items()[1]  # its only ground-truth passage is 9
    requests = ut.expand(item, "generative", {"forms": ["listwise_set", "pointwise"], "gt_position": [0, 4],
                                              "k": 3})
    listwise = [r for r in requests if r["variant"].startswith("listwise_set")]
    assert sorted({r["variant"].rsplit("/", 1)[0] for r in listwise}) == [
        "listwise_set/utility/q_first/answer_first/gt0", "listwise_set/utility/q_first/answer_first/gt4"]
    for r in listwise:
        position = int(r["variant"].split("/gt")[1].split("/")[0])
        assert r["permutation"][position] == 9
        assert f"Passage-{position}: {item['passages'][9]}\n" in user(r)
    assert len({tuple(r["permutation"]) for r in listwise if "/gt4/" in r["variant"]}) == 3
    assert sum(r["variant"].startswith("pointwise") for r in requests) == 10  # placement is listwise only
    too_far = ut.expand(item, "generative", {"forms": ["listwise_set"], "gt_position": 10})
    assert too_far == []


def test_pairwise_runs_every_pair_in_both_orders_or_a_seeded_cap():
    item = real_items()[0]
    requests = ut.expand(item, "generative", {"forms": ["pairwise"]})
    assert sorted(tuple(r["permutation"]) for r in requests) == sorted(itertools.permutations(range(10), 2))
    r = next(r for r in requests if r["permutation"] == [7, 3])
    assert r["variant"] == "pairwise/utility/q_first/none/p7v3"
    assert f"Passage-0: {item['passages'][7]}\nPassage-1: {item['passages'][3]} " in user(r)
    capped = ut.expand(item, "generative", {"forms": ["pairwise"], "max_pairs": 4})
    pairs = [tuple(r["permutation"]) for r in capped]
    assert len(pairs) == 8 and all((j, i) in pairs for i, j in pairs)
    assert capped == ut.expand(item, "generative", {"forms": ["pairwise"], "max_pairs": 4})


def test_wording_order_requirements_and_sampling_options():
    item = real_items()[0]
    options = {"forms": ["pointwise", "listwise_rank"], "wordings": ["relevance"], "orders": ["passages_first"],
               "requirements": ["cot", "none"], "temperature": 0.7, "max_tokens": 300}
    requests = ut.expand(item, "generative", options)
    conditions = sorted({r["variant"].rsplit("/", 1)[0] for r in requests})
    assert conditions == ["listwise_rank/relevance/p_first/cot", "listwise_rank/relevance/p_first/none",
                          "pointwise/relevance/p_first/cot", "pointwise/relevance/p_first/none"]
    point = next(r for r in requests if r["variant"] == "pointwise/relevance/p_first/cot/p0")
    assert user(point).startswith(f"Given a passage: {item['passages'][0]}, a question: definition of the paleo")
    assert "Let's think step by step. Then tell me your overall judgment of whether the passage is relevant to " \
           "the above question or not" in user(point)
    rank = next(r for r in requests if r["variant"] == "listwise_rank/relevance/p_first/none/s1")
    assert user(rank).index("[9]: ") < user(rank).index("Question: definition of the paleo diet.")
    assert "based on their relevance to the question" in user(rank) and "utility" not in user(rank)
    assert {r["temperature"] for r in requests} == {0.7} and {r["max_tokens"] for r in requests} == {300}
    assert len({r["seed"] for r in requests}) == len(requests)
    assert all(isinstance(r["seed"], int) and 0 <= r["seed"] < 2**31 for r in requests)


def test_prompt_overrides_and_option_problems():
    item = real_items()[0]
    override = {"forms": ["pointwise"], "requirements": ["none"],
                "prompts": {"forms": {"pointwise": {"instructions": {"none": "Answer 'My judgment: yes/no'."}}}}}
    assert user(ut.expand(item, "generative", override)[0]).endswith("\n\nAnswer 'My judgment: yes/no'.")
    assert ut.check_options({}) == [] and ut.check_options(None) == []
    problems = ut.check_options({"forms": ["listwise"], "k": 0, "wordings": [], "gt_position": [-1], "extra": 1,
                                 "max_pairs": "all", "temperature": -1, "answer": "yes", "answer_m": 0,
                                 "prompts": {"forms": {"pairwise": {"question_first": "{question} {passage}"}}}})
    assert problems == [
        ("options.extra: unknown key (known: forms, wordings, orders, requirements, k, gt_position, max_pairs, "
         "max_tokens, temperature, answer, answer_m, prompts)"),
        "options.prompts.forms.pairwise.question_first: unknown placeholder(s) {passage}",
        "options.forms: 'listwise' is not one of pointwise, pairwise, listwise_set, listwise_rank",
        "options.wordings: expected a non-empty list",
        "options.k: expected an integer >= 1",
        "options.answer: expected true or false",
        "options.max_pairs: expected an integer >= 1 or null",
        "options.answer_m: expected an integer >= 1 or null",
        "options.temperature: expected a number >= 0 or null",
        "options.gt_position: expected null, an integer >= 0, or a non-empty list of those",
    ]
    with pytest.raises(ValueError, match="options.k: expected an integer >= 1"):
        ut.expand(item, "generative", {"k": 0})
    with pytest.raises(ValueError, match="generative"):
        ut.expand(item, "discriminative")


def test_benchmark_configs_carry_valid_options():
    for name in ("utility", "utility_sample"):
        conf = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "benchmarks" / f"{name}.yaml"))
        assert conf["module"] == "utility" and ut.check_options(conf["options"]) == []
    sample = OmegaConf.load(ROOT / "conf" / "benchmarks" / "utility_sample.yaml")
    assert sample.data == ["data/utility/candidate_passages.jsonl"]  # relative to the project root
    assert REAL.is_file()


def test_answer_prompt():
    messages = answer_prompt("when did the right to buy scheme start", ["It began in 1980.", "Thatcher."])
    assert messages == [{"role": "user", "content": (
        "Given the following information: \nPassage-0: It began in 1980.\nPassage-1: Thatcher. \n\nAnswer the "
        "following question based on the given information with a short answer of a few words.\nQuestion: when "
        "did the right to buy scheme start\nAnswer:")}]
    assert "one or a few sentences" in answer_prompt("q", ["p"], factoid=False)[0]["content"]
    assert answer_prompt("q", [])[0]["content"].startswith("Answer the following question with a short answer")


# ------------------------------------------------------------------------------------------------ combine

ITEM = {"item_id": "utility/toy", "subset": "NQ", "question": "q?", "passages": ["A", "B", "C", "D"],
        "labels": [0, 1, 0, 1]}
OPTIONS = {"k": 3}
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
    requests = ut.expand(ITEM, "generative", OPTIONS)
    return {r["form"]: r for r in ut.combine(ITEM, [answer(q) for q in requests], "generative", OPTIONS)}


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
    perms = ut.shuffles(ITEM, 3)
    assert lset["shuffle_gt_positions"] == [min(p.index(1), p.index(3)) for p in perms]
    assert all(set(r) == set(rows["pointwise"]) for r in rows.values())  # one column set for every row


def test_failed_or_missing_requests_fail_their_condition_only():
    requests = ut.expand(ITEM, "generative", OPTIONS)
    answers = [answer(q) for q in requests if q["variant"] != "listwise_set/utility/q_first/answer_first/s2"]
    answers = [a if a["variant"] != "pointwise/utility/q_first/reasoning/p2" else
               {**a, "error": "context overflow", "text": None, "truncated": True} for a in answers]
    rows = {r["form"]: r for r in ut.combine(ITEM, answers, "generative", OPTIONS)}
    assert rows["pointwise"]["error"] == "p2: context overflow" and rows["pointwise"]["correct"] is None
    assert rows["pointwise"]["truncated"] is True
    assert rows["listwise_set"]["error"] == "no answer for request(s) s2"
    assert rows["pairwise"]["error"] is None and rows["listwise_rank"]["correct"] is not None
    far = ut.combine(ITEM, [], "generative", {"forms": ["listwise_rank"], "gt_position": 7})
    assert far[0]["error"] == "gt_position 7 is beyond the item's 4 passages" and far[0]["n_requests"] == 0


# ------------------------------------------------------------------------------------------------ summarize

def hand_rows():
    """Two NQ questions and one HotpotQA question under two conditions, plus one failed row."""
    rows = []
    for item, subset, f1, p, r, positions, scores in (
            ("a", "NQ", 1.0, 1.0, 1.0, [0, 3, 0], [1.0, 0.5, 0.0]),
            ("b", "NQ", 0.5, 0.5, 0.5, [3, 3, None], [1.0, 0.0, 1.0]),
            ("c", "HQ", 0.0, 0.0, 0.0, [1, 1, 1], [0.0, 0.0, 0.0])):
        rows.append({"item_id": item, "subset": subset, "condition": "listwise_set/utility/q_first/none",
                     "form": "listwise_set", "correct": f1, "precision": p, "recall": r, "f1": f1,
                     "n_requests": 3, "parse_failures": 1 if item == "a" else 0, "shuffle_gt_positions": positions,
                     "shuffle_scores": scores, "error": None})
        rows.append({"item_id": item, "subset": subset, "condition": "pairwise/utility/q_first/none",
                     "form": "pairwise", "correct": 0.25, "ndcg_1": 0.0, "ndcg_5": 0.25, "mrr_5": 0.5,
                     "consistency": 1.0 if item == "a" else 0.5, "n_requests": 90, "parse_failures": 0,
                     "error": None})
    rows.append({"item_id": "d", "subset": "NQ", "condition": "pairwise/utility/q_first/none", "form": "pairwise",
                 "correct": None, "error": "p0v1: context overflow", "truncated": True, "n_requests": 90})
    return rows


def test_summarize_macro_over_questions_per_condition_and_dataset_with_positions():
    m = aggregate(ut, hand_rows(), resamples=200)
    assert (m["benchmark"], m["n"], m["n_errors"], m["n_items"]) == ("utility", 6, 1, 3)
    lset = m["conditions"]["listwise_set/utility/q_first/none"]
    assert lset["metric"] == "f1" and sorted(lset["subsets"]) == ["HQ", "NQ"]
    nq = lset["subsets"]["NQ"]
    assert nq["n"] == 2 and nq["f1"] == 0.75 and nq["precision"] == 0.75 and nq["correct"] == 0.75
    assert nq["parse_failure_rate"] == pytest.approx(1 / 6) and "ndcg_5" not in nq
    lo, hi = nq["f1_ci95"]
    assert 0.5 <= lo <= 0.75 <= hi <= 1.0
    assert lset["all"]["n"] == 3 and lset["all"]["f1"] == pytest.approx(0.5)
    # item a: position 0 -> mean(1.0, 0.0), position 3 -> 0.5; item b: position 3 -> mean(1.0, 0.0)
    by = nq["by_gt_position"]
    assert sorted(by, key=int) == ["0", "3"]
    assert by["0"]["value"] == 0.5 and by["0"]["n"] == 1
    assert by["3"]["value"] == 0.5 and by["3"]["n"] == 2
    assert lset["subsets"]["HQ"]["by_gt_position"]["1"]["value"] == 0.0
    pair = m["conditions"]["pairwise/utility/q_first/none"]
    assert pair["metric"] == "ndcg_5" and pair["subsets"]["NQ"]["n"] == 2
    assert pair["subsets"]["NQ"]["error_rate"] == pytest.approx(1 / 3)
    assert pair["subsets"]["NQ"]["truncated_rate"] == pytest.approx(1 / 3)
    assert pair["all"]["mrr_5"] == 0.5 and pair["all"]["consistency"] == pytest.approx(2 / 3)
    assert "by_gt_position" not in pair["all"]
    assert m == aggregate(ut, list(reversed(hand_rows())), resamples=200)  # order-independent, seeded


def test_combined_rows_aggregate_and_table_text():
    rows = list(toy_rows().values())
    m = aggregate(ut, rows, resamples=100)
    assert m["n"] == 4 and m["n_errors"] == 0
    assert m["conditions"]["listwise_set/utility/q_first/answer_first"]["all"]["f1"] == pytest.approx(2 / 3)
    text = ut.table_text([{**m, "model": "toy-judge", "kind": "generative", "note": "hand-made answers"},
                          {**aggregate(ut, hand_rows(), resamples=100), "model": "other", "kind": "api", "note": ""}])
    lines = text.splitlines()
    assert lines[0] == "Utility judgments: Evidence sets (pointwise, listwise-set), % macro over questions [95% CI]"
    assert re.split(r"\s{2,}", lines[1]) == ["Model", "Condition", "HQ P", "HQ R", "HQ F1", "NQ P", "NQ R", "NQ F1",
                                             "n", "parse fail"]
    toy_set = next(line for line in lines if line.startswith("toy-judge") and "listwise_set" in line)
    assert "66.7 [66.7, 66.7]" in toy_set and toy_set.split()[-2:] == ["1", "33.3"]
    assert any(line.startswith("Utility judgments: Evidence rankings") for line in lines)
    assert any("NDCG@1" in line and "MRR@5" in line for line in lines)
    assert "Score by position of the ground-truth passage in the listwise input (Figure 5), %" in lines
    other = next(line for line in lines if line.startswith("other") and "listwise_set" in line and "NQ" in line)
    assert re.split(r"\s{2,}", other)[:5] == ["other", "listwise_set/utility/q_first/none", "NQ", "F1", "50.0"]
    assert "  other: 1 condition rows not scored (failed requests); see errors/" in lines
    assert "  toy-judge: hand-made answers" in lines


def test_cli_aggregate(tmp_path, capsys):
    from jobs.cli import main

    path = write_jsonl(tmp_path / "pred.jsonl", hand_rows())
    assert main(["aggregate", "--benchmark", "utility", "--predictions", path, "--out", str(tmp_path / "out")]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["n"] == 6 and m["n_errors"] == 1
    assert m["conditions"]["listwise_set/utility/q_first/none"]["subsets"]["NQ"]["f1"] == 0.75
    assert json.loads(capsys.readouterr().out) == m
