"""Compare every metrics.json of two runs key by key: `python scripts/same_metrics.py ROOT_A/RUN ROOT_B/RUN`.

For a refactor that must not change a number (the demo before and after): times, throughputs and index
build details differ from run to run and are left out; file paths are compared relative to each run's
project (the part after the last `/data/`). Prints each difference and exits 1 if there is one.
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

VARYING = {"seconds", "queries_per_s", "build_seconds", "encode_seconds", "step_seconds", "graph_seconds",
           "built", "built_with", "cache", "started_at", "finished_at"}
_PROJECT_PATH = re.compile(r"/\S*/(data/)")


def _normal(value):
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        return _PROJECT_PATH.sub(r"\1", value)
    return value


def differences(a, b, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in {'first' if k in a else 'second'}" for k in sorted(set(a) ^ set(b))]
        return out + [d for k in sorted(set(a) & set(b)) for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    same = a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return [] if same else [f"{where}: {a!r} != {b!r}"]


def run_differences(first: str | Path, second: str | Path) -> tuple[int, list[str]]:
    """(metrics.json files compared, every difference between the two runs' files, named by file and key)."""
    files = {p.relative_to(first): p for p in Path(first).glob("metrics/**/metrics.json")}
    others = {p.relative_to(second): p for p in Path(second).glob("metrics/**/metrics.json")}
    problems = [f"{name}: only in {first if name in files else second}" for name in sorted(set(files) ^ set(others))]
    for name in sorted(set(files) & set(others)):
        problems += [f"{name}{d}" for d in differences(_normal(json.loads(files[name].read_text())),
                                                       _normal(json.loads(others[name].read_text())))]
    return len(files), problems


def main(first: str, second: str) -> int:
    count, problems = run_differences(first, second)
    print("\n".join(problems) or f"{count} metrics.json files, every key equal")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
