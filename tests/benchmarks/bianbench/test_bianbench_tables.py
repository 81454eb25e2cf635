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
