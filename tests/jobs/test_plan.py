"""`ragjudge plan`: token counts and GPU-hours against hand computations, and the CLI on the 45-RM sweep."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweeps import SAMPLE, write_sweep

from benchmarks import rag_rewardbench as rb
from jobs.config import load_sweep
from jobs.plan import GpuSpec, plan_sweep

ROOT = Path(__file__).resolve().parents[2]


def _sweep(folder: Path, data: str, extra: str = "") -> Path:
    return write_sweep(folder, "plan", [
        '{name: rm, path: "org/remote-rm", kind: discriminative, params_b: 1.0, tensor_parallel_size: 2}',
        '{name: judge, path: "gpt-x", kind: api, engine: http, api_base_env: B, api_key_env: K, max_new_tokens: 9}'],
        data=data, bench_extra=extra)


def test_a_remote_model_is_planned_from_characters_by_hand(tmp_path):
    gpu = GpuSpec(peak_tflops=1000.0, efficiency=0.5, count=4, chars_per_token=4.0, start_s=100.0,
                  load_gb_per_s=2.0)
    rm, judge = plan_sweep(load_sweep(_sweep(tmp_path, str(SAMPLE))), gpu)
    items = [i for i in rb.load_items(str(SAMPLE))]
    chars = sum(len(i["prompt"]) * 2 + len(i["chosen"]) + len(i["reject"]) for i in items)
    assert (rm.requests, rm.prompt_tokens, rm.output_tokens) == (12, int(chars / 4), 0)
    assert rm.flops == 2 * 1e9 * int(chars / 4)
    # compute: flops / (1000 TFLOP/s * 0.5); start: (100 s + 2 GB / 2 GB/s) on each of the 2 TP GPUs.
    assert rm.gpu_hours == pytest.approx(rm.flops / 5e14 / 3600 + 101 * 2 / 3600)
    assert judge.kind == "api" and judge.gpu_hours == 0 and judge.output_tokens == 12 * 10  # 9 + verdict


def test_missing_data_scales_the_plan_sample_to_the_size(tmp_path):
    missing = str(tmp_path / "absent")
    extra = f", size: 600, plan_sample: \"{SAMPLE}\""
    rm, _ = plan_sweep(load_sweep(_sweep(tmp_path, missing, extra)), GpuSpec())
    assert rm.requests == 1200 and "600 items (size)" in rm.items_from
    here, _ = plan_sweep(load_sweep(_sweep(tmp_path / "b", str(SAMPLE))), GpuSpec())
    assert rm.prompt_tokens == pytest.approx(here.prompt_tokens * 100, abs=100)


def test_a_cell_without_data_or_size_is_reported_not_raised(tmp_path):
    plans = plan_sweep(load_sweep(_sweep(tmp_path, str(tmp_path / "absent"))), GpuSpec())
    assert all("not on this machine" in p.problem and "benchmarks.rag_rewardbench.data" in p.problem
               for p in plans)


def test_cli_plans_the_45_model_sweep_and_lists_the_registry():
    out = subprocess.run([sys.executable, "-m", "jobs", "plan", "conf/sweeps/rag_rewardbench_45.yaml", "--gpus", "8"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("rag_rewardbench x ")]
    assert len(rows) == 45 and not any("cannot plan" in r for r in rows)
    assert "Total:" in out and "on 8 GPUs" in out and "1485 items (size)" in out
    listing = subprocess.run([sys.executable, "-m", "jobs", "models"], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout
    assert len(listing.splitlines()) >= 2 + 45 + 9 and "smollm2_judge" in listing
