"""`ragjudge plan`: token counts and GPU-hours against hand computations, and the CLI on the 45-RM sweep."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweeps import SAMPLE, write_sweep

from benchmarks import rag_rewardbench as rb
from benchmarks.rag_rewardbench import synthetic
from jobs.cli import main
from jobs.engines.base import engines
from jobs.loading import load_sweep
from jobs.plan.estimate import GpuSpec, format_plan, plan_schedule, plan_sweep

ROOT = Path(__file__).resolve().parents[3]


def _sweep(folder: Path, data: str, extra: str = "") -> Path:
    return write_sweep(folder, "plan", [
        '{name: rm, path: "org/remote-rm", kind: discriminative, params_b: 1.0, tensor_parallel_size: 2}',
        '{name: judge, path: "gpt-x", kind: api, engine: http, api: {base_env: B, key_env: K}, max_new_tokens: 9}'],
        data=data, bench_extra=extra)


def test_a_remote_model_is_planned_from_characters_by_hand(tmp_path):
    gpu = GpuSpec(peak_tflops=1000.0, efficiency=0.5, count=4, chars_per_token=4.0, start_s=100.0,
                  compile_s=30.0, load_gb_per_s=2.0)
    rm, judge = plan_sweep(load_sweep(_sweep(tmp_path, str(SAMPLE))), gpu)
    items = [i for i in rb.load_items(str(SAMPLE))]
    chars = sum(len(i["prompt"]) * 2 + len(i["chosen"]) + len(i["reject"]) for i in items)
    assert (rm.requests, rm.prompt_tokens, rm.output_tokens) == (12, int(chars / 4), 0)
    assert rm.flops == 2 * 1e9 * int(chars / 4)
    # compute: flops / (1000 TFLOP/s * 0.5); the engine's start, once: 100 s + 30 s of vLLM compilation +
    # 2 GB / 2 GB/s, on 2 TP GPUs.
    assert rm.gpu_hours == pytest.approx(rm.flops / 5e14 / 3600)
    assert (rm.start_s, rm.gpus) == (131.0, 2)
    assert judge.kind == "api" and judge.gpu_hours == 0 and judge.output_tokens == 12 * 10  # 9 + verdict
    plan = plan_schedule([rm, judge], gpu)  # one engine (the API judge has none), alone on a node of 4
    assert [(p.job.name, p.node, p.begin_s) for p in plan.placements] == [("rm", 0, 0.0)]
    assert plan.makespan_s == pytest.approx(131 + rm.gpu_hours * 3600 / 2)
    assert plan.start_gpu_s == 262.0 and plan.lower_bound_s == pytest.approx(plan.busy_gpu_s / 4)


def test_an_engine_that_does_not_compile_starts_without_the_compile_time(tmp_path):
    # vLLM with vllm.enforce_eager skips torch.compile and CUDA graphs; the transformers engine has neither.
    gpu = GpuSpec(start_s=50.0, compile_s=40.0, load_gb_per_s=4.0)
    sweep = write_sweep(tmp_path, "starts", [
        '{name: compiled, path: "org/a", kind: discriminative, params_b: 8.0}',
        '{name: eager, path: "org/b", kind: discriminative, params_b: 8.0, vllm: {enforce_eager: true}}',
        '{name: plain, path: "org/c", kind: discriminative, params_b: 8.0, engine: transformers}'])
    starts = {p.model: p.start_s for p in plan_sweep(load_sweep(sweep), gpu)}
    assert starts == {"compiled": 50 + 40 + 16 / 4, "eager": 50 + 16 / 4, "plain": 50 + 16 / 4}


def test_engines_on_cpu_are_counted_once_each_at_the_measured_start(tmp_path):
    # v1 and v2 would build the same vLLM engine (only a request setting differs): one start between them
    sweep = write_sweep(tmp_path, "cpu", [
        '{name: t, path: "org/a", kind: discriminative, engine: transformers}',
        '{name: v1, path: "org/b", kind: implicit, engine: vllm, vllm: {enforce_eager: true}}',
        '{name: v2, path: "org/b", kind: implicit, engine: vllm, vllm: {enforce_eager: true}, batch_size: 2}',
        '{name: gpu, path: "org/c", kind: discriminative, params_b: 8.0, num_gpus: 1}'])
    plans = plan_sweep(load_sweep(sweep), GpuSpec())
    transformers, vllm = engines()["transformers"].cpu_start_s, engines()["vllm"].cpu_start_s
    assert {p.model: p.cpu_start_s for p in plans} == {"t": transformers, "v1": vllm, "v2": vllm, "gpu": 0.0}
    line = next(line for line in format_plan(plans, GpuSpec()).splitlines() if line.startswith("On CPU"))
    assert f"2 engine starts, {(transformers + vllm) / 60:.1f} min" in line


def test_missing_data_scales_the_plan_sample_to_the_size(tmp_path):
    missing = str(tmp_path / "absent")
    extra = f", size: 600, plan_sample: \"{SAMPLE}\""
    rm, _ = plan_sweep(load_sweep(_sweep(tmp_path, missing, extra)), GpuSpec())
    assert rm.requests == 1200 and "600 items (size)" in rm.items_from
    here, _ = plan_sweep(load_sweep(_sweep(tmp_path / "b", str(SAMPLE))), GpuSpec())
    assert rm.prompt_tokens == pytest.approx(here.prompt_tokens * 100, abs=100)


def test_missing_data_without_a_plan_sample_takes_table4_lengths_from_synthetic_pairs(tmp_path):
    rm, judge = plan_sweep(load_sweep(_sweep(tmp_path, str(tmp_path / "absent"), ", size: 1485")), GpuSpec())
    assert rm.requests == 2 * 1485 and "synthetic pairs with Table 4" in rm.items_from
    # A scorer reads each pair's prompt twice, with each response: sum of n x (2 prompt + chosen + rejected)
    # over Table 4's rows, in characters / 4, within 0.5% (each text is cut between words).
    table4 = sum(s.n * (2 * s.prompt + s.chosen + s.rejected) for s in synthetic.table4())
    assert rm.prompt_tokens == pytest.approx(table4, rel=0.005)
    assert judge.prompt_tokens > table4 / 2  # both orders of prompt + chosen + rejected, and the judge prompt


def test_a_cell_without_data_or_plan_sample_is_reported_not_raised(tmp_path):
    # Bi'anBench has no synthetic shape of its own (plan_items is None), so it needs `size` and `plan_sample`;
    # without `size` the missing path is refused when the sweep loads (tests/jobs/loading/test_load_checks.py).
    path = tmp_path / "conf" / "sweeps" / "plan.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(f"""name: plan
benchmarks:
  - {{name: bianbench, module: bianbench, data: ["{tmp_path / 'absent'}"], size: 100}}
models:
  - {{name: judge, path: "gpt-x", kind: api, engine: http, api: {{base_env: B, key_env: K}}}}
storage: {{run: plan}}
""")
    plans = plan_sweep(load_sweep(path), GpuSpec())
    assert len(plans) == 1
    assert "not on this machine" in plans[0].problem and "benchmarks.bianbench.data" in plans[0].problem


@pytest.mark.integration
def test_cli_plans_the_45_model_sweep_and_lists_the_registry():
    out = subprocess.run([sys.executable, "-m", "jobs", "plan", "conf/sweeps/rag_rewardbench_45.yaml", "--gpus", "8"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("rag_rewardbench x ")]
    assert len(rows) == 45 and not any("cannot plan" in r for r in rows)
    assert "Total:" in out and "on 8 GPUs" in out and "1485 items (size)" in out
    assert "synthetic pairs with Table 4" in out and "of GPU-hours in starts" in out
    assert "Makespan on 8 GPUs (1 node of 8)" in out and "lower bound (GPU-hours / 8)" in out
    assert "longest single engine" in out and "(37 starts, one per engine" in out  # 45 less 8 API judges
    free = subprocess.run([sys.executable, "-m", "jobs", "plan", "conf/sweeps/rag_rewardbench_45.yaml", "--start-s",
                           "0", "--compile-s", "0", "--load-gb-per-s", "1e12"], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout  # the start flags reach the plan: starts cost nothing
    assert " + 0.0 engine starts " in free and "= 0.0% of GPU-hours in starts" in free
    listing = subprocess.run([sys.executable, "-m", "jobs", "models"], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout
    assert len(listing.splitlines()) >= 2 + 45 + 9 and "smollm2_judge" in listing


def test_hub_data_is_planned_from_the_cache_and_never_fetched(tmp_path, monkeypatch):
    from hub_cache import cache_repo, offline_hub_cache

    cache = offline_hub_cache(tmp_path, monkeypatch)
    url = "hf://datasets/owner/pairs"
    sweep = load_sweep(_sweep(tmp_path, url, ", size: 1485"))
    assert sweep.benchmarks["rag_rewardbench"].data == [url]  # kept as written: fetched when the sweep runs
    rm, _ = plan_sweep(sweep, GpuSpec())
    assert "synthetic pairs with Table 4" in rm.items_from  # not cached: planned without it
    cache_repo(cache, "owner/pairs", {"pairs.jsonl": SAMPLE.read_bytes()})
    rm, _ = plan_sweep(sweep, GpuSpec())
    assert rm.requests == 12 and "6 items from the data" in rm.items_from


def test_api_judges_are_priced_at_list_and_batch_from_the_price_table_by_hand():
    from jobs.plan.estimate import CellPlan
    from jobs.plan.prices import api_cost_lines, load_prices

    table = load_prices()  # conf/prices.yaml: gpt-4o $2.50/$10.00 list, $1.25/$5.00 batch; claude-3.5-haiku
    # $0.80/$4.00 list, $0.40/$2.00 batch (per 1M tokens)

    def cell(model: str, path: str, prompt: int, output: int, batch: bool) -> CellPlan:
        return CellPlan("bench", model, "api", 10, prompt, output, 0.0, 0.0, "chars/4", "", path=path, batch=batch,
                        remote=True)

    lines = api_cost_lines([cell("gpt", "gpt-4o", 2_000_000, 100_000, False),
                            cell("haiku", "claude-3-5-haiku-20241022", 1_000_000, 1_000_000, True),
                            cell("mine", "my-own-model", 5, 5, False)], table)
    assert lines[1:] == [
        "  bench x gpt: list $6.00, batch $3.00 (its engine pays list)",  # 2 x 2.50 + 0.1 x 10.00; halved
        "  bench x haiku: list $4.80, batch $2.40 (its engine pays batch)",  # 0.80 + 4.00; 0.40 + 2.00
        "  total: list $10.80, batch $5.40",
        "  no price in conf/prices.yaml for: mine (my-own-model)"]
    assert lines[0].startswith(f"API dollars (conf/prices.yaml, prices read {table.read}; ")


def test_plan_prints_each_api_judges_dollars_and_which_price_its_engine_pays(tmp_path):
    sweep = write_sweep(tmp_path, "priced", [
        '{name: list_judge, path: "gpt-4o", kind: api, engine: http, api: {base_env: B, key_env: K}}',
        '{name: batch_judge, path: "gpt-4o", kind: api, engine: openai_batch, api: {base_env: B, key_env: K}}'],
        data=str(SAMPLE))
    gpu = GpuSpec()
    plans = plan_sweep(load_sweep(sweep), gpu)
    assert [(p.path, p.batch) for p in plans] == [("gpt-4o", False), ("gpt-4o", True)]
    p = plans[0]
    list_, batch = (p.prompt_tokens * 2.50 + p.output_tokens * 10.00) / 1e6, (
        p.prompt_tokens * 1.25 + p.output_tokens * 5.00) / 1e6
    text = format_plan(plans, gpu)
    assert f"  rag_rewardbench x list_judge: list ${list_:.4f}, batch ${batch:.4f} (its engine pays list)" in text
    assert f"  rag_rewardbench x batch_judge: list ${list_:.4f}, batch ${batch:.4f} (its engine pays batch)" in text


def test_the_plan_says_what_each_hub_repository_costs_to_download_and_what_is_cached(tmp_path, monkeypatch, capsys):
    from hub_cache import cache_repo, offline_hub_cache

    from jobs.cli import main

    cache = offline_hub_cache(tmp_path, monkeypatch)  # a plan never asks the Hub: only the cache is read
    cache_repo(cache, "org/here", {"config.json": b"{}", "model.safetensors": b"x" * 2998}, repo_type="model")
    sweep = write_sweep(tmp_path, "weights", [
        '{name: rm, path: "org/remote-rm", kind: discriminative, params_b: 1.0}',  # float32: 4 bytes a parameter
        '{name: rm_bf16, path: "org/bf", kind: discriminative, params_b: 2.5, dtype: bfloat16}',
        '{name: here, path: "org/here", kind: discriminative, params_b: 70.0, dtype: bfloat16}',
        '{name: policy, path: "org/bf", kind: implicit, params_b: 2.5, dtype: bfloat16, reference: "org/ref"}',
        '{name: judge, path: "gpt-x", kind: api, engine: http, api: {base_env: B, key_env: K}}'], data=str(SAMPLE))
    assert main(["plan", str(sweep), "--download-mb-per-s", "50"]) == 0
    out = capsys.readouterr().out
    # 1e9 x 4 = 4.0 GB: 80 s at 50 MB/s; 2.5e9 x 2 = 5.0 GB: 100 s, once for both of its users; the reference at
    # its model's size, 5.0 GB; org/here cached (3,000 bytes): 14.0 GB in 3 repositories, 280 s = 0.08 h.
    assert "at 50 MB/s (--download-mb-per-s):" in out
    assert "  org/remote-rm " in out and " 4.00 GB     1.3 min  params_b 1 x 4 bytes (float32)" in out
    assert " 5.00 GB     1.7 min  params_b 2.5 x 2 bytes (bfloat16)" in out
    weights = out.split("Weights from the Hugging Face Hub")[1]
    assert [line.split()[0] for line in weights.splitlines() if line.startswith("  org/")] == [
        "org/remote-rm", "org/bf", "org/here", "org/ref"]
    assert "  org/here " in out and "3.0 kB      cached  in the cache, commit " in out
    assert ("Download: 14.0 GB for 3 of the 4 hub repositories, not cached (1 cached, 0 of unknown size) at 50 MB/s: "
            "0.08 h, not in the GPU-hours above (the first engine waits for its own weights).") in out
    assert "The downloads take longer than the makespan" in out  # 280 s against 5 tiny engines


def test_without_an_efficiency_each_model_gets_the_one_measured_for_its_kind_and_size():
    from jobs.plan.estimate import measured_efficiency

    # the measured points themselves, flat beyond them, and halfway on log(size) between two of them
    assert measured_efficiency("discriminative", 8.03) == 0.617 and measured_efficiency("implicit", 70.55) == 0.622
    assert measured_efficiency("discriminative", 0.5) == 0.553 and measured_efficiency("implicit", 405) == 0.622
    assert measured_efficiency("generative", 8.03) == 0.617  # prefill-bound judges: the scorers' curve
    middle = (1.78 * 8.03) ** 0.5
    assert measured_efficiency("implicit", middle) == pytest.approx((0.426 + 0.564) / 2)


def test_the_plan_divides_each_cells_flops_by_its_models_measured_efficiency(tmp_path):
    from jobs.plan.estimate import measured_efficiency

    sweep = write_sweep(tmp_path, "sizes", [
        '{name: small, path: "org/a", kind: implicit, params_b: 2.0}',
        '{name: large, path: "org/b", kind: discriminative, params_b: 70.0}'])
    gpu = GpuSpec(peak_tflops=1000.0)
    for p in plan_sweep(load_sweep(sweep), gpu):
        expected = measured_efficiency(p.kind, 2.0 if p.model == "small" else 70.0)
        assert p.gpu_hours == pytest.approx(p.flops / (1e15 * expected) / 3600)
    assert "the share measured for each model's kind and size" in format_plan(plan_sweep(load_sweep(sweep), gpu), gpu)


def test_plan_says_which_models_it_counted_in_characters_and_why(tmp_path, capsys):
    missing = tmp_path / "weights" / "rm-8b"  # a local folder that is not there
    sweep = write_sweep(tmp_path, "guess", [
        f'{{name: local_rm, path: "{missing}", kind: discriminative, params_b: 8.0}}',
        '{name: judge, path: "gpt-x", kind: api, engine: http, api: {base_env: B, key_env: K}}'])
    assert main(["plan", str(sweep)]) == 0
    err = capsys.readouterr().err.splitlines()
    # one line for the model with no folder here; the API judge has no tokenizer to miss
    assert err == [(f"ragjudge plan: local_rm: {missing} is not a folder on this machine; its token counts are "
                   "estimated as characters/4")]


def _two_widths(folder: Path) -> Path:
    # Two 1B scorers on the same 6 pairs, vLLM without compilation: one engine needs 2 GPUs, the other 1.
    return write_sweep(folder, "widths", [
        ('{name: wide, path: "org/wide", kind: discriminative, params_b: 1.0, tensor_parallel_size: 2, '
        'vllm: {enforce_eager: true}}'),
        '{name: narrow, path: "org/narrow", kind: discriminative, params_b: 1.0, vllm: {enforce_eager: true}}'])


# A thousandth of a TFLOP/s, at 100%: a cell's compute is its FLOPs in seconds / 1e9; each start is 360 s + 2 GB
# of weights at 2 GB/s = 361 s.
SLOW_GPU = ["--peak-tflops", "0.001", "--efficiency", "1", "--start-s", "360", "--load-gb-per-s", "2"]


def test_a_model_wider_than_the_gpus_fails_the_plan_naming_it_and_the_totals_leave_it_out(tmp_path, capsys):
    sweep = _two_widths(tmp_path)
    chars = sum(len(i["prompt"]) * 2 + len(i["chosen"]) + len(i["reject"]) for i in rb.load_items(str(SAMPLE)))
    compute_h = 2 * 1e9 * int(chars / 4) / 1e9 / 3600  # each model's cell: 2 x params x tokens at 1e9 FLOP/s
    assert main(["plan", str(sweep), "--gpus", "1", *SLOW_GPU]) == 1
    out, err = capsys.readouterr()
    # Only `narrow` is placed: its compute and its one start on 1 GPU; `wide`'s equal compute is not added.
    total = compute_h + 361 / 3600
    assert (f"Total of 1 placed engine (1 left out: cannot be placed, below): {total:.1f} GPU-hours on H100-SXM "
            f"(100% of 0.001 TFLOP/s): {compute_h:.1f} compute + {361 / 3600:.1f} engine starts (1 starts") in out
    assert f"Makespan on 1 GPU (1 node of 1): {(361 + compute_h * 3600) / 3600:.2f} h;" in out
    cannot = ("Cannot place wide: it needs 2 GPUs on one node (its tensor-parallel group), and the largest node here "
              "has 1 (--gpus 1, --node-gpus 8); plan with --gpus and --node-gpus of 2 or more.")
    assert cannot in out.splitlines()
    assert [line for line in err.splitlines() if "Cannot place" in line] == [f"ragjudge plan: {cannot}"]

    # On 2 GPUs both are placed: both computes, and wide's start on both of its GPUs.
    assert main(["plan", str(sweep), "--gpus", "2", *SLOW_GPU]) == 0
    out, err = capsys.readouterr()
    starts = (2 * 361 + 361) / 3600
    assert (f"Total: {2 * compute_h + starts:.1f} GPU-hours on H100-SXM (100% of 0.001 TFLOP/s): "
            f"{2 * compute_h:.1f} compute + {starts:.1f} engine starts (2 starts") in out
    # narrow (the longer: all of its work on one GPU) from 0; wide waits for both GPUs, then runs half as long.
    assert f"Makespan on 2 GPUs (1 node of 2): {(361 + compute_h * 3600 + 361 + compute_h * 1800) / 3600:.2f} h;" in out
    assert "Cannot place" not in out + err


@pytest.mark.parametrize("flags,line", [
    (["--gpus", "0"], "ragjudge: --gpus 0: give a whole number of GPUs, 1 or more"),
    (["--gpus", "-4"], "ragjudge: --gpus -4: give a whole number of GPUs, 1 or more"),
    (["--node-gpus", "0"], "ragjudge: --node-gpus 0: give a whole number of GPUs, 1 or more"),
    (["--efficiency", "0"], "ragjudge: --efficiency 0: give a number above 0"),
])
def test_a_gpu_count_below_one_is_one_line(tmp_path, capsys, flags, line):
    assert main(["plan", str(_two_widths(tmp_path)), *flags]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [line] and out == ""


@pytest.mark.parametrize("reasoning, asks, extra_output", [
    ("{budget_tokens: 64}", 2, 64),  # the trace up to its budget, then the answer after it closed
    ("{budget_tokens: 64}, verdict: logprob", 3, 64 + 2),  # and one token and a verdict after the trace
    ("true, verdict: logprob", 2, 2),
])
def test_a_thinking_judges_rounds_are_planned_as_if_every_trace_took_its_budget(tmp_path, reasoning, asks,
                                                                               extra_output):
    gpu = GpuSpec(peak_tflops=1000.0, efficiency=0.5, count=4, chars_per_token=4.0, start_s=100.0,
                  compile_s=30.0, load_gb_per_s=2.0)

    def planned(extra: str):
        sweep = write_sweep(tmp_path, "think", [
            '{name: judge, path: "org/remote-judge", kind: generative, params_b: 1.0, max_new_tokens: 9' + extra + "}"],
            data=str(SAMPLE))
        [plan] = plan_sweep(load_sweep(sweep), gpu)
        return plan

    plain, thinking = planned(""), planned(f", reasoning: {reasoning}")
    budget = 64 if "budget" in reasoning else 0
    assert (plain.requests, plain.output_tokens) == (12, 12 * 10)  # 9 + the verdict after the prompt
    assert thinking.requests == 12 * asks
    assert thinking.prompt_tokens == plain.prompt_tokens * asks + 12 * (asks - 1) * budget
    assert thinking.output_tokens == 12 * (10 + extra_output)
