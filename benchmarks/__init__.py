"""What is measured: loaders, request expansion, prompts, parsers and metrics. Pure Python, no Ray, no models.

A benchmark is one module here exposing load_items, expand, combine, measures, summarize and table_text
(KINDS names the model kinds it has a protocol for). Optional: check_options(options) and
check_items(items, options) (problems that fail a cell before an engine starts), group_key / row_key (see
jobs.reducers), and followup(item, answers, kind, options) for protocols with rounds (generate, then judge):
it returns the requests the answers so far make possible, and the pipeline answers rounds until it returns
no request without an answer. A request's `route` names the judge model that answers it ("self" or none: the
cell's model), and routes(options) lists those judges so the pipeline can find them before it starts. An
encoder stage (BERTScore) is asked for with text_pair_encoder(options) (its settings, or None),
text_pairs(item, row, options) (the pairs a row needs) and add_text_pair_scores(row, scores, encoder label).
"""
import importlib
from types import ModuleType


def benchmark_module(name: str) -> ModuleType:
    """benchmarks.<name>, the one module a benchmark consists of."""
    return importlib.import_module(f"{__name__}.{name}")
