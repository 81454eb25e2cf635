"""mtRAG retrieval data (docs/protocols.md 3): the loaders on the released files and on bad input, both file
layouts, task ids and collection names, and runs in the official task format. Pure Python, seconds.

Real data, bundled: data/mtrag (the released queries and qrels, a pooled corpus).
"""
import gzip
import json
import os
import zipfile

import pytest
from bundled_data import CORPUS, RETRIEVAL
from mtrag_runs import REAL, qrels_file, row, write_lines

from benchmarks.mtrag import common as mc
from benchmarks.mtrag.retrieval import data as r

# ---- loaders on the real files


@pytest.mark.parametrize("name", mc.DOMAINS)
def test_real_files_per_domain(name):
    tasks, pairs, first_turns, passages = REAL[name]
    qrels = r.load_qrels(r.qrels_path(RETRIEVAL, name))
    assert qrels.problems == []
    assert len(qrels.data) == tasks and sum(map(len, qrels.data.values())) == pairs
    assert {score for docs in qrels.data.values() for score in docs.values()} == {1}
    assert sum(mc.turn_group(t) == "first" for t in qrels.data) == first_turns
    for strategy in r.STRATEGIES:
        queries = r.load_queries(r.queries_path(RETRIEVAL, name, strategy))
        assert queries.problems == [] and set(queries.data) == set(qrels.data)
    corpus = r.load_corpus(os.path.join(CORPUS, f"{name}.jsonl.gz"))
    assert corpus.problems == [] and len(corpus.data) == passages
    assert all(pid in corpus.data for docs in qrels.data.values() for pid in docs)  # README: covers 100%


def test_real_query_strategies_differ_as_released():
    tid = "dd6b6ffd177f2b311abe676261279d2f<::>3"
    text = {s: r.load_queries(r.queries_path(RETRIEVAL, "clapnq", s)).data[tid] for s in r.STRATEGIES}
    assert text["lastturn"] == "|user|: Are the Arizona Cardinals and the Chicago Cardinals the same team?"
    assert text["questions"].count("|user|: ") == 3  # turns 1 to 3 of the user, one a line
    assert text["questions"].endswith(text["lastturn"])
    stripped = r.load_queries(r.queries_path(RETRIEVAL, "clapnq", "questions"), strip_tags=True).data[tid]
    assert stripped.split("\n") == ["where do the arizona cardinals play this week",
                                    "Do the Arizona Cardinals play outside the US?",
                                    "Are the Arizona Cardinals and the Chicago Cardinals the same team?"]


# ---- loaders: formats, layouts, bad input


def test_corpus_reads_jsonl_gz_and_official_zip_alike(tmp_path):
    lines = [json.dumps({"_id": "p1", "title": "T", "text": "one"}), json.dumps({"_id": "p2", "text": "two"})]
    plain = write_lines(tmp_path / "c.jsonl", lines)
    with gzip.open(tmp_path / "c.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with zipfile.ZipFile(tmp_path / "c.jsonl.zip", "w") as z:
        z.write(plain, "clapnq.jsonl")
    expected = {"p1": {"title": "T", "text": "one"}, "p2": {"title": "", "text": "two"}}
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zip"):
        loaded = r.load_corpus(str(tmp_path / name))
        assert (loaded.data, loaded.problems) == (expected, [])
    with zipfile.ZipFile(tmp_path / "two.jsonl.zip", "w") as z:
        z.write(plain, "a.jsonl")
        z.write(plain, "b.jsonl")
    with pytest.raises(ValueError, match=r"two\.jsonl\.zip: expected one \.jsonl or \.tsv member"):
        r.load_corpus(str(tmp_path / "two.jsonl.zip"))


def test_bad_corpus_lines_are_reported_with_file_and_line_and_skipped(tmp_path):
    path = write_lines(tmp_path / "c.jsonl", [
        json.dumps({"_id": "p1", "text": "ok"}),
        "{broken",
        "[1, 2]",
        json.dumps({"text": "no id"}),
        "",  # blank lines are not rows
        json.dumps({"_id": "p2", "text": 5}),
        json.dumps({"_id": "p1", "text": "again"}),
        json.dumps({"_id": "p3", "text": ""}),  # an empty passage is still a passage
    ])
    loaded = r.load_corpus(path)
    assert loaded.data == {"p1": {"title": "", "text": "ok"}, "p3": {"title": "", "text": ""}}
    assert loaded.problems == [
        f"{path}:2: not valid JSON (Expecting property name enclosed in double quotes)",
        f"{path}:3: not a JSON object",
        f"{path}:4: field '_id' missing or not text",
        f"{path}:6: field 'text' missing or not text",
        f"{path}:7: duplicate _id 'p1' (first at {path}:1; that one is kept)",
    ]


def test_bad_qrels_lines_are_reported_and_a_missing_header_is_read_as_data(tmp_path):
    path = write_lines(tmp_path / "q.tsv", [
        "c1::1\tp1\t1", "c1<::>1\tp2\t1", "c1<::>2\tp3", "c1<::>2\tp3\tyes", "\tp4\t1", "c1<::>2\tp5\t1",
        "c1<::>2\tp5\t0",  # a repeated pair keeps its last score, as the official loader does
    ])
    loaded = r.load_qrels(path)
    assert loaded.data == {"c1<::>1": {"p1": 1, "p2": 1}, "c1<::>2": {"p5": 0}}
    assert loaded.problems == [
        f"{path}:1: no header line (query-id, corpus-id, score); line 1 read as data",
        f"{path}:3: expected 3 tab-separated fields (query-id, corpus-id, score), found 2",
        f"{path}:4: score 'yes' is not an integer",
        f"{path}:5: empty query-id",
    ]


def test_queries_normalise_ids_and_report_bad_lines(tmp_path):
    path = write_lines(tmp_path / "lastturn.jsonl", [
        json.dumps({"_id": "c1::1", "text": "|user|: a?"}), json.dumps({"_id": "c1<::>1", "text": "dup"}),
        json.dumps({"_id": "c1<::>2"}),
    ])
    loaded = r.load_queries(path)
    assert loaded.data == {"c1<::>1": "|user|: a?"}
    assert loaded.problems == [f"{path}:2: duplicate _id 'c1<::>1' (first at {path}:1; that one is kept)",
                               f"{path}:3: field 'text' missing or not text"]


def test_missing_files_raise_naming_the_path(tmp_path):
    for load in (r.load_corpus, r.load_queries, r.load_qrels, mc.read_run):
        with pytest.raises(FileNotFoundError, match="nowhere.jsonl: no such file"):
            load(str(tmp_path / "nowhere.jsonl"))
    with pytest.raises(FileNotFoundError, match=r"none of these files exists: .*govt/rewrite\.jsonl"):
        r.queries_path(str(tmp_path), "govt", "rewrite")


def test_official_layout_is_found_too(tmp_path):
    (tmp_path / "cloud" / "qrels").mkdir(parents=True)
    write_lines(tmp_path / "cloud" / "cloud_rewrite.jsonl", [])
    qrels_file(tmp_path / "cloud" / "qrels" / "dev.tsv", [])
    assert r.queries_path(str(tmp_path), "mt-rag-ibmcloud-elser-512-100-20240502", "rewrite") == str(
        tmp_path / "cloud" / "cloud_rewrite.jsonl")
    assert r.qrels_path(str(tmp_path), "ibmcloud") == str(tmp_path / "cloud" / "qrels" / "dev.tsv")
    with pytest.raises(ValueError, match="unknown query strategy 'fullconv'"):
        r.queries_path(str(tmp_path), "cloud", "fullconv")


# ---- ids and collection names


def test_task_ids_turns_and_collections_normalise():
    assert mc.task_id("dd6b::3") == mc.task_id("dd6b<::>3") == "dd6b<::>3"
    assert mc.task_id("plain") == "plain"
    assert (mc.turn("dd6b::1"), mc.turn("dd6b<::>12")) == (1, 12)
    assert (mc.turn_group("dd6b<::>1"), mc.turn_group("dd6b::2")) == ("first", "later")
    with pytest.raises(ValueError, match="task id 'dd6b<::>x'"):
        mc.turn("dd6b<::>x")
    assert [mc.domain(c) for c in mc.COLLECTIONS.values()] == list(mc.DOMAINS)
    assert [mc.domain(c) for c in ("clapnq", "ibmcloud", "Cloud", "fiqa", " govt ")] == [
        "clapnq", "cloud", "cloud", "fiqa", "govt"]
    with pytest.raises(ValueError, match="unknown mtRAG collection 'mt-rag-nq-x'"):
        mc.domain("mt-rag-nq-x")


def test_run_rows_round_trip_in_the_official_format(tmp_path):
    corpus = {"p1": {"title": "T1", "text": "one"}}
    built = mc.run_row("c1::2", "ibmcloud", [("p1", 2), ("p9", 1.5)], corpus)
    assert built == {"task_id": "c1<::>2", "Collection": "mt-rag-ibmcloud-elser-512-100-20240502", "contexts": [
        {"document_id": "p1", "score": 2.0, "text": "one", "title": "T1"},
        {"document_id": "p9", "score": 1.5, "text": "", "title": ""}]}
    path = str(tmp_path / "run" / "run.jsonl")
    assert mc.write_jsonl(path, [built, row("c1<::>3", "fiqa")]) == 2
    assert mc.read_run(path).data == [built, row("c1<::>3", "fiqa")]


def test_unusable_run_rows_are_reported_and_skipped(tmp_path):
    path = write_lines(tmp_path / "run.jsonl", [json.dumps(x) for x in [
        {"task_id": "a<::>1", "collection": "clapnq", "contexts": [{"document_id": "p", "score": 1}]},
        {"task_id": "a<::>2", "contexts": []},
        row("a<::>3", "nq"),
        {"task_id": "a<::>4", "Collection": "clapnq"},
        row("a<::>5", "clapnq", ("p", "high")),
        row("a<::>6", "clapnq", ("", 1)),
        row("a<::>7", "clapnq", ("p", True)),
    ]] + ['{"task_id": "a<::>8", "Collection": "govt", "contexts": [{"document_id": "p", "score": NaN}]}'])
    loaded = mc.read_run(path)
    assert [(x["task_id"], x["Collection"]) for x in loaded.data] == [("a<::>1", "clapnq")]  # sample_data spelling
    assert [p.split(": ", 1)[0] for p in loaded.problems] == [f"{path}:{n}" for n in range(2, 9)]
    assert loaded.problems[0].endswith("field 'Collection' missing or not text")
    assert "unknown mtRAG collection 'nq'" in loaded.problems[1]
    assert loaded.problems[2].endswith("field 'contexts' missing or not a list")
    assert loaded.problems[3].endswith("field 'contexts[0].score' missing or not a finite number")
    assert loaded.problems[4].endswith("field 'contexts[0].document_id' missing or not text")




def test_qrels_rows_after_a_blank_unreadable_or_bad_line_are_still_read(tmp_path):
    """A blank line, a line of tabs only, a line not UTF-8, one past csv's field size limit and one with an empty
    corpus-id each end only their own line: the judgements after them are read, each bad line named."""
    import csv
    path = tmp_path / "q.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\nq1\tp1\t1\n\nq1\tp2\t\xff\n\t\n\t\t\n"
                     + b"q9\t" + b"x" * 200 + b"\t1\nq2\t\t1\nq1\tp3\t2\nq3\tp9\t1\n")
    old = csv.field_size_limit(100)
    try:
        loaded = r.load_qrels(str(path))
    finally:
        csv.field_size_limit(old)
    assert loaded.data == {"q1": {"p1": 1, "p3": 2}, "q3": {"p9": 1}}
    assert loaded.problems == [f"{path}:4: not valid UTF-8 (byte 0xff at column 7)",
                               f"{path}:7: not a TSV line (field larger than field limit (100))",
                               f"{path}:8: empty corpus-id"]
