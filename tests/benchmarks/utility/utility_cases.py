"""Shared by the utility-judgment tests: the benchmark, options typed as a config's would be, the two released
GTI rows (data/utility, bundled: data/README.md)."""
import json
from pathlib import Path
from typing import Any

from benchmarks.options import typed_options
from benchmarks.utility import Options, UtilityJudgments

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "data" / "utility" / "candidate_passages.jsonl"
BENCH = UtilityJudgments()


def opts(**raw: Any) -> Options:
    """Options from a config's mapping, as jobs/ types them."""
    return typed_options(Options, raw)


def real_items() -> list[dict[str, Any]]:
    return list(BENCH.load_items(str(REAL)))


def user(request: dict[str, Any]) -> str:
    return request["messages"][-1]["content"]


def write_jsonl(path: Path, rows: list[Any]) -> str:
    """Rows (or raw lines) as a JSONL file; its path."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)
