"""The three readers a user points at a run's table folder (predictions/, errors/, requests/), each giving the
table as one pandas frame with the Hive keys (benchmark, model) decoded from the folders."""
from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow.dataset as pads


def with_pandas(folder: str) -> pd.DataFrame:
    return pd.read_parquet(folder)


def with_pyarrow(folder: str) -> pd.DataFrame:
    return pads.dataset(folder, partitioning="hive").to_table().to_pandas()


def with_duckdb(folder: str) -> pd.DataFrame:
    # union_by_name: a table's parts differ in columns (a judge's rows and a scorer's, two benchmarks' rows)
    return duckdb.sql(f"SELECT * FROM read_parquet('{folder}/**/*.parquet', hive_partitioning = true, "
                      "union_by_name = true)").df()


READERS = (with_pandas, with_pyarrow, with_duckdb)


def cells_and_items(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(benchmark, model, item_id) of each row, sorted (a reader's keys may come as categories)."""
    return sorted(zip(frame["benchmark"].astype(str), frame["model"].astype(str), frame["item_id"]))
