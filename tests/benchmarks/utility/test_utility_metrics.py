"""Utility-judgment metrics (docs/protocols.md 4): evidence sets and rankings, the votes, the GTU answer
metrics; hand-computed expectations."""
import math

import pytest

from benchmarks.utility import metrics as um

LOG2_3 = math.log2(3)


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



def test_the_answer_metrics_settings_are_pinned_by_inputs_where_they_differ():
    """No stemming: 'running' and 'runs' share no token (a stemmer makes both 'run', ROUGE-L 1). Lower-cased:
    'The Cat sat' is 'the cat sat' exactly, BLEU 1 (cased, only 'sat' matches). Effective order: a 3-token
    sentence has no 4-gram, and BLEU-4 stays 1 (without it, 0)."""
    assert um.rouge_l("running", ["runs"]) == 0.0
    assert um.rouge_l("the cats running", ["the cat runs"]) == pytest.approx(1 / 3)  # only 'the': P = R = 1/3
    assert um.bleu("The Cat sat", ["the cat sat"]) == pytest.approx([1.0, 1.0, 1.0, 1.0])
    assert um.corpus_bleu(["The Cat sat on the mat"], [["the cat sat on the mat"]]) == pytest.approx([1.0] * 4)
