"""Loading GTI/GTU rows: the two released rows, and bad rows as error items naming file, row and field."""
from utility_cases import BENCH, REAL, write_jsonl

from benchmarks.protocol import benchmark
from benchmarks.utility import UtilityJudgments, item_id


def row(**changes):
    base = {"question": "who wrote hamlet", "passage": ["a", "b", "c"], "ground_truth_label": [0, 1, 0]}
    return {**base, **changes}


def test_the_two_released_rows_load():
    items = list(BENCH.load_items(str(REAL)))
    assert [i["error"] for i in items] == [None, None]
    assert [i["subset"] for i in items] == ["GTI", "GTI"]
    assert [i["labels"].index(1) for i in items] == [3, 9]
    assert items[0]["question"] == "definition of the paleo diet" and len(items[0]["passages"]) == 10
    assert items[0]["item_id"] == item_id({"question": "definition of the paleo diet"})
    assert items[0]["item_id"].startswith("utility/") and items[0]["answers"] == []
    assert isinstance(benchmark("utility"), UtilityJudgments)


def test_bad_rows_are_error_items_naming_file_row_and_field(tmp_path):
    path = write_jsonl(tmp_path / "gti.jsonl", [
        row(id="q1", dataset="NQ", answers=["Shakespeare"], passages_types=["cp", "gold", "hrnp"]),
        row(question="q2", ground_truth_label=[0, 1]),
        row(question="q3", passage=["a", "  ", "c"]),
        {k: v for k, v in row(question="q4").items() if k != "ground_truth_label"},
        {"passage": ["a"], "ground_truth_label": [1]},
        "{not json",
        row(question="q7", ground_truth_label=[0, 2, 0]),
        row(id="q1"),
        row(question="q9", answers="Shakespeare"),
        row(question="q10", passages_types=["cp"]),
    ])
    items = list(BENCH.load_items(path))
    errors = [i["error"] for i in items]
    assert errors[0] is None and items[0]["item_id"] == "utility/q1" and items[0]["subset"] == "NQ"
    assert items[0]["answers"] == ["Shakespeare"] and items[0]["passages_types"] == ["cp", "gold", "hrnp"]
    assert errors[1] == f"{path}: row 2: field 'ground_truth_label': 2 labels for 3 passages"
    assert errors[2] == f"{path}: row 3: field 'passage': passage 1 empty or not text"
    assert errors[3] == f"{path}: row 4: field 'ground_truth_label' missing"
    assert errors[4] == f"{path}: row 5: field 'question' missing"
    assert errors[5].startswith(f"{path}: row 6: not valid JSON")
    assert errors[6] == f"{path}: row 7: field 'ground_truth_label': labels must be 0 or 1"
    assert errors[7] == f"{path}: row 8: duplicate of {path}: row 1 (same id, or same question)"
    assert errors[8] is None and items[8]["answers"] == ["Shakespeare"] and items[8]["subset"] == "GTI"
    assert errors[9] == f"{path}: row 10: field 'passages_types': expected a list of 3"
    assert len({i["item_id"] for i in items}) == len(items)  # error items keep distinct ids



def test_error_items_keep_the_rows_id_and_dataset_unless_a_good_row_has_that_id(tmp_path):
    path = write_jsonl(tmp_path / "gti.jsonl", [
        row(id="q1"),
        row(question="q2", ground_truth_label=[0, 1], dataset="NQ"),
        "{not json",
        {"passage": ["a"], "ground_truth_label": [1]},
        row(id="q1", dataset="HQ"),
        {"id": "q1", "passage": "not a list"},
    ])
    items = list(BENCH.load_items(path))
    assert [(i["item_id"], i["subset"]) for i in items[1:]] == [
        (item_id({"question": "q2"}), "NQ"),  # its own id: no good row has it
        (f"utility/{path}:3", "GTI"),  # unreadable: named by file and row, the default subset
        (f"utility/{path}:4", "GTI"),  # no question and no id to name it by
        (f"utility/{path}:5", "HQ"),  # a duplicate of row 1's id
        (f"utility/{path}:6", "GTI"),  # bad, and row 1 (good) has its id
    ]
    assert all(set(i) == {"item_id", "benchmark", "subset", "source", "row", "error"} for i in items[1:])
    assert [(i["source"], i["row"], i["benchmark"]) for i in items[1:]] == [(path, n, "utility") for n in range(2, 7)]
    assert items[0]["error"] is None and (items[0]["source"], items[0]["row"]) == (path, 1)
def test_every_field_wrong_in_a_row_is_named_at_once(tmp_path):
    path = write_jsonl(tmp_path / "gti.jsonl", [{"id": "q1", "passage": "not a list", "answers": 3, "dataset": 1}])
    [item] = BENCH.load_items(path)
    assert item["error"] == (f"{path}: row 1: field 'question' missing; field 'passage' not a non-empty list; "
                             "field 'ground_truth_label' missing; field 'answers': expected a list of strings; "
                             "field 'dataset': not text")
