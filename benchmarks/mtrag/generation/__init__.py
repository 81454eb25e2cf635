"""mtRAG generation: the benchmark class, its options, and the per-response scores other code reads."""
from benchmarks.mtrag.generation.benchmark import MtragGeneration
from benchmarks.mtrag.generation.options import BertScore, Judges, MaxTokens, Options, Prompts
from benchmarks.mtrag.generation.requests import request_id
from benchmarks.mtrag.generation.summary import METRICS

__all__ = ["METRICS", "BertScore", "Judges", "MaxTokens", "MtragGeneration", "Options", "Prompts",
           "request_id"]
