"""Bi'anBench: RAG hallucination detection judged PASS / FAIL (seeds/bian_hallucination.txt,
docs/protocols.md 2).

The registry loads `BianBench`; the names below are what tests and users (e.g. the judge ensemble) need.
`measures`, `group_key`, `row_key`, `summarize` and `table_text` are also here as functions so that callers
that still take a benchmark module (jobs.flow.reducers.aggregate through `ragjudge aggregate`) keep working.
"""
from benchmarks.bianbench.benchmark import BianBench
from benchmarks.bianbench.fields import BENCHMARK, KINDS, LABELS, LANGUAGES, SPLITS, TASKS, task_name
from benchmarks.bianbench.load import load_items
from benchmarks.bianbench.metrics import group_key, measures, row_key, summarize
from benchmarks.bianbench.options import Options, TaskTemplates, Templates
from benchmarks.bianbench.parsing import logprob_verdict, parse_reasoning, parse_verdict
from benchmarks.bianbench.prompts import PAPER_PROMPTS, prompt, templates_in_force
from benchmarks.bianbench.requests import VERDICT_CANDIDATES, VERDICT_PREFILL
from benchmarks.bianbench.rows import ensemble
from benchmarks.bianbench.tables import PAPER_SUBSETS, TABLE2_TASKS, table_text

__all__ = ["BENCHMARK", "KINDS", "LABELS", "LANGUAGES", "PAPER_PROMPTS", "PAPER_SUBSETS", "SPLITS", "TABLE2_TASKS",
           "TASKS", "VERDICT_CANDIDATES", "VERDICT_PREFILL", "BianBench", "Options", "TaskTemplates", "Templates",
           "ensemble", "group_key", "load_items", "logprob_verdict", "measures", "parse_reasoning", "parse_verdict",
           "prompt", "row_key", "summarize", "table_text", "task_name", "templates_in_force"]
