"""A SYNTHETIC run root for the report's tests, perf/report_45_models.py, perf/report_viewer_load.py and
docs/report_screenshot.py: made-up models with made-up skills and made-up answers, RAG-RewardBench's and
Bi'anBench's rows made from them by their own combine(), stored through the same RunRoot calls the pipeline
makes (write_rows, write_json of metrics.json and manifest.json). No number here is a result."""
from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.protocol import benchmark
from benchmarks.rag_rewardbench.requests import ORDERS
from jobs.flow.reducers import aggregate
from jobs.store.run_root import RunRoot

RRB_CATEGORIES = ("helpful", "reason", "citation", "harmless", "abstain", "conflict")
AUTHORS = ("gpt-4o-2024-08-06", "Llama-3.1-8B-Instruct", "Qwen2.5-72B-Instruct", "claude-3-5-haiku-20241022")
ENGINES = {"discriminative": "vllm", "generative": "vllm", "implicit": "transformers"}


def _pick(rng: random.Random, skill: float, chosen_position: int, bias: float) -> int | None:
    if rng.random() < 0.03:
        return None
    if rng.random() < bias:
        return 1
    return chosen_position if rng.random() < skill else 3 - chosen_position


def _scorer_answers(right: bool) -> dict[str, dict[str, Any]]:
    """A scorer's answers to a pair, by variant: 1 for the response it prefers, 0 for the other (as a score, and
    as an implicit RM's mean log-prob)."""
    scores = {"chosen": 1.0 if right else 0.0, "reject": 0.0 if right else 1.0}
    return {side: {"score": score, "logp_mean": score} for side, score in scores.items()}


def _judge_answers(rng: random.Random, p: float) -> dict[str, dict[str, Any]]:
    """A judge's answers to both orders, by variant: its pick as next-token log-probs (none: no verdict), and its
    text, which says the pick unless the judge wrote no readable verdict."""
    logprobs = {1: [-0.1, -3.0], 2: [-3.0, -0.1], None: [None, None]}
    answers = {}
    for order, position in ORDERS.items():
        pick = _pick(rng, p, position, 0.15)
        text_pick = pick if rng.random() > 0.05 else None
        answers[order] = {"candidate_logprobs": logprobs[pick],
                          "text": f"The answer is \"Choose {text_pick}\". " + "x" * 300}
    return answers


def rag_rewardbench_rows(model: str, kind: str, skill: float, items: int, seed: int,
                         pairs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Item rows of a made-up model, made by rag_rewardbench's own combine() from made-up answers: a scorer's
    0/1, a judge's both-order 0/0.5/1; `pairs`: the loaded items the rows are of (id, subset, responses and their
    authors), else made-up ones."""
    spec = benchmark("rag_rewardbench")
    rng = random.Random(seed)
    rows = []
    for i in range(items):
        pair = pairs[i] if pairs else {
            "item_id": f"rag_rewardbench/{i:05d}", "subset": f"{RRB_CATEGORIES[i % 6]}-s{(i // 6) % 3}",
            "chosen": "c" * (100 + i * 37 % 300), "reject": "r" * (100 + i * 53 % 300),
            "chosen_model": AUTHORS[i % 4], "reject_model": AUTHORS[(i + 1) % 4]}
        variants = list(ORDERS) if kind == "generative" else ["chosen", "reject"]
        said: dict[str, dict[str, Any]] = {v: {} for v in variants}
        said[variants[0]]["truncated"] = rng.random() < 0.01
        if rng.random() < 0.005:
            said[variants[0]]["error"] = "synthetic engine error"
        else:
            easy = (i * 7919) % 100 / 100  # items share a difficulty across models, as real pairs do
            p = min(0.98, max(0.02, skill + 0.3 * (easy - 0.5)))
            said = {v: {**said[v], **answer} for v, answer in (
                _judge_answers(rng, p) if kind == "generative" else _scorer_answers(rng.random() < p)).items()}
        answers = [{"request_id": f"{pair['item_id']}#{v}", "item_id": pair["item_id"], "subset": pair["subset"],
                    "variant": v, "n_tokens": 900, "error": None, **said[v]} for v in variants]
        rows.append(spec.combine(pair, answers, kind, spec.Options()))
    return rows


def bianbench_rows(model: str, skill: float, items: int, seed: int, runs: int = 3) -> list[dict[str, Any]]:
    """Rows of a made-up judge, made by bianbench's own combine() from made-up answers: each run's text is a
    JSON verdict, or, now and then, none (ERROR)."""
    spec = benchmark("bianbench")
    options = spec.Options(runs=runs)
    rng = random.Random(seed)
    rows = []
    for i in range(items):
        label = "PASS" if i % 2 else "FAIL"
        item = {"item_id": f"bianbench/en/{i:04d}", "split": "en", "task": "qa", "subset": f"qa-{i % 3}",
                "language": "en", "type": "", "label": label}
        answers = []
        for run in range(runs):
            prediction = "ERROR" if rng.random() < 0.04 else (
                label if rng.random() < skill else ("FAIL" if label == "PASS" else "PASS"))
            text = "no verdict" if prediction == "ERROR" else '{"verdict": "' + prediction + '"}'
            answers.append({"request_id": f"{item['item_id']}#run{run}", "variant": f"run{run}", "text": text,
                            "n_tokens": 40, "error": None})
        rows.extend(spec.combine(item, answers, "generative", options))
    return rows


def build_run(root_uri: str, run: str, models: int = 6, items: int = 120, judges_every: int = 3,
              bianbench_judges: int = 0, seed: int = 0, data: str | None = None, names: Sequence[str] = ()
              ) -> RunRoot:
    """Write a synthetic run: `models` RAG-RewardBench models (every `judges_every`-th a generative judge,
    the rest discriminative), optionally `bianbench_judges` of them also on a small Bi'anBench. `data`: a file
    of RAG-RewardBench pairs whose items the rows are of (`items` is then their number), named in the
    manifest's config as a run's data is. `names`: the models' names, else synthetic-rm-NN."""
    root = RunRoot(root_uri, run)
    pairs = None
    if data:
        pairs = [item for item in benchmark("rag_rewardbench").load_items(data) if not item.get("error")]
        items = len(pairs)
    rng = random.Random(seed)
    cells: dict[str, Any] = {}
    model_config: dict[str, Any] = {}
    start = time.time()
    for m in range(models):
        name = names[m] if names else f"synthetic-rm-{m:02d}"
        kind = "generative" if m % judges_every == judges_every - 1 else "discriminative"
        model_config[name] = {"name": name, "kind": kind, "engine": ENGINES[kind]}
        skill = 0.55 + 0.35 * rng.random()
        cells_rows = {"rag_rewardbench": rag_rewardbench_rows(name, kind, skill, items, seed * 1000 + m, pairs)}
        if kind == "generative" and m // judges_every < bianbench_judges:
            cells_rows["bianbench"] = bianbench_rows(name, skill, max(12, items // 10), seed * 1000 + m)
        for bench, rows in cells_rows.items():
            root.write_rows("predictions", bench, name, rows, part="0")
            metrics = aggregate(benchmark(bench), rows)
            metrics.update(model=name, kind=kind)
            root.write_json(root.metrics_path(bench, name), metrics)
            seconds = 30.0 + 10 * rng.random()
            cells[f"{bench}/{name}"] = {"status": "done", "n": metrics["n"], "n_errors": metrics["n_errors"],
                                        "started_at": start, "finished_at": start + seconds,
                                        "seconds": seconds}
    benchmarks = {b: {"name": b, "module": b, "bootstrap_resamples": 1000}
                  for b in ("rag_rewardbench", "bianbench")}
    if data:
        benchmarks["rag_rewardbench"].update(data=[data], limit=None)
    root.write_json("manifest.json", {"run": run, "sweep": "synthetic", "attempts": 1, "cells": cells,
                                      "config": {"benchmarks": benchmarks, "models": model_config}})
    return root
