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


def _records(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path), list(read_records(str(path)))


def test_a_blank_line_mid_jsonl_does_not_end_the_file(tmp_path):
    source, records = _records(tmp_path, "a.jsonl", b'{"a": 1}\n\n{"a": 2}\n')
    assert records == [Record(source, 1, {"a": 1}), Record(source, 3, {"a": 2})]


def test_json_error_rows_name_their_file_line_and_problem(tmp_path):
    """Every error row whole: its file, its line (the first bad byte's, JSON's lineno, or 1) and its message."""
    source, records = _records(tmp_path, "bad.json", b'\n[1,\n"\xff",\n2]')  # the bad byte on line 3 of 4
    assert records == [Record(source, 3, None, "not valid UTF-8 (byte 0xff): the whole file is unread")]
    source, records = _records(tmp_path, "syntax.json", b'[\n1,\n}')
    assert records == [Record(source, 3, None, "not valid JSON (Expecting value)")]
    source, records = _records(tmp_path, "deep.json", b"[" * 100000)  # RecursionError: no lineno, line 1
    assert records == [Record(source, 1, None, "not valid JSON (nested too deeply)")]
    source, records = _records(tmp_path, "array.json", b'[{"a": 1}, {"a": 2}]')
    assert records == [Record(source, 1, {"a": 1}), Record(source, 2, {"a": 2})]
    source, records = _records(tmp_path, "one.json", b'{"a": 1}')  # one object: one row, not its keys
    assert records == [Record(source, 1, {"a": 1})]
    source, records = _records(tmp_path, "empty.json", b"")
    assert records == [Record(source, 1, None, "no rows in this file")]


def test_csv_error_rows_name_their_file_line_and_problem(tmp_path):
    source, records = _records(tmp_path, "header.csv", b'"a,b\n')
    assert records == [Record(source, 1, None, "the header is not a CSV row (unexpected end of data): "
                                               "the whole file is unread")]
    source, records = _records(tmp_path, "name.csv", b"a\xff,b\n1,2\n")
    assert records == [Record(source, 1, None, "the header's column 'a\\udcff' is not valid UTF-8: "
                                               "the whole file is unread")]
    source, records = _records(tmp_path, "rows.csv", b'a,b\n1,2,3\n\xff,4\n5,6\n"7,8\n')
    assert records == [Record(source, 1, None, "3 cells where the header has 2 (line 2 of the file)"),
                       Record(source, 2, None, "field 'a' is not valid UTF-8"),
                       Record(source, 3, {"a": "5", "b": "6"}),
                       Record(source, 4, None, "line 5 of the file is not a CSV row (unexpected end of data): "
                                               "the rest of the file is unread")]
    # A byte-order mark is not part of the first column's name; a CRLF inside a quoted cell stays as written.
    source, records = _records(tmp_path, "bom.csv", b'\xef\xbb\xbfa,b\r\n"x\r\ny",2\r\n')
    assert records == [Record(source, 1, {"a": "x\r\ny", "b": "2"})]


def test_an_unreadable_parquet_or_unopenable_file_is_one_error_row(tmp_path, monkeypatch):
    source, records = _records(tmp_path, "bad.parquet", b"nope")
    assert [(r.source, r.row, r.data) for r in records] == [(source, 1, None)]
    assert records[0].problem.startswith("not a readable Parquet file (") and "4 bytes" in records[0].problem
    import benchmarks.records as records_module

    def refused(source):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(records_module, "open_data", refused)
    path = tmp_path / "locked.json"
    path.write_text("[]")
    assert list(read_records(str(path))) == [Record(str(path), 1, None, "cannot be read (Permission denied)")]
