"""Utility judgments (seeds/utility_judgments.txt; docs/protocols.md 4 and 5): the benchmark class and the
public names tests and users need. The protocol is described in benchmark.py; gtu.py covers the GTU answer
round."""
from benchmarks.utility.benchmark import UtilityJudgments
from benchmarks.utility.load import item_id
from benchmarks.utility.metrics import k_sampling_evidence, top_m
from benchmarks.utility.options import BENCHMARK, Condition, Options
from benchmarks.utility.prompts import answer_prompt
from benchmarks.utility.requests import shuffles

__all__ = [
    "BENCHMARK",
    "Condition",
    "Options",
    "UtilityJudgments",
    "answer_prompt",
    "item_id",
    "k_sampling_evidence",
    "shuffles",
    "top_m",
]
