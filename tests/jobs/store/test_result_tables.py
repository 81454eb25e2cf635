"""A run's row tables (predictions/, errors/, requests/) read as one dataset by pandas, pyarrow and DuckDB, each
with the cell's benchmark and model decoded from its folders (issue 61); a run written before (the keys inside
its parts, a model's '/' as '__' in its folder) still reads and resumes through the run root."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.dataset as pads
import pytest
from hive_readers import READERS, cells_and_items, with_duckdb

from benchmarks.records import read_records
from jobs.store.layout import TABLES, flat_value, part_path, partition_keys
from jobs.store.parquet_rows import REQUESTS_SCHEMA, parquet_bytes
from jobs.store.run_root import RunRoot
from jobs.store.unify import unify_table

BENCHMARKS = ("rag_rewardbench", "my_pairs")  # a custom config of the same module: its rows name the module
MODELS = ("org/judge-1", "tiny rm")  # a hub id and a name with a space: both encoded in their folders


def _rows(table: str, benchmark: str, model: str) -> list[dict]:
    """A cell's rows as the flow hands them to the run root: item rows carry their module's name as
    `benchmark` and the model's name, answers neither."""
    ids = [f"{benchmark}/{model}/{i}" for i in range(3)]
    if table == "requests":
        return [{"request_id": f"{i}#ab", "item_id": i, "text": "[[A]]", "error": None} for i in ids]
    if table == "errors":
        return [{"item_id": ids[0], "benchmark": "rag_rewardbench", "model": model, "error": "bad row",
                 "retryable": False}]
    return [{"item_id": i, "benchmark": "rag_rewardbench", "model": model, "subset": "s", "correct": 1.0}
            for i in ids]


@pytest.fixture
def run(tmp_path) -> RunRoot:
    root = RunRoot(str(tmp_path), "run")
    for benchmark in BENCHMARKS:
        for model in MODELS:
            root.write_cell(benchmark, model, _rows("predictions", benchmark, model), _rows("errors", benchmark, model))
            root.write_rows("requests", benchmark, model, _rows("requests", benchmark, model), part="s00000-0001-0")
    return root


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("reader", READERS)
def test_each_table_reads_as_one_dataset_with_the_cells_names(run, table, reader):
    frame = reader(run.path(table))
    own = list(dict.fromkeys(k for k in _rows(table, "b", "m")[0] if k not in ("benchmark", "model")))
    if table == "requests":  # every column an answer may have, as every requests part is written
        own = list(dict.fromkeys([*REQUESTS_SCHEMA.names, *own]))
    assert sorted(frame.columns) == sorted([*own, "benchmark", "model"])  # each once, the keys included
    assert cells_and_items(frame) == sorted((b, m, row["item_id"]) for b in BENCHMARKS for m in MODELS
                                            for row in _rows(table, b, m))
    # the same rows as the run root reads, cell by cell
    for b in BENCHMARKS:
        for m in MODELS:
            mine = frame[(frame["benchmark"].astype(str) == b) & (frame["model"].astype(str) == m)]
            stored = run.read_rows(table, b, m)
            assert sorted(mine["item_id"]) == sorted(r["item_id"] for r in stored)
            assert {(r["benchmark"], r["model"]) for r in stored} == {(b, m)}


def test_a_part_holds_no_column_of_its_folders_keys(run):
    part = run.path(run.partition("predictions", "my_pairs", "org/judge-1")) + "/part-0.parquet"
    assert "model=org%2Fjudge-1" in part
    assert not {"benchmark", "model"} & set(pads.dataset(part).schema.names)


def test_a_run_written_before_reads_and_resumes_in_its_own_folders(tmp_path):
    """Parts that hold the keys, under `model=org__judge-1`, as runs wrote them before."""
    root = RunRoot(str(tmp_path), "old")
    model = "org/judge-1"
    older = root.path(f"requests/benchmark=rag_rewardbench/model={flat_value(model)}")
    os.makedirs(older)
    kept = [{"request_id": "a#ab", "item_id": "a", "text": "[[A]]", "benchmark": "rag_rewardbench",
             "model": model}]
    with open(f"{older}/part-s00000-0001-0000000.parquet", "wb") as f:
        f.write(parquet_bytes(kept))
    root.write_json(f"metrics/benchmark=rag_rewardbench/model={flat_value(model)}/metrics.json", {"n": 1})

    assert root.read_rows("requests", "rag_rewardbench", model) == kept
    rows, moved = root.read_whole_rows("requests", "rag_rewardbench", model)
    assert rows == kept and moved == []
    assert root.read_json(root.metrics_path("rag_rewardbench", model)) == {"n": 1}
    # a resumed cell adds its parts beside the older ones, and reads both
    root.write_rows("requests", "rag_rewardbench", model, [{"request_id": "b#ab", "item_id": "b", "text": "[[B]]"}],
                    part="s00000-0002-0000001")
    assert sorted(os.listdir(older)) == ["part-s00000-0001-0000000.parquet", "part-s00000-0002-0000001.parquet"]
    assert [(r["item_id"], r["benchmark"], r["model"]) for r in root.read_rows("requests", "rag_rewardbench", model)
            ] == [("a", "rag_rewardbench", model), ("b", "rag_rewardbench", model)]
    # a table the older run never wrote goes where every new run writes it
    root.write_cell("rag_rewardbench", model, [{"item_id": "a", "correct": 1.0}], [])
    assert os.path.isdir(root.path("predictions/benchmark=rag_rewardbench/model=org%2Fjudge-1"))


@pytest.mark.parametrize("name", ["org/name", "a b%=:?", "ünï/cø", "x__y", ".."])
def test_a_files_folders_decode_to_its_cells_names_as_pyarrow_decodes_them(name):
    path = part_path("predictions", "b", name, "0")
    hive = pads.HivePartitioning(pa.schema([("benchmark", pa.string()), ("model", pa.string())]))
    assert partition_keys(path) == pads.get_partition_keys(hive.parse(path)) == {"benchmark": "b", "model": name}
    assert partition_keys("/data/preds/part-0.parquet") == {}


def _cells_of_two_kinds(tmp_path) -> RunRoot:
    """A classifier's rows and a judge's in one benchmark, and another benchmark's: different columns, a column
    all None in one part (Parquet's null type) and a string in another, an int in one and a float in another."""
    root = RunRoot(str(tmp_path), "run")
    root.write_cell("rag_rewardbench", "tiny", [
        {"item_id": "a", "subset": "s", "score_chosen": 2.0, "correct": 1.0, "error": None, "n_tokens": 7}], [])
    root.write_cell("rag_rewardbench", "judge", [
        {"item_id": "a", "subset": "s", "pick_cr": 1, "correct": 0.5, "error": "cut", "n_tokens": 9.5}], [])
    root.write_cell("utility", "judge", [
        {"item_id": "u", "subset": "s", "ranking": [3, 1], "correct": None, "error": None}], [])
    return root


@pytest.mark.parametrize("reader", READERS)
def test_predictions_of_cells_with_other_columns_read_whole_once_the_table_is_one_schema(tmp_path, reader):
    """pandas and pyarrow take a folder's columns from its first part: before unify_table they see the
    classifier's alone (or fail on a null column typed elsewhere); after it every reader sees every column of
    every cell, with the values the run root reads."""
    root = _cells_of_two_kinds(tmp_path)
    columns = {"item_id", "subset", "score_chosen", "pick_cr", "ranking", "correct", "error", "n_tokens",
               "benchmark", "model"}
    if reader is not with_duckdb:
        try:
            before = set(reader(root.path("predictions")).columns)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            before = set()
        assert before != columns
    assert unify_table(root, "predictions") is None
    frame = reader(root.path("predictions"))
    assert set(frame.columns) == columns
    read = {(str(r.benchmark), str(r.model)): r for r in frame.itertuples()}
    assert read["rag_rewardbench", "tiny"].score_chosen == 2.0 and read["rag_rewardbench", "tiny"].n_tokens == 7.0
    assert read["rag_rewardbench", "judge"].error == "cut" and read["rag_rewardbench", "judge"].n_tokens == 9.5
    assert list(read["utility", "judge"].ranking) == [3, 1]
    # the run root (and ragjudge aggregate's reader) reads each part as its cell wrote it: no judge's column in
    # the classifier's row, n_tokens an int again
    assert root.read_rows("predictions", "rag_rewardbench", "tiny") == [
        {"item_id": "a", "subset": "s", "score_chosen": 2.0, "correct": 1.0, "error": None, "n_tokens": 7,
         "benchmark": "rag_rewardbench", "model": "tiny"}]
    assert [r.data for r in read_records(root.path(root.partition("predictions", "utility", "judge")))] == [
        {"item_id": "u", "subset": "s", "ranking": [3, 1], "correct": None, "error": None}]


def test_requests_parts_of_engines_of_every_task_have_one_schema_as_written(tmp_path):
    """A classifier's answers (a score, no error: a null column inferred) and a judge's (a text, an error): the
    parts' schemas are equal as written, so a run's end rewrites no requests part."""
    root = RunRoot(str(tmp_path), "run")
    root.write_rows("requests", "b", "tiny", [{"request_id": "a#chosen", "item_id": "a", "subset": "s",
                                               "variant": "chosen", "score": 1.5, "error": None}], "s00000-0")
    root.write_rows("requests", "b", "judge", [{"request_id": "a#cr", "item_id": "a", "subset": "s",
                                                "variant": "cr", "text": "Choose 1", "error": "cut",
                                                "n_tokens": 5}], "s00000-0")
    schemas = [pads.dataset(p).schema for p in sorted((tmp_path / "run" / "requests").rglob("*.parquet"))]
    assert schemas[0] == schemas[1] == REQUESTS_SCHEMA
    tiny = root.read_rows("requests", "b", "tiny")[0]
    assert tiny["score"] == 1.5 and "text" not in tiny  # read back as written: no judge's column
    assert root.read_rows("requests", "b", "judge")[0]["n_tokens"] == 5


def test_a_table_already_one_schema_is_not_rewritten_and_one_that_cannot_be_says_why(tmp_path):
    root = _cells_of_two_kinds(tmp_path)
    assert unify_table(root, "predictions") is None
    parts = sorted(p for p in (tmp_path / "run" / "predictions").rglob("*.parquet"))
    written = [p.stat().st_mtime_ns for p in parts]
    assert unify_table(root, "predictions") is None
    assert [p.stat().st_mtime_ns for p in parts] == written  # nothing to do: footers read, no part rewritten
    root.write_cell("bianbench", "judge", [{"item_id": "b", "subset": "s", "ranking": "first", "correct": 1.0,
                                            "error": None}], [])
    lone = next((tmp_path / "run" / "predictions" / "benchmark=bianbench").rglob("*.parquet"))
    kept = lone.read_bytes()
    why = unify_table(root, "predictions")
    assert why is not None and "ranking" in why and why.startswith(root.uri("predictions"))
    assert lone.read_bytes() == kept and [p.stat().st_mtime_ns for p in parts] == written


def test_an_api_judges_list_of_nulls_is_rewritten_whole_beside_another_benchmarks_columns(tmp_path):
    """An API judge's RAG-RewardBench rows hold `logprobs_cr` [None, None] (a list of nulls in Parquet) and its
    Bi'anBench rows other columns: both parts are rewritten to one schema, and each reads back as written (pyarrow
    casting a list of nulls to its own type wrote offsets past its values, and the rewrite failed)."""
    root = RunRoot(str(tmp_path), "run")
    judged = [{"item_id": str(i), "subset": "s", "logprobs_cr": [None, None], "correct": 0.5, "error": None}
              for i in range(6)]
    root.write_cell("rag_rewardbench", "api", judged, [])
    root.write_cell("bianbench", "api", [{"item_id": "b", "subset": "s", "prediction": "PASS", "error": None}], [])
    assert unify_table(root, "predictions") is None
    assert root.read_rows("predictions", "rag_rewardbench", "api") == [
        {**row, "benchmark": "rag_rewardbench", "model": "api"} for row in judged]
    frame = pads.dataset(root.path("predictions"), format="parquet", partitioning="hive").to_table()
    assert frame.num_rows == 7 and {"logprobs_cr", "prediction"} <= set(frame.column_names)
