"""The layout of a run, in one place: where each file lives relative to ROOT/RUN, whatever the store.

    manifest.json   (the run's config, cells, engines: jobs.store.manifest)
    status.json     (live progress while the sweep runs: jobs.sweep.progress)
    validate.json   (`ragjudge validate`'s verdicts on the sweep's models)
    ensembles.json  (the ensembles `ragjudge ensemble` added to the report)
    {predictions,requests,errors}/benchmark=B/model=M/part-<part>.parquet
    metrics/benchmark=B/model=M/metrics.json
    {runs,metrics}/benchmark=B/model=M/strategy=S/<name>   (a retrieval cell's runs and scores per strategy)
    report/{index.html,leaderboard.json,leaderboard.csv,items.jsonl,viewer/}   (`ragjudge report`)
    quarantine/requests/benchmark=B/model=M/part-<part>.parquet   (parts that could not be read)
    lease.json   (the driver writing the run: jobs.store.lease)
    logs/libraries.log, logs/ray/   (Ray's, vLLM's and the model libraries' own lines: jobs.console.library_logs)

Folders are Hive partitions (`key=value`) and a part holds no column of its folders' keys (PARTITION_KEYS), so
pandas, pyarrow, DuckDB and Ray Data read each table as one dataset, its benchmark and model decoded from the
folder names; a sweep's end gives every part of a table the table's columns (jobs.store.unify), since pandas
and pyarrow read a folder's columns from its first part. Older runs' parts hold the keys too, and their folders name a model's '/' as '__' (`flat_value`):
RunRoot reads those as well.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal
from urllib.parse import quote, unquote

# The row tables of a cell (partitioned by benchmark and model): answered requests, item rows, bad rows.
Table = Literal["predictions", "requests", "errors"]
TABLES: tuple[str, ...] = ("predictions", "requests", "errors")
PARTITION_KEYS = ("benchmark", "model")  # a row table's folder keys, in folder order
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
REPORT_LEADERBOARD_CSV = f"{REPORT}/leaderboard.csv"  # the same models, a row each
REPORT_ITEMS = f"{REPORT}/items.jsonl"
REPORT_VIEWER = f"{REPORT}/viewer"

_SAFE_PARTITION = re.compile(r"[^A-Za-z0-9._\-]")


def partition_value(name: str) -> str:
    """A Hive partition value for a benchmark or model name, which every Hive reader decodes back to the name:
    characters outside [A-Za-z0-9._-] are percent-encoded, a hub id's `org/name` as `org%2Fname`."""
    if not name:
        raise ValueError("a partition needs a non-empty benchmark and model name")
    return _SAFE_PARTITION.sub(lambda m: quote(m.group(0), safe=""), name)


def partition_keys(path: str) -> dict[str, str]:
    """The benchmark and model that a file's Hive folders name (`.../benchmark=B/model=M/part-0.parquet`),
    decoded as Hive readers decode them; {} for a file outside such folders. By hand: pyarrow.dataset's parser
    would add its import to every command's start."""
    folders = (folder.partition("=") for folder in path.split("/")[:-1])
    return {key: unquote(value) for key, eq, value in folders if eq and key in PARTITION_KEYS}


def flat_value(name: str) -> str:
    """A name as one folder name the older way: '/' as '__', then as partition_value. Not reversible (a name
    may hold '__'); the answer store keeps its folders so (ROOT/_answers: kept answers stay found), and runs
    written before partition values were reversible hold their cells so."""
    return partition_value(name.replace("/", "__"))


def cell_folder(kind: str, benchmark: str, model: str, value: Callable[[str], str] = partition_value) -> str:
    """`kind/benchmark=B/model=M`: a (benchmark, model) cell's folder under a table, metrics/ or runs/, its names
    encoded by `value` (flat_value: where a run written before reversible values has it)."""
    if kind not in _CELL_FOLDERS:
        raise ValueError(f"a cell's folder is under one of {_CELL_FOLDERS}, got {kind!r}")
    return f"{kind}/benchmark={value(benchmark)}/model={value(model)}"


def partition(table: str, benchmark: str, model: str, value: Callable[[str], str] = partition_value) -> str:
    """The folder of one (table, benchmark, model) partition (a row table, or metrics)."""
    if table not in TABLES and table != "metrics":
        raise ValueError(f"table must be one of {TABLES}, got {table!r}")
    return cell_folder(table, benchmark, model, value)


def part_path(table: str, benchmark: str, model: str, part: str, value: Callable[[str], str] = partition_value
              ) -> str:
    """One Parquet part of a partition."""
    return f"{partition(table, benchmark, model, value)}/part-{part}.parquet"


def metrics_path(benchmark: str, model: str, value: Callable[[str], str] = partition_value) -> str:
    """A cell's metrics.json."""
    return partition("metrics", benchmark, model, value) + "/metrics.json"


def strategy_path(folder: Literal["runs", "metrics"], benchmark: str, model: str, strategy: str, name: str,
                  value: Callable[[str], str] = partition_value) -> str:
    """A file of one retrieval strategy, under runs/ (run.jsonl, per_query.jsonl) or metrics/ (metrics.json)."""
    if folder not in ("runs", "metrics"):
        raise ValueError(f"a strategy's files are under runs/ or metrics/, got {folder!r}")
    return f"{cell_folder(folder, benchmark, model, value)}/{STRATEGY}{value(strategy)}/{name}"
