"""What is measured: loaders, request expansion, prompts, parsers and metrics. Pure Python, no Ray, no models.

A benchmark is one module here exposing load_items, expand, combine, measures and summarize.
"""
import importlib
from types import ModuleType


def benchmark_module(name: str) -> ModuleType:
    """benchmarks.<name>, the one module a benchmark consists of."""
    return importlib.import_module(f"{__name__}.{name}")
