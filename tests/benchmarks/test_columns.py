"""Data in the user's own columns (issue 61): CSV and TSV read row by row, a config's `columns` renaming a row's
columns before the benchmark reads it, errors naming the mapped column, and every column a benchmark leaves
unread named."""
from __future__ import annotations

import json

import pytest

from benchmarks.columns import Field, mapping_problems, unread_columns, unread_lines
from benchmarks.records import Record, mapped, read_records, with_columns

FIELDS = (Field("prompt", "text", "", ""), Field("reject", "text", "", ""),
          Field("question", "text", "", "", required=False, unless="prompt"))


def _rows(path):
    return [(r.row, r.data, r.problem) for r in read_records(str(path))]


def test_csv_cells_are_text_a_quoted_newline_stays_in_its_cell_and_an_empty_cell_is_null(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b'prompt,reject,n\n"two\nlines, and a comma",,007\n')
    assert _rows(path) == [(1, {"prompt": "two\nlines, and a comma", "reject": None, "n": "007"}, None)]


def test_tsv_splits_on_tabs_only(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_bytes(b"prompt\treject\na, b\tc\n")
    assert _rows(path) == [(1, {"prompt": "a, b", "reject": "c"}, None)]


def test_a_bad_csv_row_costs_its_row_only_and_is_named_by_its_row(tmp_path):
    path = tmp_path / "d.csv"
    # data row 1 has a cell that is not UTF-8, row 2 one cell too many, row 3 is good; a blank line is no row
    path.write_bytes(b"prompt,reject\nok,\xff\xfe\n1,2,3\n\ngood,row\n")
    assert _rows(path) == [(1, None, "field 'reject' is not valid UTF-8"),
                           (2, None, "3 cells where the header has 2 (line 3 of the file)"),
                           (3, {"prompt": "good", "reject": "row"}, None)]


def test_a_quote_that_never_closes_ends_the_file_with_a_line_saying_so(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b'prompt,reject\na,b\nc,"d\n')
    rows = _rows(path)
    assert rows[0] == (1, {"prompt": "a", "reject": "b"}, None)
    assert rows[1][0] == 2 and "line 3 of the file is not a CSV row" in rows[1][2]


def test_a_10_mb_cell_reads_whole(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,reject\n" + "x" * 10_000_000 + ",y\n")
    [(_, data, _)] = _rows(path)
    assert len(data["prompt"]) == 10_000_000


def test_a_mapped_column_takes_its_fields_name_and_a_column_of_that_name_is_no_longer_read():
    record = Record("f", 1, {"question": "q", "prompt": "old", "rejected": "r", "x": 1})
    assert mapped(record, {"prompt": "question", "reject": "rejected"}).data == {"x": 1, "prompt": "q", "reject": "r"}


def test_a_problem_of_a_mapped_field_names_its_column_and_leaves_the_others_alone():
    problem = "field 'reject' missing; field 'prompt' empty"
    assert with_columns(problem, {"reject": "rejected"}) == "field 'reject' (column 'rejected') missing; field " \
                                                           "'prompt' empty"


def test_mapping_problems_name_unknown_fields_and_a_column_read_twice():
    assert mapping_problems(FIELDS, {"prompt": "q"}) == []
    assert mapping_problems(FIELDS, {"answer": "a"})[0].startswith("columns: 'answer' is not a field")
    assert mapping_problems(FIELDS, {"prompt": "q", "reject": "q"}) == [
        "columns: 'prompt' and 'reject' both read column 'q'"]


def test_unread_columns_are_named_per_file_and_a_field_another_form_replaces_counts_as_unread(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"prompt": "p", "reject": "r", "extra": 1},
        {"question": "q", "reject": "r"},  # the RAG form: question is read
        {"prompt": "p", "question": "q", "reject": "r", "more": 2},  # prompt given: question is not read
    ]) + "\n")
    assert unread_columns(FIELDS, str(path)) == {str(path): ["extra", "question", "more"]}
    [line] = unread_lines("b", FIELDS, [str(path)])
    assert "columns 'extra', 'question', 'more' not read" in line and "columns: {FIELD: extra}" in line


def test_a_column_mapped_to_a_field_is_not_unread(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("q,rejected\na,b\n")
    assert unread_columns(FIELDS, str(path), {"prompt": "q", "reject": "rejected"}) == {}
    assert unread_columns(FIELDS, str(path)) == {str(path): ["q", "rejected"]}


@pytest.mark.parametrize("suffix", [".csv.gz", ".tsv.gz"])
def test_compressed_csv_and_tsv_read_like_plain_ones(tmp_path, suffix):
    import gzip

    sep = "\t" if suffix.startswith(".tsv") else ","
    path = tmp_path / f"d{suffix}"
    path.write_bytes(gzip.compress(f"prompt{sep}reject\na{sep}b\n".encode()))
    assert _rows(path) == [(1, {"prompt": "a", "reject": "b"}, None)]


def test_each_file_is_read_for_its_first_rows_only(tmp_path):
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"prompt": "p"}, {"prompt": "p"}, {"prompt": "p", "late": 1}]) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"prompt": "p", "early": 1}) + "\n")
    assert unread_columns(FIELDS, str(tmp_path), rows=2) == {str(tmp_path / "b.jsonl"): ["early"]}
    assert unread_columns(FIELDS, str(tmp_path), rows=3) == {str(tmp_path / "a.jsonl"): ["late"],
                                                             str(tmp_path / "b.jsonl"): ["early"]}
