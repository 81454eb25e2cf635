"""mtRAG retrieval: the benchmark class, its options, and the scorer other code cuts rankings with."""
from benchmarks.mtrag.retrieval.benchmark import MtragRetrieval
from benchmarks.mtrag.retrieval.options import REWRITE_PROMPT, Options
from benchmarks.mtrag.retrieval.scoring import K_VALUES, MEASURES, trec_order

__all__ = ["K_VALUES", "MEASURES", "REWRITE_PROMPT", "MtragRetrieval", "Options", "trec_order"]
