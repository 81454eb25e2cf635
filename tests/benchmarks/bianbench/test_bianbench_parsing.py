"""Bi'anBench verdicts: parsed from the judge's text (docs/protocols.md 2) and read from the candidates'
log-probs."""
import pytest

from benchmarks.bianbench import logprob_verdict, parse_reasoning, parse_verdict


@pytest.mark.parametrize("text, verdict", [
    ('{"REASONING": ["The document says 99.", "The answer says 95."], "SCORE": "FAIL"}', "FAIL"),  # clean
    ('```json\n{"REASONING": "supported", "SCORE": "PASS"}\n```', "PASS"),  # fenced
    ('{"REASONING": "supported", "SCORE": "PASS"}\nNote: it would FAIL if the date differed.', "PASS"),  # prose after
    ('{"REASONING": "first look", "SCORE": "PASS"}\nWait.\n{"REASONING": "95 != 99", "SCORE": "FAIL"}', "FAIL"),
    ('{"推理过程": ["文档中说99人。", "答案说95人。"], "判断": "失败"}', "FAIL"),  # Chinese keys and values
    ('```json\n{"推理过程": "一致", "判断": "通过"}\n```', "PASS"),
    ('{"reasoning": "fine", "score": "pass"}', "PASS"),  # lower case
    ('{"Reasoning": "no", "Score": "Fail"}', "FAIL"),
    ("The answer is supported by the document.\nFinal verdict: PASS", "PASS"),  # verdict only in prose
    ("最终结论:\n失败", "FAIL"),
    ("The answer does not pass the check.", "ERROR"),  # lower-case prose words are not verdicts
    ("It PASSED, in a passage.", "ERROR"),  # not standalone
    ("通过分析文档,答案与文档矛盾。", "ERROR"),  # 通过 inside a word ("by means of")
    ("", "ERROR"),
    (None, "ERROR"),
    ('{"REASONING": ["The document says 99 deaths", "so the answer is wro', "ERROR"),  # cut off, no verdict
    ('{"SCORE": "FAIL", "REASONING": ["the answer says 95 de', "FAIL"),  # cut off after a complete SCORE
    ('{"REASONING": ["x"], "SCORE": "PA', "ERROR"),  # cut off inside the verdict
    ('{"REASONING": ["a PASS needs 99"], "SCORE": "FA', "PASS"),  # cut off: falls back to the last bare token
    ("{'REASONING': 'supported', 'SCORE': 'PASS'}", "PASS"),  # single quotes
    ("{'REASONING': \"doesn't match\", 'SCORE': 'FAIL'}", "FAIL"),
    ('"REASONING": "x", "SCORE": "FAIL"', "FAIL"),  # no braces, as Table 12 prints the format
    ('判断:失败', "FAIL"),
    ('{"REASONING": "unsure", "SCORE": "UNSURE"}', "ERROR"),
    ('Format {"REASONING": <your reasoning>, "SCORE": <your final score>}\n{"REASONING": "ok", "SCORE": "PASS"}',
     "PASS"),
    ('{"result": {"REASONING": "nested", "SCORE": "FAIL"}, broken}', "FAIL"),
    ('**SCORE**: **FAIL**', "FAIL"),
])
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) == verdict


def test_parse_reasoning():
    assert parse_reasoning('```json\n{"REASONING": ["a", "b"], "SCORE": "PASS"}\n```') == "a\nb"
    assert parse_reasoning('{"推理过程": "一致", "判断": "通过"}') == "一致"
    assert parse_reasoning("Final verdict: PASS") is None


@pytest.mark.parametrize("logprobs, verdict", [
    ([-0.1, -2.0], "PASS"), ([-3.0, -0.5], "FAIL"), ([-1.0, -1.0], None), ([None, -4.0], "FAIL"),
    ([-4.0, None], "PASS"), ([None, None], None), (None, None),
])
def test_logprob_verdict(logprobs, verdict):
    assert logprob_verdict(logprobs) == verdict
