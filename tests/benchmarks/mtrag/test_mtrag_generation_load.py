"""mtRAG generation tasks (docs/protocols.md 3): the loader on the two released task files and on bad rows.

Real data, bundled: data/mtrag/generation (MTRAG-UN's 507 reference tasks; the authors' 10-response sample)."""
from collections import Counter

import pytest
from mtrag_tasks import REFERENCE, SAMPLE, g, item_of, task, write_jsonl


@pytest.fixture(scope="module")
def reference_items():
    return list(g.load_items(REFERENCE))


def test_mtragun_reference_counts(reference_items):
    items = reference_items
    assert len(items) == 507 and all(i["error"] is None for i in items)
    assert len({i["item_id"] for i in items}) == 507
    assert Counter(i["answerability"] for i in items) == {"ANSWERABLE": 285, "UNANSWERABLE": 97,
                                                          "UNDERSPECIFIED": 78, "PARTIAL": 47}
    assert Counter(i["turn_group"] for i in items) == {"first": 42, "later": 465}
    assert Counter(i["collection"] for i in items) == {"govt": 157, "clapnq": 142, "cloud": 131, "fiqa": 77}
    assert Counter(i["multi_turn"] for i in items) == {"Follow-up": 330, "N/A": 103, "Clarification": 74}
    assert Counter((i["answerability"], len(i["passages"]) > 0) for i in items) == {
        ("ANSWERABLE", True): 285, ("PARTIAL", True): 47, ("UNANSWERABLE", False): 97,
        ("UNDERSPECIFIED", True): 45, ("UNDERSPECIFIED", False): 33}
    assert all(i["turns"][-1]["speaker"] == "user" and i["prediction"] is None for i in items)
    assert all(i["turn"] == sum(t["speaker"] == "user" for t in i["turns"]) for i in items)
    first = items[0]
    assert first["item_id"] == "mtrag_generation/18ef26058d321c5d96ca3ebf8117789e<::>7"
    assert (first["turn"], first["collection"], first["answerability"], len(first["passages"])) == (
        7, "fiqa", "ANSWERABLE", 4)


def test_sample_responses_10():
    items = list(g.load_items(SAMPLE))
    assert [i["error"] for i in items] == [None] * 10
    assert [i["task_id"] for i in items] == [f"dd6b6ffd177f2b311abe676261279d2f<::>{n}" for n in range(1, 9)] + [
        "5b2404d71f9ff7edabddb3b1a8b329e7<::>1", "5b2404d71f9ff7edabddb3b1a8b329e7<::>2"]  # '::' normalised
    assert [i["answerability"] for i in items] == ["UNANSWERABLE"] + ["ANSWERABLE"] * 9
    assert [len(i["passages"]) for i in items] == [0, 3, 4, 2, 3, 2, 2, 2, 2, 3]
    assert [i["turn_group"] for i in items] == ["first"] + ["later"] * 7 + ["first", "later"]
    assert [i["multi_turn"] for i in items] == ["N/A", "Clarification", "Clarification", "Follow-up", "Follow-up",
                                                "Follow-up", "Clarification", "Follow-up", "N/A", "Follow-up"]
    assert items[7]["question_type"] == "Explanation+Factoid"
    assert {i["collection"] for i in items} == {"clapnq", "govt"}
    assert items[0]["prediction"].startswith("I do not have specific information about the current schedule")
    assert items[1]["reference"].startswith("The Arizona Cardinals do play outside the United States.")


def test_bad_rows_are_error_items_naming_file_row_and_field(tmp_path):
    good = task()
    rows = [
        "{not json",
        {**good, "task_id": ""},
        {**good, "task_id": "c2<::>1", "Collection": "mt-rag-banking"},
        {**good, "task_id": "c3<::>1", "answerability": ["MAYBE"]},
        {**good, "task_id": "c4<::>1", "input": good["input"][:2]},
        {**good, "task_id": "c5<::>1", "contexts": [{"document_id": "d1", "text": "ok"}, {"document_id": "d2"}]},
        {**good, "task_id": "c6<::>1", "targets": []},
        {**good, "task_id": "c7<::>1", "predictions": [{"score": 1}]},
        {**good, "task_id": "c8<::>1", "turn": "two"},
        good,
        {**good, "Collection": "clapnq"},
    ]
    path = write_jsonl(tmp_path / "tasks.jsonl", rows)
    items = list(g.load_items(path))
    assert len(items) == len(rows)
    errors = [i["error"] for i in items]
    expected = ["not valid JSON", "field 'task_id' missing", "field 'Collection': unknown mtRAG collection",
                "field 'answerability': 'MAYBE'", "field 'input[1]': the last turn must be the user's question",
                "field 'contexts[1].text' missing", "field 'targets[0].text' missing",
                "field 'predictions[0].text' missing", "field 'turn': 'two'", None,
                "field 'task_id': duplicate of"]
    for n, (error, want) in enumerate(zip(errors, expected, strict=True), 1):
        if want is None:
            assert error is None
        else:
            assert error.startswith(f"{path}: row {n}: ") and want in error, error
    assert items[9]["item_id"] == "mtrag_generation/c1<::>2"


def test_labels_from_the_last_turns_enrichments_and_counted_turns(tmp_path):
    row = task(tid="c9::3")
    for key in ("answerability", "Question Type", "Multi-Turn", "turn"):
        row.pop(key)
    row["input"][-1]["enrichments"] = {"Answerability": ["partial"], "Question Type": ["Keyword", "Composite"]}
    item = item_of(tmp_path, row)
    assert (item["task_id"], item["answerability"], item["question_type"], item["multi_turn"], item["turn"]) == (
        "c9<::>3", "PARTIAL", "Composite+Keyword", "N/A", 2)


