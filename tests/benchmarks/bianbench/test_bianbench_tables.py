"""Bi'anBench tables: Tables 2, 3, 17 and 18 of the paper laid out from metrics.json."""
import re

from bianbench_cases import BIAN


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
    text = BIAN.table_text([full, {"model": "judge-b", "splits": {}}])
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


# Issue 64: the whole text, laid out by hand: three models (one without a name, one without any split) in the
# input's order; a custom config in the title; EN subsets in the paper's order ("drop" matched ignoring case),
# the others by task (qa, translation, then an unknown task) and name; a split the paper lacks ("xx") last.
TABLE_INPUT = [
    {"model": "judge-a", "config": "my_bian", "splits": {
        "en": {"avg": 0.848, "avg_std": 0.012, "tasks": {"qa": 0.866, "summarization": 0.755, "translation": 0.5},
               "tasks_std": {"qa": 0.01, "summarization": None, "translation": 0.0},
               "error_rate": 0.02, "text_accuracy": 0.848, "logprob_accuracy": None,
               "subsets": {"Extra": {"task": "qa", "accuracy": 0.5}, "drop": {"task": "qa", "accuracy": 0.831},
                           "FIB": {"task": "summarization", "accuracy": 0.744},
                           "HaluEval_qa": {"task": "qa", "accuracy": 1.0},
                           "Aaa": {"task": "translation", "accuracy": 0.25}, "Zed": {"task": "other", "accuracy": 0.0},
                           "Bbb": {"task": "translation", "accuracy": 0.125}}},
        "cf": {"avg": 0.9, "avg_std": None, "tasks": {"qa": 0.9}, "tasks_std": {"qa": None},
               "languages": {"zh": {"avg": 0.939, "std": None}, "en": {"avg": 0.8, "std": 0.05}},
               "error_rate": 0.0, "text_accuracy": 0.9, "logprob_accuracy": 0.8,
               "subsets": {"WebQA1.0": {"task": "qa", "accuracy": 0.939}}}}},
    {"model": "", "splits": {
        "zh": {"avg": 0.7, "avg_std": 0.1, "tasks": {"qa": 0.6, "translation": 0.8},
               "tasks_std": {"qa": 0.2, "translation": None},
               "error_rate": None, "text_accuracy": 0.7, "logprob_accuracy": 0.65,
               "subsets": {"WebCPM-LFQA": {"task": "qa", "accuracy": 0.6}, "CRUD_MDQA": {"task": "qa", "accuracy": 0.55},
                           "WMT21": {"task": "translation", "accuracy": 0.8}}},
        "xx": {"avg": 0.3, "avg_std": None, "tasks": {}, "tasks_std": {}, "error_rate": 0.5,
               "subsets": {"S2": {"task": "qa", "accuracy": 0.3}, "S1": {"task": "qa", "accuracy": 0.2}}}}},
    {"model": "judge-c"},
]

TABLE_EXPECTED = """\
bianbench, my_bian (Bi'anBench): accuracy %, mean ± std over runs. Task = mean of its subsets; Avg. = mean of \
all the split's subsets (not of the tasks).

Table 2, Bi'anBench_EN
Model            QA  Summarization  Data-to-Text  Machine Translation        Avg.
judge-a  86.6 ± 1.0           75.5             -           50.0 ± 0.0  84.8 ± 1.2
?                 -              -             -                    -           -
judge-c           -              -             -                    -           -

Table 2, Bi'anBench_ZH
Model             QA  Summarization  Machine Translation         Avg.
judge-a            -              -                    -            -
?        60.0 ± 20.0              -                 80.0  70.0 ± 10.0
judge-c            -              -                    -            -

Table 3, Bi'anBench_CF
Model            EN    ZH
judge-a  80.0 ± 5.0  93.9
?                 -     -
judge-c           -     -

Table 17, Bi'anBench_EN subsets
Model    HaluEval_qa  drop   FIB  Extra   Aaa   Bbb  Zed  Average
judge-a        100.0  83.1  74.4   50.0  25.0  12.5  0.0     84.8
?                  -     -     -      -     -     -    -        -
judge-c            -     -     -      -     -     -    -        -

Table 18, Bi'anBench_ZH subsets
Model    CRUD_MDQA  WebCPM-LFQA  WMT21  Average
judge-a          -            -      -        -
?             55.0         60.0   80.0     70.0
judge-c          -            -      -        -

Bi'anBench_CF subsets
Model    WebQA1.0  Average
judge-a      93.9     90.0
?               -        -
judge-c         -        -

Bi'anBench_XX subsets
Model      S1    S2  Average
judge-a     -     -        -
?        20.0  30.0     30.0
judge-c     -     -        -

ERROR rate (verdict not parsed from the text, % of scored rows)
Model     EN  ZH   CF    XX
judge-a  2.0   -  0.0     -
?          -   -    -  50.0
judge-c    -   -    -     -

Accuracy of the verdict parsed from the text (paper protocol)
Model      EN    ZH    CF  XX
judge-a  84.8     -  90.0   -
?           -  70.0     -   -
judge-c     -     -     -   -

Accuracy of the log-prob verdict (read before the reasoning)
Model    EN    ZH    CF  XX
judge-a   -     -  80.0   -
?         -  65.0     -   -
judge-c   -     -     -   -"""


def test_the_whole_table_text_of_three_models_matches_the_hand_laid_out_text():
    assert BIAN.table_text(TABLE_INPUT) == TABLE_EXPECTED


def test_a_run_of_the_benchmarks_own_config_with_no_splits_prints_only_the_empty_tables():
    assert BIAN.table_text([{"model": "m", "config": "bianbench"}]) == """\
Bi'anBench: accuracy %, mean ± std over runs. Task = mean of its subsets; Avg. = mean of all the split's subsets \
(not of the tasks).

Table 2, Bi'anBench_EN
Model  QA  Summarization  Data-to-Text  Machine Translation  Avg.
m       -              -             -                    -     -

Table 2, Bi'anBench_ZH
Model  QA  Summarization  Machine Translation  Avg.
m       -              -                    -     -

Table 3, Bi'anBench_CF
Model  EN  ZH
m       -   -

ERROR rate (verdict not parsed from the text, % of scored rows)
Model
m

Accuracy of the verdict parsed from the text (paper protocol)
Model
m

Accuracy of the log-prob verdict (read before the reasoning)
Model
m"""
