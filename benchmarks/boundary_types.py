"""The untyped shapes at the project's edges, each named for the edge it crosses.

Inside the project a model is a WorkerModel, a request a Request, a plan a CellPlan. At its edges the data is
shaped by someone else: a JSON file whose keys a benchmark's metrics or a provider's API decide, a Parquet
or Ray Data row whose columns the benchmark's rows carry, a library's keyword arguments. There the project
keeps the mapping as it is, and says which edge by the alias it writes, so `dict[str, Any]` in jobs/ and
actors/ means one of these and nothing else.
"""
from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
"""A JSON (or YAML) object read or written whole: metrics.json, leaderboard.json, manifest.json entries,
validate.json, a model's config.json, a provider's request or response body, a sweep file's mapping. Its keys
are the file's or the API's format, defined where it is written (a benchmark's metrics, the report's blocks)."""

ArrowRow = dict[str, Any]
"""One row of a Parquet part or a Ray Data dataset as pyarrow and Ray hand it over: column name -> value. A
benchmark's prediction rows carry its own columns beside the declared ones (benchmarks.row_types)."""

ColumnBatch = dict[str, Any]
"""A batch as a Ray Data `map_batches` stage returns it: column name -> numpy array or list, one entry a row."""

Kwargs = dict[str, Any]
"""Keyword arguments handed to a library as written: vLLM's engine arguments, Ray's actor options and
runtime_env, an HTTP API's sampling parameters, an engine's own index settings. The library defines the keys
and checks them (preflight names the unknown ones where it can)."""
