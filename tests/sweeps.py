"""Sweep files for tests, written into a conf/sweeps/ folder as load_sweep expects them."""
from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "rag_rewardbench_appendix_d.jsonl"


def write_sweep(folder: Path, name: str, models: list[str], storage: str = "", data: str | Path = SAMPLE,
                bench_extra: str = "") -> Path:
    """A one-benchmark RAG-RewardBench sweep; `models` are YAML flow mappings, `storage` the inside of one."""
    path = folder / "conf" / "sweeps" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}", "benchmarks:",
             f'  - {{name: rag_rewardbench, module: rag_rewardbench, data: ["{data}"]{bench_extra}}}', "models:"]
    lines += [f"  - {model}" for model in models]
    lines.append(f"storage: {{run: {name}{', ' + storage if storage else ''}}}")
    path.write_text("\n".join(lines) + "\n")
    return path
