"""RAG-RewardBench: preference pairs judged by discriminative, generative and implicit reward models."""
from benchmarks.rag_rewardbench.benchmark import RagRewardBench, RagRewardBenchOptions
from benchmarks.rag_rewardbench.load import BENCHMARK, category, item_id, load_items
from benchmarks.rag_rewardbench.metrics import COLUMN_TITLES, measures, summarize
from benchmarks.rag_rewardbench.requests import (
    JUDGE_SYSTEM,
    JUDGE_USER,
    KINDS,
    ORDERS,
    VERDICT_PREFILL,
    VERDICT_TOKENS,
    expand,
)
from benchmarks.rag_rewardbench.rows import (
    combine,
    implicit_reward,
    logprob_choice,
    parse_choice,
    pick_score,
    preference_margin,
)
from benchmarks.rag_rewardbench.tables import table_html, table_text

__all__ = ["BENCHMARK", "COLUMN_TITLES", "JUDGE_SYSTEM", "JUDGE_USER", "KINDS", "ORDERS", "VERDICT_PREFILL",
           "VERDICT_TOKENS", "RagRewardBench", "RagRewardBenchOptions", "category", "combine", "expand",
           "implicit_reward", "item_id", "load_items", "logprob_choice", "measures", "parse_choice", "pick_score",
           "preference_margin", "summarize", "table_html", "table_text"]
