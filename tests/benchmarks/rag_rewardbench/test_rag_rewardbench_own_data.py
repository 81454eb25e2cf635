"""RAG-RewardBench on a user's own pairs (issue 61): the common RAG form (question + passages) rendered into the
released prompt's layout so no passage is lost, an optional subset, every missing field named at once, and the
same rows read alike from JSONL, JSON, CSV, TSV and Parquet."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.rag_rewardbench import expand
from benchmarks.rag_rewardbench.load import load_items, read_passages, rendered_prompt

ROWS = [{"question": f"Q{i}?", "passages": [f"plain passage {i}", {"title": f"T{i}", "text": f"titled passage {i}"}],
         "chosen": f"good {i}", "rejected": f"bad {i}"} for i in range(5)]
COLUMNS = {"reject": "rejected"}


def test_question_and_passages_are_rendered_as_the_released_prompts_are():
    # Appendix D's layout, written out by hand: an untitled passage keeps its bare 'Title:' line as released.
    assert rendered_prompt("Who?", [{"title": "", "text": "A."}, {"title": "B", "text": "B text."}]) == (
        "## References\nReference [1]\nTitle:\nText: A.\nReference [2]\nTitle: B\nText: B text.\n"
        "Using the references listed above, answer the following question in detail.\n## Question: Who?\n"
        "## Response:")


def test_every_passage_reaches_every_request_of_every_kind(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    items = list(load_items(str(path), COLUMNS))
    assert [i["error"] for i in items] == [None] * 5 and {i["subset"] for i in items} == {"all"}
    for item in items:
        n = item["item_id"]
        k = ROWS[[i["item_id"] for i in items].index(n)]["question"][1:-1]
        for kind in ("discriminative", "implicit", "generative"):
            for request in expand(item, kind):
                text = "".join(m["content"] for m in request["messages"])
                assert f"plain passage {k}" in text and f"Title: T{k}\nText: titled passage {k}" in text


def _written(tmp_path, suffix, rows):
    path = tmp_path / f"pairs{suffix}"
    flat = [{**r, "passages": json.dumps(r["passages"])} for r in rows]  # CSV and TSV cells hold JSON text
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif suffix == ".json":
        path.write_text(json.dumps(rows))
    elif suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(flat), path)
    else:
        sep = "\t" if suffix == ".tsv" else ","
        import csv

        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, list(flat[0]), delimiter=sep)
            writer.writeheader()
            writer.writerows(flat)
    return str(path)


def test_the_same_rows_read_alike_from_every_format(tmp_path):
    def seen(path):
        return [(i["item_id"], i["prompt"], i["chosen"], i["reject"]) for i in load_items(path, COLUMNS)]

    first = seen(_written(tmp_path, ".jsonl", ROWS))
    assert len(first) == 5
    for suffix in (".json", ".csv", ".tsv", ".parquet"):
        assert seen(_written(tmp_path, suffix, ROWS)) == first, suffix


def test_every_missing_field_is_named_at_once_with_its_column(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"chosen": "c"}) + "\n")
    [item] = load_items(str(path), COLUMNS)
    assert item["error"] == (f"{path}: row 1: field 'prompt' missing (or give `question` and `passages`); "
                             "field 'reject' (column 'rejected') missing")


def test_passages_that_are_not_passages_are_named_by_position():
    assert read_passages([{"title": "t"}], "passages")[1] == "field 'passages[0]' is neither text nor an object " \
                                                           "with a 'text'"
    assert read_passages("[not json", "context")[1] == "field 'context' starts like a JSON list but is not valid JSON"
    assert read_passages("one passage", "context") == ([{"title": "", "text": "one passage"}], None)
    assert read_passages([{"text": "a", "title": 3}], "passages")[1] == "field 'passages[0].title' is not text"


def test_a_prompt_wins_over_question_and_a_subset_prefix_picks_the_column(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"prompt": "P", "question": "ignored", "passages": ["ignored"], "chosen": "c",
                                "reject": "r", "subset": "reason-mine"}) + "\n")
    [item] = load_items(str(path))
    assert (item["prompt"], item["subset"]) == ("P", "reason-mine")


CELL = st.one_of(st.none(), st.integers(-5, 5), st.booleans(), st.text(max_size=8),
                 st.lists(st.text(max_size=4), max_size=2), st.dictionaries(st.sampled_from(["text", "title"]),
                                                                           st.text(max_size=4), max_size=2))
ROW = st.dictionaries(st.sampled_from(["prompt", "question", "passages", "chosen", "reject", "subset", "id", "x"]),
                      CELL, max_size=7)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, min_size=1, max_size=6))
def test_any_rows_in_any_format_load_without_a_crash_and_each_bad_row_is_named(tmp_path, rows):
    for suffix in (".jsonl", ".csv", ".parquet"):
        path = tmp_path / f"h{suffix}"
        if suffix == ".jsonl":
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif suffix == ".parquet":  # a column of one type where its cells have one (ints, lists, structs), else text
            columns = {}
            for name in sorted({k for r in rows for k in r}) or ["x"]:
                cells = [r.get(name) for r in rows]
                try:
                    columns[name] = pa.array(cells)
                    pq.write_table(pa.table({name: columns[name]}), pa.BufferOutputStream())
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):  # {}: no Parquet type
                    columns[name] = pa.array([c if c is None or isinstance(c, str) else json.dumps(c)
                                              for c in cells])
            pq.write_table(pa.table(columns), path)
        else:
            import csv

            names = sorted({k for r in rows for k in r}) or ["x"]
            with path.open("w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(names)
                for r in rows:
                    writer.writerow(["" if r.get(n) is None else json.dumps(r[n]) if not isinstance(r[n], str)
                                     else r[n] for n in names])
        items = list(load_items(str(path)))
        # a CSV row of empty cells is a blank line; a file with no row at all is one error ("no rows")
        nonblank = [r for r in rows if suffix != ".csv" or any(v not in (None, "") for v in r.values())]
        assert len(items) == (len(nonblank) or 1)
        for item in items:
            assert item["error"] is None or item["error"].startswith(f"{path}: row "), item["error"]
            assert item["error"] is not None or (item["prompt"].strip() and item["chosen"].strip())
