"""Garbage in (issue 16 item 7): every loader fed garbage beside good rows never raises, reads every good row
as it reads them from a clean file, and turns each bad line into one error naming the file and the row (and
the field, for a bad field). Each test prints how many garbage inputs it tried: docs/reliability.md is
filled from `pytest tests/benchmarks/test_garbage_in.py -rP`.

Decisions: an empty file (or one of blank lines only) is one error row, "no rows"; a 10 MB text loads as a
good row, and the prompt builder keeps it whole (the engine step marks a prompt over max_model_len
truncated, with an error, and never cuts it: actors/vllm_stage.prepare, actors/transformers_engine); a
folder where a file is expected is read as a folder of data files (an empty one raises FileNotFoundError, the
CLI's one-line "no such data" error) by the item loaders, and is one problem for the mtRAG file readers.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from garbage import HUGE, cut_gzip, field_garbage, file_garbage, interleave, json_line, line_garbage
from garbage_loaders import ITEM_LOADERS, JSON_LOADERS, LOADERS, Loader, Read

from benchmarks.options import typed_options
from benchmarks.protocol import benchmark


def _ids(loader: Loader) -> str:
    return loader.name


def _clean(loader: Loader, tmp_path: Path, lines: list[bytes]) -> Read:
    path = tmp_path / f"clean{loader.suffix}"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return loader.read(str(path))


def _check(loader: Loader, path: Path, read: Read, clean: Read, bad_at: list[int],
           fields: dict[int, str] | None = None) -> None:
    """Good rows as from the clean file, one error per bad row naming file, row (and field), all storable."""
    assert read.good == clean.good and read.kept == clean.kept
    missing = [row for row in bad_at if not any(loader.where(str(path), row) in e for e in read.errors)]
    assert not missing, f"rows without an error naming them: {missing[:10]}"
    unnamed = [(row, field) for row, field in (fields or {}).items() if not any(
        loader.where(str(path), row) in e and f"'{field.lower()}" in e.lower() for e in read.errors)]
    assert not unnamed, f"errors not naming their field: {unnamed[:10]}"
    assert len(read.errors) == len(bad_at), read.errors
    json.dumps(read.rows, ensure_ascii=False, default=str).encode("utf-8")  # what storage does with them


@pytest.mark.parametrize("loader", LOADERS, ids=_ids)
def test_line_garbage_beside_good_rows(loader, tmp_path):
    good, bad = loader.good(), line_garbage()
    content, _, bad_at = interleave(good, [line for _, line in bad])
    path = tmp_path / f"data{loader.suffix}"
    path.write_bytes(content)
    read = loader.read(str(path))
    nonblank = [row for row, (_, line) in zip(bad_at, bad) if line.strip()]
    _check(loader, path, read, _clean(loader, tmp_path, good), nonblank)
    print(f"garbage-in {loader.name} line garbage: {len(bad)} inputs, {len(read.errors)} error rows, "
          f"{read.good} good rows kept")


@pytest.mark.parametrize("loader", JSON_LOADERS, ids=_ids)
def test_field_garbage_beside_good_rows(loader, tmp_path):
    good = loader.good()
    bad = [(kind, field, line) for kind, field, line in
           field_garbage(loader.good_rows()[0], loader.fields, loader.id_field, loader.fresh_id)
           if kind not in loader.tolerated]
    content, _, bad_at = interleave(good, [line for _, _, line in bad])
    path = tmp_path / f"data{loader.suffix}"
    path.write_bytes(content)
    read = loader.read(str(path))
    _check(loader, path, read, _clean(loader, tmp_path, good), bad_at,
           {row: field for row, (_, field, _) in zip(bad_at, bad)})
    print(f"garbage-in {loader.name} field garbage: {len(bad)} inputs ({len(loader.fields)} fields), "
          f"{len(read.errors)} error rows, {read.good} good rows kept")


@pytest.mark.parametrize("loader", [loader for loader in ITEM_LOADERS
                                    if loader.module in ("rag_rewardbench", "utility")], ids=_ids)
def test_lone_surrogate_in_a_row_without_id(loader, tmp_path):
    """A row without an id gets one hashed from its text, which a lone surrogate made raise."""
    good = loader.good()
    row = {k: v for k, v in loader.good_rows()[0].items() if k != loader.id_field}
    fields = [field for field in loader.fields if field != loader.id_field]
    bad = [json.dumps({**row, field: "\ud800"}).encode("ascii") for field in fields]  # "\\ud800" escapes
    content, _, bad_at = interleave(good, bad)
    path = tmp_path / f"data{loader.suffix}"
    path.write_bytes(content)
    read = loader.read(str(path))
    _check(loader, path, read, _clean(loader, tmp_path, good), bad_at, dict(zip(bad_at, fields)))
    print(f"garbage-in {loader.name} lone surrogate without an id: {len(bad)} inputs")


@pytest.mark.parametrize("loader", JSON_LOADERS, ids=_ids)
def test_a_huge_bad_value_makes_a_short_error(loader, tmp_path):
    """Each field of a row, in turn, a 1 MB text that is no valid value for it: errors quote it cut short."""
    junk = "not-a-value-" + "x" * 1_000_000
    row = loader.good_rows()[0]
    bad = [json_line({**row, loader.id_field: loader.fresh_id(i), field: junk})
           for i, field in enumerate(loader.fields)]
    path = tmp_path / f"data{loader.suffix}"
    path.write_bytes(b"".join(line + b"\n" for line in bad))
    read = loader.read(str(path))
    assert max(map(len, read.errors), default=0) < 2000
    print(f"garbage-in {loader.name} 1 MB bad values: {len(bad)} inputs, {len(read.errors)} error rows")


def test_qrels_field_garbage(tmp_path):
    loader = next(loader for loader in LOADERS if loader.name == "mtrag_qrels")
    good = loader.good()
    bad = [b"q1<::>1\tp1\t" + score for score in (b"NaN", b"inf", b"1.5", b"", b"x", b"1" * 5000, b"\xff")]
    bad += [b"\tp1\t1", b"q1<::>1\t\t1", b"q1<::>1\tp1", b"q1<::>1\tp1\t1\textra"]
    content, _, bad_at = interleave(good, bad)
    path = tmp_path / "qrels.tsv"
    path.write_bytes(content)
    read = loader.read(str(path))
    _check(loader, path, read, _clean(loader, tmp_path, good), bad_at)
    print(f"garbage-in mtrag_qrels field garbage: {len(bad)} inputs, {len(read.errors)} error rows, "
          f"{read.good} good rows kept")


@pytest.mark.parametrize("loader", LOADERS, ids=_ids)
def test_whole_file_garbage(loader, tmp_path):
    """A garbage file beside a good one: the item loaders read the folder (one error naming the garbage
    file); the mtRAG readers read the garbage file alone (a problem naming it, nothing read)."""
    kinds = [(kind, suffix, content) for kind, suffix, content in file_garbage() if content is not None
             and (loader in ITEM_LOADERS or suffix.startswith(".jsonl"))]
    for kind, suffix, content in kinds:
        folder = tmp_path / kind
        folder.mkdir()
        good = folder / f"good{loader.suffix}"
        good.write_bytes(b"".join(line + b"\n" for line in loader.good()))
        garbage = folder / f"garbage{suffix.replace('.jsonl', loader.suffix)}"
        garbage.write_bytes(content)
        if loader in ITEM_LOADERS:
            read, clean = loader.read(str(folder)), loader.read(str(good))
            assert read.good == clean.good and read.kept == clean.kept, kind
            assert read.errors and all(f"{garbage}: row " in e for e in read.errors), (kind, read.errors)
        else:
            read = loader.read(str(garbage))
            assert read.good == 0 and read.errors, kind
            assert all(str(garbage) in e for e in read.errors), (kind, read.errors)
    print(f"garbage-in {loader.name} file garbage: {len(kinds)} inputs")


@pytest.mark.parametrize("loader", ITEM_LOADERS, ids=_ids)
def test_a_broken_link_beside_good_files(loader, tmp_path):
    (tmp_path / f"good{loader.suffix}").write_bytes(b"".join(line + b"\n" for line in loader.good()))
    broken = tmp_path / f"broken{loader.suffix}"
    broken.symlink_to(tmp_path / "nowhere")
    read = loader.read(str(tmp_path))
    assert read.good == len(loader.good()) and len(read.errors) == 1 and f"{broken}: row 1:" in read.errors[0]
    print(f"garbage-in {loader.name} broken link: 1 input")


@pytest.mark.parametrize("loader", LOADERS, ids=_ids)
def test_cut_off_gzip_keeps_the_rows_before_the_cut(loader, tmp_path):
    good = loader.good()
    path = tmp_path / f"cut{loader.suffix}.gz"
    path.write_bytes(cut_gzip(good))
    read, clean = loader.read(str(path)), _clean(loader, tmp_path, good)
    assert len(read.errors) == 1 and str(path) in read.errors[0], read.errors
    assert read.good <= clean.good
    if isinstance(clean.kept, list) and not isinstance(clean.kept[0], str):
        assert read.kept == clean.kept[: len(read.kept)]  # a run's rows: the ones before the cut
    print(f"garbage-in {loader.name} cut-off gzip: 1 input, {len(read.errors)} error row, "
          f"{read.good} of {clean.good} good rows kept")


@pytest.mark.parametrize("loader", LOADERS, ids=_ids)
def test_a_folder_where_a_file_is_expected(loader, tmp_path):
    folder = tmp_path / f"folder{loader.suffix}"
    folder.mkdir()
    if loader in ITEM_LOADERS:
        with pytest.raises(FileNotFoundError, match="no .* files in this folder"):
            loader.read(str(folder))
    else:
        read = loader.read(str(folder))
        assert read.good == 0 and len(read.errors) == 1 and "a folder" in read.errors[0]
    print(f"garbage-in {loader.name} folder for a file: 1 input")


@pytest.mark.parametrize("loader", [loader for loader in LOADERS if loader.huge], ids=_ids)
def test_a_10_mb_text_is_a_good_row(loader, tmp_path):
    good = loader.good()
    huge = loader.huge({**loader.good_rows()[0], loader.id_field: loader.fresh_id(10**6)})
    path = tmp_path / f"data{loader.suffix}"
    path.write_bytes(b"".join(line + b"\n" for line in [*good, json_line(huge)]))
    read = loader.read(str(path))
    assert read.errors == [] and read.good == _clean(loader, tmp_path, good).good + 1
    if loader.module:  # the prompt builder keeps it whole: the engine, not the builder, judges the length
        spec = benchmark(loader.module)
        item = next(i for i in read.rows if i["item_id"] not in _clean(loader, tmp_path, good).kept)
        requests = spec.expand(item, "generative", typed_options(spec.Options, {}))
        assert any("x" * HUGE in json.dumps(r["messages"]) for r in requests)
    print(f"garbage-in {loader.name} 10 MB text: 1 input, read as a good row")
