"""mtRAG generation scores on one response (docs/protocols.md 3): every formula and parse rule against
hand-computed values."""
import math

import pytest
from rouge_score import rouge_scorer

from benchmarks.mtrag.generation import scores as m

# ---- metrics: ROUGE-L


def test_rouge_l_is_the_lcs_f_measure_by_hand_and_equals_rouge_score():
    # the cat sat on the mat / the cat is on the mat: LCS "the cat on the mat" = 5 of 6 each way
    assert m.rouge_l("The cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)
    # a b c d / a c: LCS 2, P = 2/4, R = 2/2, F = 2PR/(P+R) = 2/3
    assert m.rouge_l("a b c d", "a c") == pytest.approx(2 / 3)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for prediction, reference in [("The cat sat on the mat", "the cat is on the mat"),
                                  ("Paris is the capital of France.", "The capital of France is Paris.")]:
        assert m.rouge_l(prediction, reference) == scorer.score(reference, prediction)["rougeL"].fmeasure


def test_rouge_l_default_tokenizer_lowercases_drops_punctuation_and_does_not_stem():
    assert m.rouge_l("Hello, WORLD!!", "hello world") == 1.0
    assert m.rouge_l("running dogs", "run dog") == 0.0  # no stemming
    assert m.rouge_l("", "hello") == 0.0


# ---- metrics: RB_alg and BERTScore helpers


def test_rb_alg_worked_example():
    # R = (0.5 + 1)/2 = 0.75, L = 0.5, E = (0.2 + 1)/2 = 0.6: 3RLE/(RL + RE + LE) = 0.675 / 1.125 = 0.6
    assert m.rb_alg(0.5, 0.5, 0.2) == pytest.approx(0.6)
    # R = L = E = 0.5: the harmonic mean of equal values is that value
    assert m.rb_alg(0.0, 0.5, 0.0) == pytest.approx(0.5)


@pytest.mark.parametrize("bert_recall, rouge, kprec", [(-1.0, 0.5, 0.2), (0.5, 0.0, 0.2), (0.5, 0.5, -1.0),
                                                       (0.5, 0.5, None)])
def test_rb_alg_is_zero_when_r_l_or_e_is_zero_and_without_passages(bert_recall, rouge, kprec):
    assert m.rb_alg(bert_recall, rouge, kprec) == 0.0


def test_bert_kprec_is_the_max_over_passages():
    assert m.max_kprec([0.1, None, 0.3]) == 0.3
    assert m.max_kprec([-0.2, None]) == 0.0  # a passage without a score counts as 0, as the authors read it
    assert m.max_kprec([]) is None


# ---- metrics: IDK conditioning and answerability accuracy

CONDITIONED = {  # answerability -> IDK yes, no, partial, unknown, for a raw value of 0.7
    "ANSWERABLE": (0.0, 0.7, 0.7, 0.7),
    "PARTIAL": (0.0, 0.7, 0.7, 0.7),
    "UNANSWERABLE": (1.0, 0.0, 0.0, 0.7),
    "CONVERSATIONAL": (1.0, 0.0, 0.0, 0.7),
    "UNDERSPECIFIED": (0.7, 0.7, 0.7, 0.7),
}


@pytest.mark.parametrize("answerability", list(CONDITIONED))
def test_condition_on_idk_for_each_answerability_and_idk_label(answerability):
    got = tuple(m.condition_on_idk(0.7, answerability, idk) for idk in (1.0, 0.0, 0.5, None))
    assert got == CONDITIONED[answerability]
    assert m.condition_on_idk(0.7, answerability.lower(), 1.0) == CONDITIONED[answerability][0]


def test_condition_on_idk_decides_without_a_raw_value_and_rejects_unknown_classes():
    assert m.condition_on_idk(math.nan, "ANSWERABLE", 1.0) == 0.0
    assert m.condition_on_idk(math.nan, "UNANSWERABLE", 1.0) == 1.0
    assert math.isnan(m.condition_on_idk(math.nan, "ANSWERABLE", 0.0))
    with pytest.raises(ValueError, match="MAYBE"):
        m.condition_on_idk(0.5, "MAYBE", 1.0)


def test_answerability_correct_and_accuracy():
    assert [m.answerability_correct(a, idk) for a, idk in [
        ("ANSWERABLE", 0.0), ("ANSWERABLE", 1.0), ("PARTIAL", 0.5), ("UNANSWERABLE", 1.0), ("UNANSWERABLE", 0.5),
        ("CONVERSATIONAL", 1.0), ("ANSWERABLE", None), ("UNDERSPECIFIED", 1.0)]] == [
        1.0, 0.0, 1.0, 1.0, 0.0, 1.0, None, None]
    pairs = [("ANSWERABLE", 0.0), ("UNANSWERABLE", 1.0), ("PARTIAL", 1.0), ("UNANSWERABLE", 0.5),
             ("ANSWERABLE", None), ("UNDERSPECIFIED", 1.0)]
    assert m.answerability_accuracy(pairs) == 0.5  # 1, 1, 0, 0 counted
    assert m.answerability_accuracy([("UNDERSPECIFIED", 0.0)]) is None


# ---- metrics: judge outputs


@pytest.mark.parametrize("text, expected", [
    ("The answer matches the reference.\nRating: [[8]]", 0.8),
    ("Rating: [[8.5]]", 0.85),
    ("rating: [[9]]", 0.9),
    ("Rating: 7", 0.7),
    ("Rating: 8/10", 0.8),
    ("I would rate it 6 out of 10.", 0.6),
    ("Rating: [[10]]", 1.0),
    ("Faithfulness is 9 out of 10, completeness lower. Rating: [[6]]", 0.6),  # the [[x]] form comes first
    ("First Rating: [[4]]. On reflection, Rating: [[7]]", 0.7),  # its last occurrence counts
    ('I must answer as "Rating: [[rating]]", for example: "Rating: [[2]]".\nRating: [[3]]', 0.3),
    ('You asked for "Rating: [[rating]]", for example: "Rating: [[2]]".', 0.5),  # the echo is not a rating
    ("Rating: [[0]]", 0.5), ("Rating: [[11]]", 0.5), ("Rating: -3", 0.5), ("7 out of 100", 0.5),
    ("An excellent answer.", 0.5), ("", 0.5), (None, 0.5),
])
def test_parse_rating(text, expected):
    assert m.parse_rating(text) == pytest.approx(expected)


def test_rb_llm_is_the_median_over_judges():
    assert m.median_rating([0.8, 0.5, 0.9]) == 0.8
    assert m.median_rating([0.8, 0.6]) == pytest.approx(0.7)
    assert m.median_rating([]) is None


@pytest.mark.parametrize("text, label, word", [
    ("yes", 1.0, "yes"), (" No.", 0.0, "no"), ("Partial", 0.5, "partial"), ("**Yes**", 1.0, "yes"),
    ("yes, the response says it cannot answer", 1.0, "yes"), ("The response says yes", None, "the"),
    ("nope", None, "nope"), ("", None, ""), (None, None, ""),
])
def test_parse_idk_reads_the_first_word(text, label, word):
    assert m.parse_idk(text) == label
    assert m.idk_word(text) == word


def test_parse_statements():
    assert m.parse_statements('{"statements": ["A is B.", "C is D."]}') == ["A is B.", "C is D."]
    assert m.parse_statements('Here they are:\n```json\n{"statements": ["A.", "  ", "B."]}\n```') == ["A.", "B."]
    assert m.parse_statements('["A."]') == ["A."]
    assert m.parse_statements('{"note": 1} and then {"statements": ["A."]}') == ["A."]
    assert m.parse_statements('{"statements": []}') == []
    assert m.parse_statements('{"statements": [1, 2]}') is None
    assert m.parse_statements("There are no statements.") is None
    assert m.parse_statements(None) is None


def test_parse_statement_verdicts_and_faithfulness():
    text = ('```json\n{"statements": [{"statement": "A.", "reason": "said", "verdict": 1}, '
            '{"statement": "B.", "reason": "not said", "verdict": 0}]}\n```')
    assert m.parse_statement_verdicts(text) == [1, 0]
    assert m.parse_statement_verdicts('[{"verdict": "1"}, {"verdict": true}, {"verdict": false}]') == [1, 1, 0]
    assert m.parse_statement_verdicts('{"statements": [{"verdict": 2}]}') is None
    assert m.parse_statement_verdicts('{"statements": [{"statement": "A."}]}') is None
    assert m.parse_statement_verdicts("all supported") is None
    assert m.faithfulness([1, 0, 1, 1]) == 0.75
    assert math.isnan(m.faithfulness([])) and math.isnan(m.faithfulness(None))

