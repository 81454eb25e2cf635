"""Bi'anBench prompts: Table 12 as the models saw it, filled in one pass."""
from bianbench_cases import DEFAULT

from benchmarks.bianbench import prompt, templates_in_force


def test_templates_are_table12_with_real_newlines_separators_and_the_json_braces():
    item = {"task": "qa", "question": "Q?", "context": "D.", "answer": "A"}
    templates = templates_in_force(DEFAULT)
    assert prompt(item, templates["qa"]["en"]) == (
        "Given the following QUESTION, DOCUMENT and ANSWER you must analyze the provided answer and determine "
        "whether it is faithful to the contents of the DOCUMENT.\n The ANSWER must not offer new information beyond "
        "the context provided in the DOCUMENT. The ANSWER also must not contradict information provided in the "
        'DOCUMENT. Output your final verdict by strictly following this format: "PASS" if the answer is faithful '
        'to the DOCUMENT and "FAIL" if the answer is not faithful to the DOCUMENT. Show your reasoning.\n –\n '
        "QUESTION:Q?\n –\n DOCUMENT:D.\n–\nANSWER:A\n–\n Your output should be in JSON FORMAT with the keys "
        '"REASONING" and "SCORE": {"REASONING": <your reasoning as bullet points>, "SCORE": <your final score>}')
    assert prompt({**item, "task": "translation"}, templates["translation"]["zh"]).endswith(
        '忠实于“源文本”,则为 "失败"。\n –\n 源文本:D. \n–\n 译文:A\n –\n你的输出应该是 JSON 格式的,键是"推理过程"和'
        '"判断":{"推理过程":<你如何推理得到判断结果的步骤点>, "判断":<你的最终判断>}')
    assert "data_to_text" not in {t for t, langs in templates.items() if "zh" in langs}


def test_prompt_is_filled_in_one_pass():
    item = {"task": "summarization", "context": "a doc that says {summary} and {x}", "answer": "S"}
    assert prompt(item, "DOC:{document} SUM:{summary} {\"k\": 1}") == (
        'DOC:a doc that says {summary} and {x} SUM:S {"k": 1}')
