"""Bi'anBench loading (docs/protocols.md 2, Table 10's schema): the bundled sample, bad rows, splits from file
names."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from bianbench_cases import BIAN, SAMPLE, qa_row, write_jsonl


def test_sample_file_is_the_four_table10_examples():
    items = list(BIAN.load_items(SAMPLE))
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
    items = list(BIAN.load_items(path))
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
    items = sorted(BIAN.load_items(str(tmp_path)), key=lambda i: i["item_id"])
    assert [(i["item_id"], i["language"], i["task"], i["error"]) for i in items] == [
        ("bianbench/cf/c1", "en", "translation", None), ("bianbench/cf/c2", "en", "summarization", None),
        ("bianbench/zh/1", "zh", "qa", None)]
    assert items[1]["context"] == "doc one\n\ndoc two" and items[0]["type"] == "en2zh"
