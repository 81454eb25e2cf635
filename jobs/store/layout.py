"""The layout of a run, in one place: where each file lives relative to ROOT/RUN, whatever the store.

    manifest.json   (the run's config, cells, engines: jobs.store.manifest)
    status.json     (live progress while the sweep runs: jobs.sweep.progress)
    validate.json   (`ragjudge validate`'s verdicts on the sweep's models)
    ensembles.json  (the ensembles `ragjudge ensemble` added to the report)
    {predictions,requests,errors}/benchmark=B/model=M/part-<part>.parquet
    metrics/benchmark=B/model=M/metrics.json
    {runs,metrics}/benchmark=B/model=M/strategy=S/<name>   (a retrieval cell's runs and scores per strategy)
    report/{index.html,leaderboard.json,items.jsonl,viewer/}   (`ragjudge report`)
    quarantine/requests/benchmark=B/model=M/part-<part>.parquet   (parts that could not be read)
    lease.json   (the driver writing the run: jobs.store.lease)
    logs/libraries.log, logs/ray/   (Ray's, vLLM's and the model libraries' own lines: jobs.console.library_logs)

Folders are Hive partitions (`key=value`), so pyarrow and Ray Data read the tables as one dataset.
"""
from __future__ import annotations

import re
from typing import Literal
from urllib.parse import quote

# The row tables of a cell (partitioned by benchmark and model): answered requests, item rows, bad rows.
Table = Literal["predictions", "requests", "errors"]
TABLES: tuple[str, ...] = ("predictions", "requests", "errors")
QUARANTINE = "quarantine"  # unreadable parts are moved here, under their own relative path
STRATEGY = "strategy="  # the folders of a retrieval cell's strategies start with it
_CELL_FOLDERS = (*TABLES, "metrics", "runs")
MANIFEST = "manifest.json"
STATUS = "status.json"
VALIDATE = "validate.json"
ENSEMBLES = "ensembles.json"
LEASE = "lease.json"
LIBRARY_LOG = "logs/libraries.log"
RAY_SESSION_LOGS = "logs/ray"
REPORT = "report"
REPORT_PAGE = f"{REPORT}/index.html"
REPORT_LEADERBOARD = f"{REPORT}/leaderboard.json"
REPORT_ITEMS = f"{REPORT}/items.jsonl"
REPORT_VIEWER = f"{REPORT}/viewer"

_SAFE_PARTITION = re.compile(r"[^A-Za-z0-9._\-]")


def partition_value(name: str) -> str:
    """A Hive partition value for a benchmark or model name: hub ids like `org/name` become `org__name`.

    Other characters outside [A-Za-z0-9._-] are percent-encoded (pyarrow decodes them when it reads the tree).
    Not injective for names that already contain "__"; rows keep the original name in their own column.
    """
    if not name:
        raise ValueError("a partition needs a non-empty benchmark and model name")
    return _SAFE_PARTITION.sub(lambda m: quote(m.group(0), safe=""), name.replace("/", "__"))


def cell_folder(kind: str, benchmark: str, model: str) -> str:
    """`kind/benchmark=B/model=M`: a (benchmark, model) cell's folder under a table, metrics/ or runs/."""
    if kind not in _CELL_FOLDERS:
        raise ValueError(f"a cell's folder is under one of {_CELL_FOLDERS}, got {kind!r}")
    return f"{kind}/benchmark={partition_value(benchmark)}/model={partition_value(model)}"


def partition(table: str, benchmark: str, model: str) -> str:
    """The folder of one (table, benchmark, model) partition (a row table, or metrics)."""
    if table not in TABLES and table != "metrics":
        raise ValueError(f"table must be one of {TABLES}, got {table!r}")
    return cell_folder(table, benchmark, model)


def part_path(table: str, benchmark: str, model: str, part: str) -> str:
    """One Parquet part of a partition."""
    return f"{partition(table, benchmark, model)}/part-{part}.parquet"


def metrics_path(benchmark: str, model: str) -> str:
    """A cell's metrics.json."""
    return partition("metrics", benchmark, model) + "/metrics.json"


def strategy_path(folder: Literal["runs", "metrics"], benchmark: str, model: str, strategy: str, name: str) -> str:
    """A file of one retrieval strategy, under runs/ (run.jsonl, per_query.jsonl) or metrics/ (metrics.json)."""
    if folder not in ("runs", "metrics"):
        raise ValueError(f"a strategy's files are under runs/ or metrics/, got {folder!r}")
    return f"{cell_folder(folder, benchmark, model)}/{STRATEGY}{partition_value(strategy)}/{name}"
