"""mtRAG retrieval queries, runs and Table 3 (docs/protocols.md 3): the data found in either layout, the
released queries per strategy, our own LLM rewrite prompt and how its answer is read, a ranking through run
row, score and prediction row, and the table on hand-made metrics."""
import pytest
from bundled_data import CORPUS, RETRIEVAL

from benchmarks.mtrag.common import COLLECTIONS
from benchmarks.mtrag.retrieval import MEASURES, MtragRetrieval, Options
from benchmarks.mtrag.retrieval.data import corpus_file, retrieval_root
from benchmarks.mtrag.retrieval.queries import clean_rewrite, query_rows, rewrite_messages, user_turns
from benchmarks.options import typed_options

b = MtragRetrieval()


def test_table_3_layout_from_hand_made_metrics():
    def cell(model, **strategies):
        blocks = {s: {"all": {m: v for m in MEASURES}} for s, v in strategies.items()}
        return {"benchmark": b.name, "model": model, "strategies": blocks}

    text = b.table_text([cell("bm25", rewrite=0.5, lastturn=0.25), cell("minilm", lastturn=0.125)])
    lines = text.splitlines()
    assert lines[1].split(" | ")[:3] == ["Strategy     ", "Retriever", "  R@1"]
    assert [line.split(" | ")[0].strip() for line in lines[3:]] == ["Last Turn", "Last Turn", "Query Rewrite"]
    assert [line.split(" | ")[1].strip() for line in lines[3:]] == ["bm25", "minilm", "bm25"]
    assert lines[3].split(" | ")[2:] == ["0.250"] * 4 + [" 0.250"] * 3 + ["  0.250"]
    assert lines[5].endswith("0.500")


def test_files_are_found_in_either_layout(tmp_path):
    assert corpus_file([RETRIEVAL, CORPUS], "ibmcloud").endswith("corpus/cloud.jsonl.gz")
    assert retrieval_root([CORPUS, RETRIEVAL], "govt") == RETRIEVAL
    official = tmp_path / "corpora" / "passage_level"
    official.mkdir(parents=True)
    (official / "govt.jsonl.zip").write_bytes(b"")
    assert corpus_file([str(tmp_path / "corpora")], "govt") == str(official / "govt.jsonl.zip")
    with pytest.raises(FileNotFoundError, match="fiqa"):
        corpus_file([str(tmp_path)], "fiqa")
    rows, problems = query_rows(RETRIEVAL, "govt", ["lastturn", "rewrite"], limit=3)
    assert problems == [] and len(rows) == 6
    assert [r["task_id"] for r in rows[:3]] == [r["task_id"] for r in rows[3:]]  # same tasks per strategy
    assert not any("|user|" in r["query"] for r in rows)


def test_user_turns_and_the_rewrite_prompt():
    text = '|user|: "What are the sheltered rooms designated for use?\n|user|: What items should I keep?'
    turns = user_turns(text)
    assert turns == ['"What are the sheltered rooms designated for use?', "What items should I keep?"]
    assert user_turns("first\nsecond") == ["first", "second"]
    messages = rewrite_messages(turns)
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert messages[-1]["content"] == ('Earlier questions:\n1. "What are the sheltered rooms designated for use?\n'
                                       "Last question: What items should I keep?")
    assert "(none)" in rewrite_messages(["Only one turn?"])[-1]["content"]
    assert clean_rewrite('Standalone question: "Where is X?"\nextra', "last") == ("Where is X?", False)
    assert clean_rewrite("", "last") == ("last", True) and clean_rewrite(None, "last") == ("last", True)
    assert any("rewriter" in p for p in b.problems(typed_options(Options, {"strategies": ["llm_rewrite"]})))


def test_the_benchmark_reads_a_domain_and_rewrites_llm_rewrite_rows():
    options = typed_options(Options, {"domains": ["govt"], "strategies": ["lastturn", "llm_rewrite"],
                                      "rewriter": "smollm2", "rewrite_max_tokens": 32})
    path, passages, problems = b.corpus([CORPUS, RETRIEVAL], "govt")
    assert path.endswith("govt.jsonl.gz") and len(passages) == 833 and problems == []
    qrels, problems = b.qrels([CORPUS, RETRIEVAL], "govt")
    assert len(qrels) == 201 and problems == []
    rows, problems = b.queries([CORPUS, RETRIEVAL], "govt", options, limit=2)
    assert problems == [] and [(r["strategy"], r["query"] is None) for r in rows] == [
        ("lastturn", False), ("lastturn", False), ("llm_rewrite", True), ("llm_rewrite", True)]
    assert b.rewriter(options) == "smollm2"
    request = b.rewrite_request(rows[2], options)
    assert request == {"messages": rewrite_messages(rows[2]["turns"]), "max_tokens": 32}
    done, fell_back = b.rewritten(rows[2], "Rewrite: What is it?")
    assert (done["query"], fell_back, "turns" in done) == ("What is it?", False, False)
    assert b.rewritten(rows[3], None) == ({**{k: v for k, v in rows[3].items() if k != "turns"},
                                           "query": rows[3]["turns"][-1]}, True)


def test_a_ranking_becomes_a_run_row_a_score_and_a_prediction_row():
    query = {"item_id": "mtrag_retrieval/govt/t<::>2/rewrite", "domain": "govt", "task_id": "t<::>2",
             "strategy": "rewrite", "query": "q"}
    run_row = b.run_row(query, [("p1", 2.0), ("p2", 1.0)], {"p1": {"title": "T", "text": "one"}})
    assert run_row == {"task_id": "t<::>2", "Collection": COLLECTIONS["govt"], "contexts": [
        {"document_id": "p1", "score": 2.0, "text": "one", "title": "T"},
        {"document_id": "p2", "score": 1.0, "text": "", "title": ""}]}
    per_query, metrics = b.score([run_row], {"t<::>2": {"p2": 1}})
    assert metrics["all"]["recall_1"] == 0.0 and metrics["all"]["recall_3"] == 1.0
    ranked = {"t<::>2": {**query, "document_ids": ["p1", "p2"], "scores": [2.0, 1.0]}}
    (row,) = b.prediction_rows(per_query, ranked, "rewrite")
    # `turn` the turn's number, as mtRAG generation's rows have it (one type per column across the run's
    # predictions/), and `turn_group` Table 3's first/later split
    assert {k: row[k] for k in ("item_id", "subset", "turn", "turn_group", "query", "document_ids", "recall_3",
                                "correct")} == {
        "item_id": query["item_id"], "subset": "govt", "turn": 2, "turn_group": "later", "query": "q",
        "document_ids": ["p1", "p2"], "recall_3": 1.0, "correct": None}
    assert {k: row[k] for k in ("benchmark", "strategy", "task_id", "scores", "error")} == {
        "benchmark": "mtrag_retrieval", "strategy": "rewrite", "task_id": "t<::>2", "scores": [2.0, 1.0],
        "error": None}


def test_the_whole_table_3_text_orders_strategies_as_the_paper_and_ties_as_given():
    # Issue 64, laid out by hand: the paper's strategies in its order, ours after them, an unknown one last;
    # two "Last Turn" rows in the cells' order; a missing number, a missing "all" and a missing model as "-"/"?".
    metrics = [{"model": "bm25", "config": "my_ret", "strategies": {
                    "hyde": {"all": {m: 0.5 for m in MEASURES}},
                    "questions": {"all": {m: i / 8 for i, m in enumerate(MEASURES)}},
                    "lastturn": {"all": {"recall_1": 0.1234, "ndcg_cut_10": 1.0}}}},
               {"strategies": {"llm_rewrite": {"all": None}, "rewrite": {"all": {m: 0.25 for m in MEASURES}},
                               "lastturn": {}}},
               {"model": "none", "strategies": None}]
    assert b.table_text(metrics).split("\n") == [
        "mtrag_retrieval, my_ret (mtRAG retrieval): Table 3 layout; all domains, weighted as the authors' script",
        "Strategy           | Retriever |   R@1 |   R@3 |   R@5 |  R@10 | nDCG@1 | nDCG@3 | nDCG@5 | nDCG@10",
        "-------------------+-----------+-------+-------+-------+-------+--------+--------+--------+--------",
        "Last Turn          | bm25      | 0.123 |     - |     - |     - |      - |      - |      - |   1.000",
        "Last Turn          | ?         |     - |     - |     - |     - |      - |      - |      - |       -",
        "Query Rewrite      | ?         | 0.250 | 0.250 | 0.250 | 0.250 |  0.250 |  0.250 |  0.250 |   0.250",
        "Questions          | bm25      | 0.000 | 0.125 | 0.250 | 0.375 |  0.500 |  0.625 |  0.750 |   0.875",
        "LLM Rewrite (ours) | ?         |     - |     - |     - |     - |      - |      - |      - |       -",
        "hyde               | bm25      | 0.500 | 0.500 | 0.500 | 0.500 |  0.500 |  0.500 |  0.500 |   0.500"]
    assert b.table_text([{"model": "x", "config": "mtrag_retrieval", "strategies": {}}]).split("\n") == [
        "mtRAG retrieval: Table 3 layout; all domains, weighted as the authors' script",
        "Strategy | Retriever | R@1 | R@3 | R@5 | R@10 | nDCG@1 | nDCG@3 | nDCG@5 | nDCG@10",
        "---------+-----------+-----+-----+-----+------+--------+--------+--------+--------"]
