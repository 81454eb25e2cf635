"""The encoder stage: text pairs a benchmark names for its rows (e.g. mtRAG's response vs reference and vs each
passage) scored by BERTScore in a Ray Data actor pool, then written back into the rows by the benchmark.

It runs after the judges, on the item rows, and stores nothing of its own: the scores are a pure function of
the rows and the encoder, recomputed when a finished cell is aggregated again. What each encoder's actors
computed with (their class, dtype and numerics: actors.bertscore.runtime) is kept per label for manifest.json
(`encoders_used`, written by jobs.sweep.pipeline).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from actors.bertscore import BertScoreStage, EncoderSettings, baseline_file, encoder_label
from actors.built_in_models import resolve_model
from benchmarks.boundary_types import JsonObject
from benchmarks.protocol import Benchmark
from benchmarks.row_types import Item, Row
from jobs.engines.preflight import PreflightError
from jobs.engines.rows import dataset_rows

# Encoder batches per Ray Data batch: a row's pairs share its response, and bert-score encodes each distinct
# text once per call and sorts by length, so larger calls encode less and pad less.
PAIRS_BATCHES = 8

# label -> each distinct runtime record its actors reported, in this driver process, since the last reset
_USED: dict[str, list[JsonObject]] = {}
_USED_LOCK = threading.Lock()  # cells run in threads of the driver


def encoder_settings(spec: Benchmark, options: Any, bench_name: str) -> EncoderSettings | None:
    """The benchmark's encoder settings, checked before any engine starts (a rescale baseline that cannot be
    found fails the cell here, not after the judges ran); None when the benchmark has no encoder stage."""
    encoder = spec.text_pair_encoder(options)
    if encoder is None:
        return None

    try:
        baseline_file(encoder)
    except FileNotFoundError as e:
        raise PreflightError(f"benchmark '{bench_name}': options.bertscore: {e}") from None
    return encoder


def with_text_pair_scores(spec: Benchmark, items: list[Item], rows: list[Row],
                          options: Any, encoder: EncoderSettings,
                          log: Callable[[str], None] = print) -> list[Row]:
    """`rows` with their pairs' scores filled in by the benchmark's add_text_pair_scores."""
    by_id = {item["item_id"]: item for item in items}
    pairs = [pair for row in rows if row["item_id"] in by_id
             for pair in spec.text_pairs(by_id[row["item_id"]], row, options)]
    label = encoder_label(encoder)
    log(f"encoder stage ({label}): {len(pairs)} text pairs")
    scores = score_pairs(pairs, encoder) if pairs else {}
    for record in encoders_used().get(label, []):
        log(f"encoder stage ({label}): {record['model_class']} in {record['dtype']} on {record['device']}")
    return [spec.add_text_pair_scores(row, scores, label) for row in rows]


def encoders_used(reset: bool = False) -> dict[str, list[JsonObject]]:
    """Per encoder label, what its actors computed with (actors.bertscore.runtime), each distinct record once;
    `reset`: forgotten afterwards (a sweep starts with none)."""
    with _USED_LOCK:
        used = {label: list(records) for label, records in _USED.items()}
        if reset:
            _USED.clear()
    return used


def score_pairs(pairs: list[dict[str, str]], encoder: EncoderSettings) -> dict[str, dict[str, float]]:
    """pair id -> precision, recall, f1, through an actor pool of `encoder['actors']` BERTScore encoders, each
    on `num_cpus` CPUs (Ray sets an actor's torch threads to its CPUs) and `num_gpus` GPUs. The actors' runtime
    records are kept under the encoder's label (encoders_used)."""
    import ray

    # The actors get a local folder: a built-in encoder is made here, in the driver, never in an actor.
    encoder = {**encoder, "folder": resolve_model(encoder["model"])}
    ds = ray.data.from_items(pairs).map_batches(
        BertScoreStage, fn_constructor_kwargs={"encoder": encoder},
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=int(encoder["actors"])),
        batch_size=int(encoder["batch_size"]) * PAIRS_BATCHES, num_cpus=encoder["num_cpus"],
        num_gpus=encoder["num_gpus"])
    scores, runtimes = {}, set()
    for row in dataset_rows(ds):
        scores[row["pair_id"]] = {key: float("nan") if row[key] is None else row[key]
                                  for key in ("precision", "recall", "f1")}
        runtimes.add(row["runtime"])
    with _USED_LOCK:
        known = _USED.setdefault(encoder_label(encoder), [])
        known.extend(record for record in map(json.loads, sorted(runtimes)) if record not in known)
    return scores
