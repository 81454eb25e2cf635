"""mtRAG generation's retrieval settings (docs/protocols.md 3): which passages the generator and judges see in
Reference, Reference+RAG and Full RAG, read from the task or from a run file, and what check_items reports
before any engine starts."""
import pytest
from mtrag_tasks import OPTS, g, item_of, opts, task, write_jsonl

from benchmarks.mtrag.generation.passages import setting_passages


def test_rag_settings_take_retrieved_passages_from_the_task(tmp_path):
    retrieved = [{"document_id": d, "text": f"Passage {d}."} for d in ("d2", "r1", "r2", "r3", "r4")]
    item = item_of(tmp_path, task(retrieved_contexts=retrieved))
    ids = [p["document_id"] for p in setting_passages(item, opts({"setting": "full_rag", "top_k": 2}))]
    assert ids == ["d2", "r1"]
    ids = [p["document_id"] for p in setting_passages(item, opts({"setting": "reference_rag"}))]
    assert ids == ["d1", "d2", "r1", "r2", "r3"]  # the references, then retrieved ones they lack, 5 in all
    assert [p["document_id"] for p in setting_passages(item, OPTS)] == ["d1", "d2"]
    (generation,) = g.expand(item, "generative", opts({"setting": "full_rag", "top_k": 2}))
    assert generation["messages"][0]["content"].endswith("PASSAGE 1\nPassage d2.\n\nPASSAGE 2\nPassage r1.")


def test_a_run_written_by_the_retrieval_flow_feeds_the_rag_settings(tmp_path):
    from benchmarks.mtrag.common import run_row
    from benchmarks.mtrag.common import write_jsonl as write_run

    corpus = {"d2": {"title": "France", "text": "France is in Europe."},
              "r1": {"title": "", "text": "Lyon is a city."}, "r2": {"title": "", "text": "Nice is warm."}}
    path = str(tmp_path / "runs" / "run.jsonl")
    write_run(path, [run_row("c1::2", "clapnq", [("r1", 9.0), ("d2", 8.0), ("r2", 7.0)], corpus)])
    item = item_of(tmp_path, task())
    full = setting_passages(item, opts({"setting": "full_rag", "retrieved_file": path, "top_k": 2}))
    assert [(p["document_id"], p["text"]) for p in full] == [("r1", "Lyon is a city."), ("d2", "France is in Europe.")]
    both = setting_passages(item, opts({"setting": "reference_rag", "retrieved_file": path, "top_k": 3}))
    assert [p["document_id"] for p in both] == ["d1", "d2", "r1"]  # d2 is a reference already: not twice


def test_rag_settings_read_a_run_file_and_report_what_is_missing(tmp_path):
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"task_id": "c1::2", "Collection": "mt-rag-clapnq-elser-512-100-20240503",
         "contexts": [{"document_id": "r9", "score": 3.0, "text": "Run passage."},
                      {"document_id": "r8", "score": 2.0, "text": ""}]}])
    item = item_of(tmp_path, task())
    other = item_of(tmp_path, task(tid="c5<::>2"), "other.jsonl")
    raw = {"setting": "full_rag", "retrieved_file": run, "top_k": 1}
    options = opts(raw)
    assert [p["text"] for p in setting_passages(item, options)] == ["Run passage."]
    (row,) = g.combine(other, [], "generative", options)
    assert row["error"] == (f"task c5<::>2: setting full_rag needs retrieved passages, and options.retrieved_file "
                            f"{run} has none for it")
    assert g.expand(other, "generative", options) == []
    problems = g.check_items([item, other], options)
    assert problems == [f"options.setting: full_rag: 1 task(s) without usable retrieved passages, e.g. {row['error']}"]
    with pytest.raises(ValueError, match="retrieved passage r8 .* has no text"):
        setting_passages(item, opts({**raw, "top_k": 2}))
    assert g.check_items([item], opts({"setting": "full_rag"}))[0].startswith(
        "options.setting: full_rag: 1 task(s) without usable retrieved passages, e.g. task c1<::>2: setting "
        "full_rag needs retrieved passages, and the task's field 'retrieved_contexts' has none for it")


def test_check_items_reports_unknown_task_ids_and_missing_predictions(tmp_path):
    item = item_of(tmp_path, task())
    assert g.check_items([item], opts({"task_ids": ["c1<::>2", "zz<::>1"]})) == [
        "options.task_ids: 1 task id(s) not in the data, e.g. zz<::>1"]
    assert g.check_items([item], opts({"responses": "given"})) == [
        "options.responses: given, but 1 task(s) have no predictions[0].text, e.g. c1<::>2"]


