"""Every parser of model output never raises and always returns one of its declared outcomes (issue 16,
item 7), for arbitrary text and for near-misses: fragments of the formats the judges are asked for, JSON
and Python literals built from the keys the parsers look for, any Unicode (lone surrogates included), huge
numbers, and, as fixed examples, nesting deeper than the JSON parser recurses. The profile in conftest.py
fixes the examples (200 per property, derandomized); docs/reliability.md counts them.
"""
from __future__ import annotations

import json
import math

from hypothesis import example, given
from hypothesis import strategies as st

from benchmarks.bianbench import logprob_verdict, parse_reasoning, parse_verdict
from benchmarks.mtrag.generation.scores import (
    IDK_LABELS,
    idk_word,
    parse_idk,
    parse_rating,
    parse_statement_verdicts,
    parse_statements,
)
from benchmarks.mtrag.retrieval.queries import clean_rewrite
from benchmarks.rag_rewardbench import logprob_choice
from benchmarks.rag_rewardbench import parse_choice as choose_1_or_2
from benchmarks.utility.parsing import parse_choice, parse_judgment, parse_rank, parse_selection

# Pieces of the outputs the prompts ask for (docs/protocols.md), and what models put around them.
FRAGMENTS = (
    "Choose 1", "Choose 2", "choose", '"Choose ', "Response", "**", '"', "'", "`", "```json", "```", "\n",
    " ", "{", "}", "[", "]", ":", "：", ",", "SCORE", '"SCORE": ', "PASS", "FAIL", "pass", "通过", "失败", "判断",
    "REASONING", "推理过程", "My judgment:", "judgment is", "yes", "no", "yes/no", "My choice:", "Passage-0",
    "Passage-1", " or Passage-1", "My selection:", "My rank:", "[3]", ">", "none", "[]", "Rating:", "[[",
    "]]", "out of 10", "for example:", "partial", "statements", "verdict", '{"statements": [',
    "Standalone question:", "-", "0", "1", "10", "0.5", "-3", "1e9", "9" * 5000, "١٢", "NaN", "\ud800",
    "\x00",
)
KEYS = ("statements", "statement", "verdict", "reason", "SCORE", "REASONING", "score", "reasoning", "判断",
        "推理过程")
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=60)  # surrogates included
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT
           | st.sampled_from(("PASS", "FAIL", "0", "1")))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(KEYS) | ANY_TEXT, inner, max_size=4), max_leaves=12)
# What ast.literal_eval reads and json cannot write: sets, bytes, complex numbers, tuples.
LITERALS = st.recursive(SCALARS | st.binary(max_size=8) | st.complex_numbers(), lambda inner: st.lists(
    inner, max_size=3) | st.tuples(inner, inner) | st.sets(st.integers(), max_size=3) | st.dictionaries(
    st.sampled_from(KEYS), inner, max_size=3), max_leaves=8)
PIECES = ANY_TEXT | st.sampled_from(FRAGMENTS) | JSON_VALUES.map(json.dumps) | LITERALS.map(repr)
MODEL_TEXT = st.none() | st.lists(PIECES, max_size=8).map("".join)
DEEP = ("[" * 1500 + "]" * 1500, '{"a":' * 1500 + "1" + "}" * 1500, "{'reasoning': {1, 2}}",
        "{'REASONING': b'x', 'SCORE': 'PASS'}", "My selection: [" + "9" * 5000 + "]",
        "My rank: [" + "9" * 5000 + "]")
LOGPROB = st.none() | st.floats()


def deep_examples(*rest):
    """The fixed nasty inputs as explicit examples of a property (`rest`: its other arguments)."""
    def add(test):
        for text in DEEP:
            test = example(text, *rest)(test)
        return test
    return add


@given(MODEL_TEXT)
@deep_examples()
def test_rag_rewardbench_choice(text):
    assert choose_1_or_2(text) in (1, 2, None)


@given(LOGPROB, LOGPROB)
def test_rag_rewardbench_logprob_choice(lp_1, lp_2):
    assert logprob_choice(lp_1, lp_2) in (1, 2, None)


@given(MODEL_TEXT)
@deep_examples()
def test_bianbench_verdict_and_reasoning(text):
    assert parse_verdict(text) in ("PASS", "FAIL", "ERROR")
    reasoning = parse_reasoning(text)
    assert reasoning is None or isinstance(reasoning, str)


@given(st.none() | st.lists(LOGPROB, max_size=3))
def test_bianbench_logprob_verdict(logprobs):
    assert logprob_verdict(logprobs) in ("PASS", "FAIL", None)


@given(MODEL_TEXT)
@deep_examples()
def test_utility_pointwise_and_pairwise(text):
    assert parse_judgment(text) in (0, 1, None)
    assert parse_choice(text) in (0, 1, None)


@given(MODEL_TEXT, st.integers(0, 30))
@deep_examples(5)
def test_utility_listwise(text, n):
    selection, ranking = parse_selection(text, n), parse_rank(text, n)
    for ids in (selection, ranking):
        assert ids is None or len(set(ids)) == len(ids)
        assert all(isinstance(i, int) and 0 <= i < n for i in ids or [])
    assert ranking != []  # an empty ranking is no ranking: None


@given(MODEL_TEXT)
@deep_examples()
def test_mtrag_rating_and_idk(text):
    rating = parse_rating(text)
    assert isinstance(rating, float) and math.isfinite(rating) and 0 < rating <= 1
    assert parse_idk(text) in (*IDK_LABELS.values(), None)
    assert isinstance(idk_word(text), str)


@given(MODEL_TEXT)
@deep_examples()
def test_mtrag_ragas_statements_and_verdicts(text):
    statements = parse_statements(text)
    assert statements is None or all(isinstance(s, str) and s and s == s.strip() for s in statements)
    verdicts = parse_statement_verdicts(text)
    assert verdicts is None or all(v in (0, 1) and not isinstance(v, bool) for v in verdicts)


@given(MODEL_TEXT, st.text(min_size=1).filter(str.strip))
@deep_examples("what about the second one?")
def test_mtrag_llm_rewrite(text, last_turn):
    query, fell_back = clean_rewrite(text, last_turn)
    assert isinstance(query, str) and query.strip() and isinstance(fell_back, bool)
    assert query == last_turn if fell_back else "\n" not in query
