"""Bi'anBench rules (PROTOCOLS.md 2) with hand-computed expectations and the paper's printed numbers."""
import json
import math
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from benchmarks import bianbench as bb
from benchmarks.stats import stable_seed
from jobs.config import BenchmarkConfig
from jobs.reducers import aggregate

SAMPLE = "data/bianbench_table10.jsonl"


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return str(path)


def qa_row(**extra):
    row = {"id": 1, "task": "Question Answering", "context": "Paris is the capital of France.",
           "question": "What is the capital of France?", "answer": "Paris", "label": "PASS",
           "source_ds": "HaluEval_qa", "split": "en"}
    return {**row, **extra}


# ---- loading ----

def test_sample_file_is_the_four_table10_examples():
    items = list(bb.load_items(SAMPLE))
    assert [i["error"] for i in items] == [None] * 4
    assert [(i["item_id"], i["split"], i["language"], i["task"], i["subset"], i["label"]) for i in items] == [
        ("bianbench/en/13", "en", "en", "qa", "DROP", "FAIL"),
        ("bianbench/zh/213", "zh", "zh", "qa", "CRUD_MDQA", "FAIL"),
        ("bianbench/en/11071", "en", "en", "data_to_text", "WebNLG", "PASS"),
        ("bianbench/zh/30004", "zh", "zh", "translation", "wmt21", "PASS"),
    ]
    assert items[1]["context"].startswith("新闻【1】:2023-08-15 20:22,正文:新华社洛杉矶")  # list of one passage, kept
    assert items[1]["answer"] == "夏威夷州毛伊县的野火导致95人遇难,超过2100栋建筑被损毁。"
    assert items[2]["context"].splitlines()[2] == " 'Alhambra | status | \"Wrecked\"' 'Alhambra | topSpeed | 18.52']"
    assert items[2]["question"] == "" and items[3]["type"] == "en2zh"
    assert '8.1% "American" and 6.0% Polish ancestry.' in items[0]["context"]
    raw = [json.loads(line) for line in Path(SAMPLE).read_text(encoding="utf-8").splitlines()]
    assert {r["provenance"] for r in raw} == {"Bi'anBench paper, Table 10 (published example)"}
    assert [r["label"] for r in raw] == ["FAIL", "失败", "PASS", "通过"]


def test_bad_rows_become_error_items_naming_file_row_and_field_and_the_rest_goes_on(tmp_path):
    no_answer = {k: v for k, v in qa_row(id=2).items() if k != "answer"}
    no_split = {k: v for k, v in qa_row(id=6).items() if k != "split"}
    path = write_jsonl(tmp_path / "rows.jsonl", [
        qa_row(split="EN", task="qa", label="pass"), no_answer, qa_row(id=3, task="Poetry"),
        qa_row(id=4, label="maybe"), "{not json", no_split, qa_row(id=7, question=" "), qa_row(),
        qa_row(id=9, split="cf", label="通过"), qa_row(id=10, split="cf", language="en"),
        qa_row(id=11, context=["新闻【1】:甲。", "新闻【2】:乙。"], split="zh", label="失败"),
        qa_row(id=12, split="xx"),
    ])
    items = list(bb.load_items(path))
    errors = [i["error"] for i in items]
    assert len(items) == 12
    assert [e is None for e in errors] == [True, False, False, False, False, False, False, False, True, True,
                                          True, False]
    assert errors[1] == f"{path}: row 2: field 'answer' missing"
    assert errors[2].startswith(f"{path}: row 3: field 'task': 'Poetry' is not Question Answering")
    assert errors[3] == f"{path}: row 4: field 'label': 'maybe' is not PASS, FAIL, 通过 or 失败"
    assert errors[4].startswith(f"{path}: row 5: not valid JSON")
    assert errors[5] == (f"{path}: row 6: field 'split' missing (and the file name rows.jsonl does not end in "
                         "_en, _zh or _cf)")
    assert errors[6] == f"{path}: row 7: field 'question' empty"
    assert errors[7] == f"{path}: row 8: duplicate of {path}: row 1 (same split and id)"
    assert errors[11] == f"{path}: row 12: field 'split': 'xx' is not one of en, zh, cf"
    assert items[0]["item_id"] == "bianbench/en/1" and items[0]["label"] == "PASS" and items[0]["task"] == "qa"
    assert (items[8]["split"], items[8]["language"], items[8]["label"]) == ("cf", "zh", "PASS")  # label spelling
    assert (items[9]["split"], items[9]["language"]) == ("cf", "en")  # the language field
    assert items[10]["context"] == "新闻【1】:甲。\n\n新闻【2】:乙。"
    assert items[1]["item_id"] == f"bianbench/{path}:2" and items[1]["subset"] == "HaluEval_qa"
    assert len({i["item_id"] for i in items}) == 12


def test_split_from_the_file_name_parquet_and_folders(tmp_path):
    write_jsonl(tmp_path / "bianbench_zh.jsonl", [{k: v for k, v in qa_row(label="通过").items() if k != "split"}])
    pq.write_table(pa.Table.from_pylist([
        {"id": "c1", "task": "Machine Translation", "context": ["a b c"], "question": None, "answer": "甲乙丙",
         "label": "FAIL", "source_ds": "PDC", "type": "en2zh"},
        {"id": "c2", "task": "summarization", "context": ["doc one", "doc two"], "question": None,
         "answer": "summary", "label": "PASS", "source_ds": "FIB", "type": None},
    ]), tmp_path / "Bianbench_CF.parquet")
    items = sorted(bb.load_items(str(tmp_path)), key=lambda i: i["item_id"])
    assert [(i["item_id"], i["language"], i["task"], i["error"]) for i in items] == [
        ("bianbench/cf/c1", "en", "translation", None), ("bianbench/cf/c2", "en", "summarization", None),
        ("bianbench/zh/1", "zh", "qa", None)]
    assert items[1]["context"] == "doc one\n\ndoc two" and items[0]["type"] == "en2zh"


# ---- options and prompts ----

def bench_config(path):
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(BenchmarkConfig), OmegaConf.load(path)))


@pytest.mark.parametrize("path", ["conf/benchmarks/bianbench.yaml", "conf/benchmarks/bianbench_sample.yaml"])
def test_both_configs_share_the_table12_prompts_and_the_paper_sampling(path):
    config = bench_config(path)
    assert bb.check_options(config.options) == []
    opts = bb.settings(config.options)
    assert (opts["runs"], opts["temperature"], opts["top_p"], opts["max_tokens"], opts["greedy"]) == (
        3, 0.8, 0.7, 512, False)
    assert sorted((t, lang) for t, langs in opts["templates"].items() for lang in langs) == sorted(bb.PAPER_PROMPTS)


def test_templates_are_table12_with_real_newlines_separators_and_the_json_braces():
    item = {"task": "qa", "question": "Q?", "context": "D.", "answer": "A"}
    templates = bb.settings()["templates"]
    assert bb.prompt(item, templates["qa"]["en"]) == (
        "Given the following QUESTION, DOCUMENT and ANSWER you must analyze the provided answer and determine "
        "whether it is faithful to the contents of the DOCUMENT.\n The ANSWER must not offer new information beyond "
        "the context provided in the DOCUMENT. The ANSWER also must not contradict information provided in the "
        'DOCUMENT. Output your final verdict by strictly following this format: "PASS" if the answer is faithful '
        'to the DOCUMENT and "FAIL" if the answer is not faithful to the DOCUMENT. Show your reasoning.\n –\n '
        "QUESTION:Q?\n –\n DOCUMENT:D.\n–\nANSWER:A\n–\n Your output should be in JSON FORMAT with the keys "
        '"REASONING" and "SCORE": {"REASONING": <your reasoning as bullet points>, "SCORE": <your final score>}')
    assert bb.prompt({**item, "task": "translation"}, templates["translation"]["zh"]).endswith(
        '忠实于“源文本”,则为 "失败"。\n –\n 源文本:D. \n–\n 译文:A\n –\n你的输出应该是 JSON 格式的,键是"推理过程"和'
        '"判断":{"推理过程":<你如何推理得到判断结果的步骤点>, "判断":<你的最终判断>}')
    assert "data_to_text" not in {t for t, langs in templates.items() if "zh" in langs}


def test_prompt_is_filled_in_one_pass():
    item = {"task": "summarization", "context": "a doc that says {summary} and {x}", "answer": "S"}
    assert bb.prompt(item, "DOC:{document} SUM:{summary} {\"k\": 1}") == (
        'DOC:a doc that says {summary} and {x} SUM:S {"k": 1}')


def test_check_options_names_the_key():
    assert bb.check_options({"runs": 0, "top_p": 1.5, "temprature": 0.2}) == [
        ("options.temprature: unknown key (known: templates_file, templates, runs, temperature, top_p, max_tokens, "
         "greedy)"), "options.runs: 0 is not a whole number >= 1", "options.top_p: 1.5 is not a number in (0, 1]"]
    only_en_qa = {"templates_file": None, "templates": {"qa": {"en": "{question} {document} {answer}"},
                                                         "translation": {"zh": "{source_text} {oops}"}}}
    problems = bb.check_options(only_en_qa)
    assert "options.templates.summarization.en: missing" in problems
    assert "options.templates.qa.zh: missing" in problems
    assert "options.templates.data_to_text.zh: missing" not in problems  # the paper has none
    assert "options.templates.translation.zh: placeholder {translated_text} missing" in problems
    assert ("options.templates.translation.zh: unknown placeholder {oops} (translation fills {source_text}, "
            "{translated_text})") in problems
    assert bb.check_options({"templates_file": "conf/prompts/nope.yaml"})[0].startswith(
        "options.templates_file: cannot read")


def test_a_missing_template_is_found_before_the_run_and_becomes_error_rows_not_a_crash(tmp_path):
    path = write_jsonl(tmp_path / "x_zh.jsonl", [
        {"id": 5, "task": "Data-to-Text", "context": "[a | b | c]", "answer": "甲", "label": "通过",
         "source_ds": "WebNLG_zh"}, qa_row(id=6, split="zh", label="失败")])
    items = list(bb.load_items(path))
    assert bb.check_items(items, {}) == [
        "options.templates.data_to_text.zh: missing (needed by 1 item(s), e.g. bianbench/zh/5)"]
    assert bb.expand(items[0], "generative") == []
    rows = bb.combine(items[0], [], "generative")
    assert [r["run"] for r in rows] == [0, 1, 2]
    assert {r["error"] for r in rows} == {
        "no prompt template for (data_to_text, zh): options.templates.data_to_text.zh missing"}
    assert {r["correct"] for r in rows} == {None}


# ---- requests ----

def test_expand_one_request_per_run_with_deterministic_distinct_seeds_and_prefill_per_language():
    en, zh = (i for i in bb.load_items(SAMPLE) if i["task"] == "qa")
    requests = bb.expand(en, "generative")
    assert [r["variant"] for r in requests] == ["run0", "run1", "run2"]
    assert [r["request_id"] for r in requests] == [f"bianbench/en/13#run{k}" for k in range(3)]
    assert [r["seed"] for r in requests] == [stable_seed("bianbench/en/13", f"run{k}") % 2**31 for k in range(3)]
    assert requests == bb.expand(en, "generative")  # a rerun sends the same requests
    seeds = {r["seed"] for r in requests} | {r["seed"] for r in bb.expand(zh, "generative")}
    assert len(seeds) == 6 and all(0 <= s < 2**31 for s in seeds)
    first = requests[0]
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.8, 0.7, 512)
    assert first["prefill"] == '{"SCORE": "' and first["candidates"] == ["PASS", "FAIL"]
    assert len(first["messages"]) == 1 and first["messages"][0]["role"] == "user"
    assert "QUESTION:Which group from the census is smaller: German or Irish?\n –\n DOCUMENT:As of the census" in (
        first["messages"][0]["content"])
    zh_first = bb.expand(zh, "generative")[0]
    assert zh_first["prefill"] == '{"判断": "' and zh_first["candidates"] == ["通过", "失败"]
    assert "问题:夏威夷州毛伊县发生的野火导致多少人遇难" in zh_first["messages"][0]["content"]
    assert {tuple(sorted(r)) for r in requests + [zh_first]} == {tuple(sorted(first))}  # same columns everywhere
    assert pa.Table.from_pylist(requests + [zh_first]).schema.field("seed").type == pa.int64()
    with pytest.raises(ValueError, match="unknown model kind"):
        bb.expand(en, "discriminative")


def test_greedy_is_one_run_at_temperature_zero_and_options_override_defaults():
    item = next(bb.load_items(SAMPLE))
    (greedy,) = bb.expand(item, "generative", {"greedy": True, "runs": 3})
    assert (greedy["variant"], greedy["temperature"], greedy["top_p"]) == ("run0", 0.0, 1.0)
    more = bb.expand(item, "generative", {"runs": 5, "temperature": 0.5, "max_tokens": 64})
    assert len(more) == 5 and more[4]["temperature"] == 0.5 and more[4]["max_tokens"] == 64
    custom = bb.expand(item, "generative", {"templates": {"qa": {"en": "Q={question}|A={answer}"}}})
    assert custom[0]["messages"][0]["content"] == "Q=Which group from the census is smaller: German or Irish?|A=German"


# ---- parsing ----

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
    assert bb.parse_verdict(text) == verdict


def test_parse_reasoning():
    assert bb.parse_reasoning('```json\n{"REASONING": ["a", "b"], "SCORE": "PASS"}\n```') == "a\nb"
    assert bb.parse_reasoning('{"推理过程": "一致", "判断": "通过"}') == "一致"
    assert bb.parse_reasoning("Final verdict: PASS") is None


@pytest.mark.parametrize("logprobs, verdict", [
    ([-0.1, -2.0], "PASS"), ([-3.0, -0.5], "FAIL"), ([-1.0, -1.0], None), ([None, -4.0], "FAIL"),
    ([-4.0, None], "PASS"), ([None, None], None), (None, None),
])
def test_logprob_verdict(logprobs, verdict):
    assert bb.logprob_verdict(logprobs) == verdict


# ---- item rows ----

def answer(run, text=None, logprobs=None, error=None):
    return {"variant": f"run{run}", "text": text, "candidate_logprobs": logprobs, "error": error,
            "truncated": error is not None, "n_tokens": 100}


def test_combine_one_row_per_run_with_text_and_logprob_verdicts():
    item = next(bb.load_items(SAMPLE))  # DROP, gold FAIL
    rows = bb.combine(item, [
        answer(0, '{"REASONING": ["German 22.5% > Irish 13.1%"], "SCORE": "FAIL"}', [-2.0, -0.1]),
        answer(1, "I cannot decide.", [-0.2, -1.0]),
        answer(2, error="context overflow: 9000 tokens > max_model_len 8192"),
    ], "generative")
    assert [(r["run"], r["prediction"], r["logprob_prediction"], r["correct"], r["logprob_correct"]) for r in rows] == [
        (0, "FAIL", "FAIL", 1.0, 1.0), (1, "ERROR", "PASS", 0.0, 0.0), (2, None, None, None, None)]
    assert rows[0]["reasoning"] == "German 22.5% > Irish 13.1%" and rows[1]["reasoning"] is None
    assert rows[2]["error"] == "context overflow: 9000 tokens > max_model_len 8192" and rows[2]["truncated"]
    assert {(r["item_id"], r["split"], r["task"], r["subset"], r["language"], r["label"]) for r in rows} == {
        ("bianbench/en/13", "en", "qa", "DROP", "en", "FAIL")}
    assert [bb.row_key(r) for r in rows] == ["bianbench/en/13#0", "bianbench/en/13#1", "bianbench/en/13#2"]
    assert bb.group_key(rows[0]) == "en|en|qa|DROP"
    # the log-prob path scores `correct` when asked; the text verdict stays in `prediction`
    by_logprob = bb.combine(item, [answer(0, "x FAIL", [-0.2, -1.0]), answer(1, "FAIL", None),
                                   answer(2, "FAIL", [-3.0, -0.3])], "generative", verdict="logprob")
    assert [(r["prediction"], r["correct"], r["text_correct"]) for r in by_logprob] == [
        ("FAIL", 0.0, 1.0), ("FAIL", 0.0, 1.0), ("FAIL", 1.0, 1.0)]
    missing = bb.combine(item, [answer(0, '{"SCORE": "FAIL"}')], "generative", {"runs": 2})
    assert [r["error"] for r in missing] == [None, "no answer for request run1"]
    table = pa.Table.from_pylist(rows + by_logprob + missing)  # stored as Parquet: one type per column
    assert table.schema.field("logprob_correct").type == pa.float64() and table.num_rows == 8


# ---- aggregation ----

def test_measures_need_only_correct():
    assert bb.measures({"item_id": "bianbench/en/1", "correct": 1.0}) == {
        "correct": 1.0, "failed": 0.0, "unparsed": None, "pass_recall": None, "fail_recall": None,
        "text_correct": None, "logprob_correct": None}
    assert bb.group_key({"item_id": "bianbench/zh/7", "task": "Machine Translation", "subset": "PDC"}) == (
        "zh|zh|translation|PDC")
    assert bb.group_key({"item_id": "x", "split": "cf", "task": "qa", "subset": "s", "label": "失败"}) == "cf|zh|qa|s"


def test_mean_and_sample_std_over_runs_hand_computed():
    # EN subsets A, B (QA) and C (Summarization), three runs each.
    runs = {("qa", "A"): [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],  # 0.5, 0.75, 1.0
            ("qa", "B"): [[1, 0], [0, 0], [1, 1]],  # 0.5, 0.0, 1.0
            ("summarization", "C"): [[1], [0], [1]]}  # 1.0, 0.0, 1.0
    rows = [{"item_id": f"bianbench/en/{subset}{i}", "split": "en", "task": task, "subset": subset, "run": run,
             "correct": float(v)}
            for (task, subset), per_run in runs.items() for run, values in enumerate(per_run)
            for i, v in enumerate(values)]
    m = aggregate(bb, rows, resamples=200)
    en = m["splits"]["en"]
    # per run: Avg = (A + B + C) / 3 = 2/3, 1/4, 1 -> mean 23/36, sample std sqrt(366/1296/2)
    assert en["avg_by_run"] == pytest.approx({"run0": 2 / 3, "run1": 0.25, "run2": 1.0})
    assert en["avg"] == pytest.approx(23 / 36) and en["avg_std"] == pytest.approx(math.sqrt(183 / 1296))
    # QA per run = (A + B) / 2 = 0.5, 0.375, 1.0 -> mean 0.625, std sqrt(0.21875 / 2)
    assert en["tasks"]["qa"] == pytest.approx(0.625) and en["tasks_std"]["qa"] == pytest.approx(math.sqrt(0.109375))
    assert en["tasks"]["summarization"] == pytest.approx(2 / 3)
    a = en["subsets"]["A"]
    assert (a["accuracy"], a["std"], a["n"], a["n_rows"]) == (pytest.approx(0.75), pytest.approx(0.25), 4, 12)
    assert a["ci95"][0] <= 0.75 <= a["ci95"][1]
    assert m["n"] == 21 and m["n_items"] == 7 and m["runs"] == [0, 1, 2] and m["n_errors"] == 0
    assert m == aggregate(bb, list(reversed(rows)), resamples=200)  # order-independent, seeded


def test_recall_error_rate_and_logprob_accuracy():
    item = {"item_id": "bianbench/en/1", "split": "en", "task": "qa", "subset": "S", "language": "en",
            "label": "PASS"}
    fail_item = {**item, "item_id": "bianbench/en/2", "label": "FAIL"}
    rows = (bb.combine(item, [answer(0, '{"SCORE": "PASS"}', [-0.1, -2.0]), answer(1, "no idea", [-0.1, -2.0]),
                              answer(2, '{"SCORE": "FAIL"}', [-3.0, -0.1])], "generative")
            + bb.combine(fail_item, [answer(0, '{"SCORE": "FAIL"}', [-0.1, -2.0]), answer(1, '{"SCORE": "FAIL"}'),
                                     answer(2, error="boom")], "generative"))
    s = aggregate(bb, rows, resamples=50)["splits"]["en"]
    sub = s["subsets"]["S"]
    # runs: 0 -> PASS right, FAIL right; 1 -> PASS item ERROR (wrong), FAIL right; 2 -> PASS item wrong, FAIL failed
    assert sub["by_run"] == pytest.approx({"run0": 1.0, "run1": 0.5, "run2": 0.0})
    assert sub["pass_recall"] == pytest.approx(1 / 3) and sub["fail_recall"] == pytest.approx(1.0)
    assert sub["error_rate"] == pytest.approx((0 + 0.5 + 0) / 3)
    # log-prob verdicts: run0 PASS (right), PASS (wrong); run1 PASS (right), none; run2 FAIL (wrong), failed
    assert sub["logprob_accuracy"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert sub["failed_rate"] == pytest.approx((0 + 0 + 0.5) / 3)
    assert s["error_rate"] == sub["error_rate"] and s["n_errors"] == 1


# Table 17 (EN) and Table 18 (ZH) subset accuracies, and the same models' Table 2 task scores and Avg.
TABLE17 = {  # HaluEval_qa .. IfQA (QA), FIB, HaluEval_sum, WebNLG, RAGTruth_d2t, PDC, WMT21
    "GPT-4o-0806": [86.9, 84.0, 85.7, 83.1, 95.0, 83.9, 87.1, 86.7, 74.4, 76.6, 91.1, 80.0, 80.9, 91.8],
    "GPT-4o-mini": [87.2, 80.2, 80.7, 79.8, 86.5, 84.2, 80.2, 84.3, 60.1, 57.6, 86.6, 78.0, 70.2, 88.9],
    "Llama3.1-8B-Instruct": [82.6, 70.1, 61.6, 56.7, 79.3, 79.4, 73.4, 75.3, 60.4, 60.0, 84.5, 40.6, 57.0, 79.6],
    "Llama3.1-70B-Instruct": [86.0, 85.7, 75.1, 78.1, 89.1, 87.5, 77.7, 86.2, 72.8, 77.6, 90.5, 71.2, 59.2, 87.3],
    "Qwen2-7B-Instruct": [86.4, 58.9, 59.5, 55.6, 64.4, 64.4, 55.6, 69.1, 52.4, 61.2, 78.8, 54.0, 66.2, 83.3],
    "Qwen2-72B-Instruct": [86.6, 83.2, 74.2, 69.6, 87.7, 88.9, 88.1, 83.6, 71.5, 75.6, 91.8, 62.2, 74.8, 89.3],
    "Lynx-8B-v1.1": [86.2, 79.4, 76.5, 72.7, 96.3, 88.4, 82.0, 83.7, 62.1, 70.0, 83.7, 47.8, 65.6, 82.4],
    "Qwen2.5-7B-Instruct": [85.3, 74.6, 59.3, 54.0, 82.5, 75.3, 64.9, 76.8, 64.4, 67.8, 85.4, 60.2, 74.1, 87.6],
    "Qwen2.5-14B-Instruct": [83.4, 78.4, 73.2, 71.2, 90.7, 81.8, 78.7, 81.1, 70.4, 75.8, 88.1, 71.0, 83.3, 91.0],
    "Qwen2.5-72B-Instruct": [86.2, 83.7, 78.4, 81.3, 92.8, 88.9, 88.5, 85.8, 72.3, 77.0, 91.0, 66.4, 81.8, 91.4],
    "Bi'an-qwen-7B": [82.3, 76.8, 75.1, 71.7, 93.4, 85.9, 79.5, 81.2, 70.6, 61.4, 87.4, 77.4, 91.3, 89.3],
    "Bi'an-qwen-14B": [85.7, 80.7, 79.3, 78.5, 93.3, 87.5, 86.1, 84.5, 69.7, 69.4, 86.0, 81.4, 94.5, 90.5],
}
TABLE2_EN = {  # QA, Summarization, Data-to-Text, Machine Translation, Avg.
    "GPT-4o-0806": [86.6, 75.5, 85.6, 86.4, 84.8], "GPT-4o-mini": [82.9, 58.9, 82.3, 79.6, 78.9],
    "Llama3.1-8B-Instruct": [72.3, 60.2, 62.6, 68.3, 68.6], "Llama3.1-70B-Instruct": [83.2, 75.2, 80.9, 73.3, 80.3],
    "Qwen2-7B-Instruct": [64.2, 56.8, 66.4, 74.8, 64.9], "Qwen2-72B-Instruct": [82.7, 73.6, 77.0, 82.1, 80.5],
    "Lynx-8B-v1.1": [83.2, 66.1, 65.8, 74.0, 76.9], "Qwen2.5-7B-Instruct": [71.6, 66.1, 72.8, 80.9, 72.3],
    "Qwen2.5-14B-Instruct": [79.8, 73.1, 79.6, 87.2, 79.8], "Qwen2.5-72B-Instruct": [85.7, 74.7, 78.7, 86.6, 83.3],
    "Bi'an-qwen-7B": [80.7, 66.0, 82.4, 90.3, 80.2], "Bi'an-qwen-14B": [84.5, 69.6, 83.7, 92.5, 83.4],
}
TABLE18 = {  # CRUD_MDQA, WebQA1.0, LawBench_RC, WebCPM-LFQA (QA), CSDS, CRUD_sum, LawBench_sum, PDC, WMT21
    "GPT-4o-0806": [91.0, 90.3, 95.2, 81.9, 85.9, 95.3, 92.4, 92.4, 92.2],
    "GPT-4o-mini": [86.8, 87.6, 91.6, 70.9, 76.1, 92.1, 91.0, 77.0, 90.4],
    "Llama3-8B-chinese": [63.8, 58.5, 70.0, 35.8, 63.0, 73.7, 78.8, 44.8, 66.1],
    "Llama3-70B-chinese": [82.1, 85.8, 89.6, 44.1, 72.7, 83.1, 91.2, 55.4, 82.2],
    "Qwen2-7B-Instruct": [71.2, 79.5, 73.0, 41.9, 63.7, 78.1, 80.6, 63.5, 81.1],
    "Qwen2-72B-Instruct": [89.0, 89.6, 90.8, 58.7, 81.3, 90.6, 93.6, 75.0, 89.5],
    "Qwen2.5-7B-Instruct": [86.7, 82.4, 87.9, 56.7, 71.6, 89.6, 78.4, 67.0, 85.4],
    "Qwen2.5-14B-Instruct": [89.9, 85.5, 90.2, 72.2, 84.0, 93.6, 89.5, 79.1, 91.2],
    "Qwen2.5-72B-Instruct": [90.8, 90.5, 92.9, 72.5, 84.1, 94.1, 94.3, 85.8, 91.7],
    "Bi'an-qwen-7B": [90.2, 87.7, 92.7, 72.8, 83.8, 96.4, 85.1, 90.6, 90.0],
    "Bi'an-qwen-14B": [93.4, 90.3, 94.1, 75.8, 86.9, 96.1, 89.8, 93.4, 91.8],
}
TABLE2_ZH = {  # QA, Summarization, Machine Translation, Avg.
    "GPT-4o-0806": [89.6, 91.2, 92.3, 90.7], "GPT-4o-mini": [84.2, 86.4, 83.7, 84.8],
    "Llama3-8B-chinese": [57.0, 71.8, 55.5, 61.6], "Llama3-70B-chinese": [75.4, 82.3, 68.8, 76.2],
    "Qwen2-7B-Instruct": [66.4, 74.1, 72.3, 70.3], "Qwen2-72B-Instruct": [82.0, 88.5, 82.3, 84.2],
    "Qwen2.5-7B-Instruct": [78.4, 79.9, 76.2, 78.4], "Qwen2.5-14B-Instruct": [84.5, 89.0, 85.2, 86.1],
    "Qwen2.5-72B-Instruct": [86.7, 90.8, 88.8, 88.5], "Bi'an-qwen-7B": [85.9, 88.4, 90.3, 87.7],
    "Bi'an-qwen-14B": [88.4, 90.9, 92.6, 90.1],
}
SUBSETS = {"en": [(task, s) for task, names in bb.PAPER_SUBSETS["en"].items() for s in names],
           "zh": [(task, s) for task, names in bb.PAPER_SUBSETS["zh"].items() for s in names]}
TABLE4_SIZES = [1000, 893, 1000, 995, 970, 1000, 1000, 995, 848, 1000, 1100, 500, 1000, 1000]  # EN subset sizes


def rows_with_accuracies(split, accuracies, per_subset=1000):
    """1000 rows per subset, the first round(10 * accuracy) of them right: subset accuracy = the printed value."""
    return [{"item_id": f"bianbench/{split}/{subset}-{i}", "split": split, "task": task, "subset": subset,
             "correct": 1.0 if i < round(10 * accuracy) else 0.0}
            for (task, subset), accuracy in zip(SUBSETS[split], accuracies) for i in range(per_subset)]


def test_gpt4o_table17_subsets_give_its_table2_row():
    en = aggregate(bb, rows_with_accuracies("en", TABLE17["GPT-4o-0806"]), resamples=10)["splits"]["en"]
    assert en["subsets"]["DROP"]["accuracy"] == pytest.approx(0.831) and en["subsets"]["DROP"]["n"] == 1000
    # hand-computed: QA = 692.4 / 8 = 86.55, the others pairs' means; Avg. = 1187.2 / 14 = 84.8
    assert [100 * en["tasks"][t] for t in bb.TASKS] == pytest.approx([86.55, 75.5, 85.55, 86.35])
    assert 100 * en["avg"] == pytest.approx(1187.2 / 14) and round(100 * en["avg"], 1) == 84.8
    assert en["avg_std"] is None  # one run


@pytest.mark.parametrize("split, subsets, printed", [
    ("en", TABLE17, TABLE2_EN), ("zh", TABLE18, TABLE2_ZH)])
def test_every_table2_row_is_the_macro_average_of_its_table17_18_subsets(split, subsets, printed):
    # Printed subset values are rounded to 0.1, so their mean may be off by 0.05, plus 0.05 for the printed
    # score's own rounding: 0.1 is "within rounding".
    for model, accuracies in subsets.items():
        s = aggregate(bb, rows_with_accuracies(split, accuracies), resamples=1)["splits"][split]
        ours = [100 * s["tasks"][t] for t in bb.TABLE2_TASKS[split]] + [100 * s["avg"]]
        assert ours == pytest.approx(printed[model], abs=0.1 + 1e-9), model


def test_the_printed_avg_rules_out_a_mean_over_tasks_or_over_rows():
    """Why the split Avg. is the mean over subsets: the other two readings miss Table 2 by far."""
    values, sizes = TABLE17["GPT-4o-0806"], TABLE4_SIZES
    over_tasks = (sum(values[:8]) / 8 + sum(values[8:10]) / 2 + sum(values[10:12]) / 2 + sum(values[12:]) / 2) / 4
    over_rows = sum(v * n for v, n in zip(values, sizes)) / sum(sizes)
    assert abs(over_tasks - 84.8) > 1.0 and abs(over_rows - 84.8) > 0.3
    assert abs(sum(values) / len(values) - 84.8) < 0.05


# ---- ensemble ----

def judge_rows(item_id, label, verdicts):
    """One judge's rows for an item: a verdict per run, or an exception-like error string prefixed 'error:'."""
    return [{"item_id": item_id, "split": "en", "task": "qa", "subset": "S", "language": "en", "run": run,
             "label": label, "prediction": None if v.startswith("error:") else v,
             "error": v[6:] if v.startswith("error:") else None}
            for run, v in enumerate(verdicts)]


def test_ensemble_majority_of_judges_each_the_majority_of_its_runs():
    a = judge_rows("x", "PASS", ["PASS", "PASS", "FAIL"]) + judge_rows("y", "FAIL", ["PASS", "FAIL"]) + (
        judge_rows("z", "FAIL", ["ERROR", "ERROR", "ERROR"]) + judge_rows("w", "PASS", ["error:overflow"]))
    b = judge_rows("x", "PASS", ["FAIL", "FAIL", "ERROR"]) + judge_rows("y", "FAIL", ["FAIL", "FAIL", "FAIL"]) + (
        judge_rows("z", "FAIL", ["error:overflow"]) + judge_rows("w", "PASS", ["error:overflow"]))
    c = judge_rows("x", "PASS", ["PASS", "ERROR", "ERROR"]) + judge_rows("y", "FAIL", ["PASS", "PASS", "PASS"])
    rows = {r["item_id"]: r for r in bb.ensemble({"gpt4o": a, "qwen72b": b, "mini": c})}
    assert {r["model"] for r in rows.values()} == {"ensemble(gpt4o,qwen72b,mini)"}
    # x: PASS, FAIL, PASS -> PASS (right)
    assert (rows["x"]["prediction"], rows["x"]["correct"]) == ("PASS", 1.0)
    assert rows["x"]["votes"] == "gpt4o=PASS; qwen72b=FAIL; mini=PASS"
    # y: gpt4o ties 1-1 and abstains; qwen72b FAIL vs mini PASS ties -> the first judge that voted (qwen72b)
    assert (rows["y"]["prediction"], rows["y"]["correct"], rows["y"]["votes"]) == (
        "FAIL", 1.0, "gpt4o=-; qwen72b=FAIL; mini=PASS")
    # z: no judge gave a verdict -> ERROR, counted wrong; w: every row failed -> an error row
    assert (rows["z"]["prediction"], rows["z"]["correct"]) == ("ERROR", 0.0)
    assert rows["w"]["correct"] is None and rows["w"]["error"] == "every judge's rows for this item failed"
    m = aggregate(bb, list(rows.values()), resamples=20)
    assert m["n"] == 3 and m["n_errors"] == 1 and m["splits"]["en"]["avg"] == pytest.approx(2 / 3)


def test_ensemble_of_combined_rows_keeps_the_prediction_schema():
    item = next(bb.load_items(SAMPLE))
    judges = {name: bb.combine(item, [answer(k, f'{{"SCORE": "{v}"}}') for k, v in enumerate(verdicts)],
                               "generative")
              for name, verdicts in {"a": ["FAIL"] * 3, "b": ["PASS", "PASS", "FAIL"], "c": ["FAIL", "PASS", "FAIL"]
                                     }.items()}
    (row,) = bb.ensemble(judges)
    assert (row["prediction"], row["correct"], row["label"], row["run"]) == ("FAIL", 1.0, "FAIL", 0)
    assert set(judges["a"][0]) - set(row) == {"truncated", "n_tokens"}
    assert bb.group_key(row) == "en|en|qa|DROP"


# ---- the aggregate contract and the tables ----

def test_cli_aggregate_contract_with_only_the_minimal_columns(tmp_path, capsys):
    from jobs.cli import main

    rows = [
        {"item_id": "bianbench/en/1", "split": "en", "task": "qa", "subset": "S1", "correct": 1},
        {"item_id": "bianbench/en/2", "split": "en", "task": "Question Answering", "subset": "S1", "correct": 0},
        {"item_id": "bianbench/en/3", "split": "en", "task": "qa", "subset": "S2", "correct": 1},
        {"item_id": "bianbench/en/4", "split": "en", "task": "translation", "subset": "T", "correct": 0},
        {"item_id": "bianbench/en/5", "split": "en", "task": "translation", "subset": "T", "correct": 1},
        {"item_id": "bianbench/zh/6", "split": "zh", "task": "qa", "subset": "Z", "correct": 1, "run": 0},
        {"item_id": "bianbench/zh/6", "split": "zh", "task": "qa", "subset": "Z", "correct": 0, "run": 1},
        {"item_id": "bianbench/zh/7", "split": "zh", "task": "qa", "subset": "Z", "correct": 1, "run": 0},
        {"item_id": "bianbench/zh/7", "split": "zh", "task": "qa", "subset": "Z", "correct": 1, "run": 1},
    ]
    path = write_jsonl(tmp_path / "pred.jsonl", rows)
    assert main(["aggregate", "--benchmark", "bianbench", "--predictions", path, "--out", str(tmp_path / "out")]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert (m["benchmark"], m["n"], m["n_errors"]) == ("bianbench", 9, 0)
    en, zh = m["splits"]["en"], m["splits"]["zh"]
    assert en["tasks"] == {"qa": 0.75, "translation": 0.5}  # QA = (0.5 + 1.0) / 2
    assert en["avg"] == pytest.approx(2 / 3)  # (0.5 + 1.0 + 0.5) / 3; over tasks 0.625, over rows 0.6
    assert en["subsets"]["S1"]["n"] == 2 and len(en["subsets"]["S1"]["ci95"]) == 2
    assert zh["avg"] == 0.75 and zh["avg_std"] == pytest.approx(math.sqrt(0.125))  # runs 1.0 and 0.5
    assert en["error_rate"] is None and en["logprob_accuracy"] is None


def test_table_text_layout():
    full = {"model": "judge-a", "splits": {
        "en": {"avg": 0.848, "avg_std": 0.012, "tasks": {"qa": 0.866, "summarization": 0.755},
               "tasks_std": {"qa": 0.01, "summarization": None}, "languages": {"en": {"avg": 0.848, "std": 0.012}},
               "error_rate": 0.02, "text_accuracy": 0.848, "logprob_accuracy": None,
               "subsets": {"Extra": {"task": "qa", "accuracy": 0.5}, "DROP": {"task": "qa", "accuracy": 0.831},
                           "FIB": {"task": "summarization", "accuracy": 0.744}}},
        "cf": {"avg": 0.9, "avg_std": None, "tasks": {"qa": 0.9}, "tasks_std": {"qa": None},
               "languages": {"zh": {"avg": 0.939, "std": None}}, "error_rate": 0.0, "text_accuracy": 0.9,
               "logprob_accuracy": 0.8, "subsets": {"WebQA1.0": {"task": "qa", "accuracy": 0.939}}}}}
    text = bb.table_text([full, {"model": "judge-b", "splits": {}}])
    lines = text.splitlines()
    en = lines.index("Table 2, Bi'anBench_EN")
    assert re.split(r"\s{2,}", lines[en + 1]) == ["Model", "QA", "Summarization", "Data-to-Text",
                                                  "Machine Translation", "Avg."]
    assert lines[en + 2].split() == ["judge-a", "86.6", "±", "1.0", "75.5", "-", "-", "84.8", "±", "1.2"]
    assert lines[en + 3].split() == ["judge-b", "-", "-", "-", "-", "-"]
    cf = lines.index("Table 3, Bi'anBench_CF")
    assert lines[cf + 2].split() == ["judge-a", "-", "93.9"]
    t17 = lines.index("Table 17, Bi'anBench_EN subsets")
    assert lines[t17 + 1].split() == ["Model", "DROP", "FIB", "Extra", "Average"]  # paper order, others after
    assert lines[t17 + 2].split() == ["judge-a", "83.1", "74.4", "50.0", "84.8"]
    assert "Table 18, Bi'anBench_ZH subsets" not in lines and "Bi'anBench_CF subsets" in lines
    logprob = lines.index("Accuracy of the log-prob verdict (read before the reasoning)")
    assert lines[logprob + 2].split() == ["judge-a", "-", "80.0"]
