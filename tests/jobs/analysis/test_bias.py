"""Issue 30's bias columns with hand-computed expectations on a constructed file: the length baselines and
each model's accuracy split by whether the chosen response is the longer one (the contract, through
`ragjudge aggregate`), self-preference by the families of conf/model_families.yaml, and the position numbers."""
import fnmatch
import json
from pathlib import Path

import jsonschema
import pytest
from test_leaderboard import CONTRACT

from benchmarks.rag_rewardbench import load_items
from jobs.analysis import plots
from jobs.analysis import report as report_module
from jobs.analysis.bias import add_bias, length_baselines, length_sides, split_accuracy
from jobs.analysis.bias_page import bias_section
from jobs.analysis.report_view import BenchmarkView
from jobs.analysis.response_pairs import ResponsePair, pair_problem, response_pairs
from jobs.cli import main
from jobs.config import ConfigError
from jobs.loading.families import family_of, load_families, model_names
from jobs.loading.files import PROJECT_CONF
from scripts.synthetic_run import build_run

# item -> (subset, chosen, reject, chosen_model, reject_model); chars: i1 4>2, i2 1<3, i3 2=2 (tie), i4 5>1,
# i5 3<6, i6 6>2
PAIRS = {
    "i1": ("helpful-a", "aaaa", "bb", "gpt-4o-2024-08-06", "Llama-3.1-8B-Instruct"),
    "i2": ("helpful-a", "a", "bbb", "Llama-3.1-8B-Instruct", "Mistral-Nemo-Instruct-2407"),
    "i3": ("helpful-a", "aa", "bb", "claude-3-5-haiku-20241022", "gpt-4o-mini"),
    "i4": ("reason-b", "aaaaa", "b", "Qwen2.5-72B-Instruct", "gpt-4o-mini"),
    "i5": ("reason-b", "aaa", "bbbbbb", "Llama-3.2-3B-Instruct", "Llama-3.1-8B-Instruct"),
    "i6": ("reason-b", "aaaaaa", "bb", "gpt-4o-mini", "Llama-3.2-3B-Instruct"),
}
CORRECT = {  # model -> correct per item i1..i6 (None: a failed row, not counted)
    "llama_3_1_8b_instruct": [1, 1, 0, 1, 0, 0],
    "gpt_4o": [1, 1, 1, 1, 1, 0],
    "internlm2_7b_reward": [None, 0, 1, 0, 1, 1],
}


def _row(model, item, correct):
    subset, chosen, reject, chosen_model, reject_model = PAIRS[item]
    return {"model": model, "item_id": f"rag_rewardbench/{item}", "subset": subset, "chosen": chosen,
            "reject": reject, "chosen_model": chosen_model, "reject_model": reject_model,
            "correct": None if correct is None else float(correct)}


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bias")
    rows = [_row(m, f"i{k + 1}", c) for m, values in CORRECT.items() for k, c in enumerate(values)]
    rows.append({**_row("gpt_4o", "i1", 0), "item_id": "rag_rewardbench/i7", "chosen": 123})  # bad: skipped
    path = folder / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", str(path),
                 "--out", str(folder / "out")]) == 0
    board = json.loads((folder / "out" / "leaderboard.json").read_text())
    return {"board": board, "bench": board["benchmarks"]["rag_rewardbench"], "path": path}


def test_the_contract_through_ragjudge_aggregate(board, capsys):
    jsonschema.validate(board["board"], CONTRACT)
    bench = board["bench"]
    # 5 pairs differ in length (i3 is a tie): the chosen one is longer in i1, i4, i6
    assert bench["baselines"]["longer_wins"] == {"accuracy": 0.6, "n": 5}
    assert bench["baselines"]["shorter_wins"] == {"accuracy": pytest.approx(0.4), "n": 5}
    assert bench["baselines"]["unit"] == "characters"
    length = {m["model"]: m["bias"]["length"] for m in bench["models"]}
    # llama: longer i1, i4, i6 -> 1, 1, 0; shorter i2, i5 -> 1, 0; i3 (tie) in neither
    assert length["llama_3_1_8b_instruct"]["chosen_longer"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    assert length["llama_3_1_8b_instruct"]["chosen_shorter"] == {"accuracy": 0.5, "n": 2}
    assert length["llama_3_1_8b_instruct"]["gap"] == pytest.approx(1 / 6)
    # gpt_4o: longer 1, 1, 0; shorter 1, 1
    assert length["gpt_4o"]["chosen_longer"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    assert length["gpt_4o"]["chosen_shorter"] == {"accuracy": 1.0, "n": 2}
    # internlm2: i1 failed (not counted): longer i4, i6 -> 0, 1; shorter i2, i5 -> 0, 1
    assert length["internlm2_7b_reward"]["chosen_longer"] == {"accuracy": 0.5, "n": 2}
    assert length["internlm2_7b_reward"]["chosen_shorter"] == {"accuracy": 0.5, "n": 2}
    lo, hi = length["llama_3_1_8b_instruct"]["gap_ci95"]
    assert -1.0 <= lo <= 1 / 6 <= hi <= 1.0


def test_a_bad_row_is_named_and_the_good_rows_still_count(board, capsys):
    path = board["path"]
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", str(path)]) == 0
    assert f"skipped {path}: row 19: key 'chosen': 123 is not text" in capsys.readouterr().err
    gpt = next(m for m in board["bench"]["models"] if m["model"] == "gpt_4o")
    assert gpt["n"] == 6  # i7 left out


def test_baselines_per_subset(board):
    by_subset = board["bench"]["baselines"]["by_subset"]
    assert by_subset["helpful-a"]["longer_wins"] == {"accuracy": 0.5, "n": 2}  # i1 longer, i2 shorter, i3 tie
    assert by_subset["reason-b"]["longer_wins"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    assert by_subset["reason-b"]["shorter_wins"] == {"accuracy": pytest.approx(1 / 3), "n": 3}


def test_self_preference_by_family(board):
    bias = {m["model"]: m["bias"] for m in board["bench"]["models"]}
    # llama: own chosen only in i2 (right); own rejected only in i1 (right), i6 (wrong); i5 is llama vs llama
    llama = bias["llama_3_1_8b_instruct"]["self_preference"]
    assert llama["family"] == "llama"
    assert (llama["own_chosen"], llama["own_rejected"]) == ({"accuracy": 1.0, "n": 1}, {"accuracy": 0.5, "n": 2})
    assert llama["gap"] == 0.5
    # openai: own chosen i1 (right), i6 (wrong); own rejected i3, i4 (both right)
    gpt = bias["gpt_4o"]["self_preference"]
    assert (gpt["family"], gpt["own_chosen"], gpt["own_rejected"], gpt["gap"]) == (
        "openai", {"accuracy": 0.5, "n": 2}, {"accuracy": 1.0, "n": 2}, -0.5)
    assert "self_preference" not in bias["internlm2_7b_reward"]  # no internlm response in the data


def test_position_and_token_lengths_join_the_same_block():
    pairs = {"x": ResponsePair(10, 5, chosen_tokens=2, reject_tokens=3),
             "y": ResponsePair(5, 5, chosen_tokens=4, reject_tokens=1)}
    view = BenchmarkView("b", "b", outcomes={"judge": {"x": 1.0, "y": 0.5}}, subsets={"x": "s", "y": "s"},
                         position={"judge": {"accuracy_first": 0.75, "accuracy_second": 0.25, "n": 2}}, pairs=pairs)
    board = {"models": [{"model": "judge"}]}
    add_bias(board, view, families={}, tokenizer="whitespace")
    bias = board["models"][0]["bias"]
    assert bias["position"] == {"accuracy_first": 0.75, "accuracy_second": 0.25, "n": 2}
    # characters: x longer, y a tie; tokens: x shorter, y longer
    assert bias["length"]["chosen_longer"] == {"accuracy": 1.0, "n": 1}
    assert bias["length"]["chosen_shorter"] == {"accuracy": None, "n": 0} and bias["length"]["gap"] is None
    assert bias["length_tokens"]["chosen_longer"] == {"accuracy": 0.5, "n": 1}
    assert bias["length_tokens"]["chosen_shorter"] == {"accuracy": 1.0, "n": 1}
    assert board["baselines"]["longer_wins"] == {"accuracy": 1.0, "n": 1}
    assert board["baselines"]["tokens"]["tokenizer"] == "whitespace"
    assert board["baselines"]["tokens"]["longer_wins"] == {"accuracy": 0.5, "n": 2}


def test_lengths_and_splits_by_hand():
    pairs = {"a": ResponsePair(3, 1), "b": ResponsePair(1, 3), "c": ResponsePair(2, 2)}
    assert length_sides(pairs) == {"a": 1, "b": -1, "c": 0}
    assert length_sides(pairs, "tokens") == {}  # no tokenizer counted them
    assert length_baselines(pairs, {"a": "s", "b": "t", "c": "t"})["by_subset"]["t"]["longer_wins"] == {
        "accuracy": 0.0, "n": 1}
    split = split_accuracy({"a": 1.0, "b": 0.0, "c": 1.0}, {"a": 1, "b": -1, "c": 0}, ("x", "y"), "k", 100)
    assert (split["x"], split["y"], split["gap"], split["gap_ci95"]) == (
        {"accuracy": 1.0, "n": 1}, {"accuracy": 0.0, "n": 1}, 1.0, [1.0, 1.0])


def test_response_pairs_take_the_first_row_of_an_item_that_carries_both_texts():
    rows = [{"item_id": "x", "chosen": None, "reject": "bb"}, {"item_id": "x", "chosen": "a", "reject": "bb"},
            {"item_id": "x", "chosen": "aaaa", "reject": "b"}, {"item_id": "y", "correct": 1.0}]
    assert response_pairs(rows) == {"x": ResponsePair(1, 2)}
    assert response_pairs(rows, count_tokens=lambda t: 10 * len(t))["x"].reject_tokens == 20
    assert pair_problem({"chosen_model": 3}) == "key 'chosen_model': 3 is not text"
    assert pair_problem({"chosen": "a", "reject": None}) is None


def test_family_table_assigns_our_models_and_the_benchmark_response_models():
    families = load_families()
    assert family_of(model_names("skywork_reward_gemma_2_27b"), families) == "gemma"
    assert family_of(model_names("gemini_1_5_pro"), families) == "gemini"
    assert family_of(model_names("my_judge", "meta-llama/Llama-3.1-8B-Instruct"), families) == "llama"
    assert family_of(model_names("tiny_classifier"), families) is None
    authors = {a for item in load_items("data/rag_rewardbench_appendix_d.jsonl")
               for a in (item["chosen_model"], item["reject_model"])}
    assert {a: family_of([a], families) for a in authors} == {
        "Mistral-Nemo-Instruct-2407": "mistral", "gpt-4o-2024-08-06": "openai", "Llama-3.1-8B-Instruct": "llama",
        "Llama-3.2-3B-Instruct": "llama", "gemini-1.5-flash-latest": "gemini", "Phi-3-medium-128k-instruct": "phi",
        "claude-3-5-haiku-20241022": "anthropic", "gpt-4o-mini": "openai", "claude-3-5-sonnet-20241022": "anthropic"}


def test_no_model_name_matches_two_families():
    families = load_families()
    names = [p.stem for p in (PROJECT_CONF / "models").glob("*.yaml")]
    names += [a for item in load_items("data/rag_rewardbench_appendix_d.jsonl")
              for a in (item["chosen_model"], item["reject_model"])]
    twice = {n: f for n in names
             if len(f := [f for f, ps in families.items() if any(fnmatch.fnmatch(n.lower(), p.lower()) for p in ps)]) > 1}
    assert twice == {}


def test_a_bad_family_table_names_the_key(tmp_path):
    path = tmp_path / "families.yaml"
    path.write_text("llama: ['*llama*']\nbroken: 3\n")
    with pytest.raises(ConfigError, match=r"families.yaml: key 'broken': expected a list of name patterns"):
        load_families(Path(path))


def test_the_report_section_shows_the_same_numbers(board):
    page = bias_section(board["bench"])
    baselines, models = page.split("<h3>Bias</h3>")
    # all: 5 pairs, 60.0 / 40.0; helpful-a: 2 pairs, 50.0 / 50.0
    assert "<td class='l'>all</td><td data-v='5'>5</td><td data-v='0.6'>60.0</td><td data-v='0.4'>40.0</td>" in baselines
    assert "<td class='l'>helpful-a</td><td data-v='2'>2</td><td data-v='0.5'>50.0</td>" in baselines
    row = next(r for r in models.split("<tr>") if r.startswith("<td class='l'>llama_3_1_8b_instruct"))
    # length: 66.7 (3), 50.0 (2), gap 16.7; self-preference: llama, 100.0 (1), 50.0 (2), gap 50.0
    assert "<td data-v='0.666667'>66.7</td><td data-v='3'>3</td><td data-v='0.5'>50.0</td><td data-v='2'>2</td>" \
           "<td data-v='0.166667'>16.7</td>" in row
    assert "<td class='l'>llama</td><td data-v='1'>100.0</td><td data-v='1'>1</td><td data-v='0.5'>50.0</td>" in row
    assert "right answer first" not in page  # no judge in both orders here
    assert bias_section({"models": [{"model": "m"}], "pairs": []}) == ""


def test_aggregate_counts_tokens_with_the_named_tokenizer(tmp_path):
    """SmolLM2's tokenizer (the built-in tiny classifier's): one token per word here, so the token lengths
    reverse the character lengths of the first pair (4 words in 18 characters vs 2 words in 24)."""
    rows = [{"model": m, "item_id": f"rag_rewardbench/{i}", "subset": "s", "correct": 1.0, "chosen": chosen,
             "reject": reject} for m in ("a", "b")
            for i, (chosen, reject) in enumerate([("one two three four", "international government"), ("one", "two six")])]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = "builtin:tiny-random-classifier"
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", str(path), "--out",
                 str(tmp_path), "--tokenizer", spec]) == 0
    bench = json.loads((tmp_path / "leaderboard.json").read_text())["benchmarks"]["rag_rewardbench"]
    # characters: 18 < 24 and 3 < 7, chosen never longer; tokens: 4 > 2 and 1 < 2
    assert bench["baselines"]["longer_wins"] == {"accuracy": 0.0, "n": 2}
    assert bench["baselines"]["tokens"]["tokenizer"] == spec
    assert bench["baselines"]["tokens"]["longer_wins"] == {"accuracy": 0.5, "n": 2}
    assert bench["models"][0]["bias"]["length_tokens"]["chosen_longer"] == {"accuracy": 1.0, "n": 1}


def test_report_counts_tokens_when_asked(tmp_path, monkeypatch):
    root = build_run(str(tmp_path), "r", models=2, items=12)
    for figure in ("ci_plot", "position_plot", "heatmap"):  # the page's figures are not tested here
        monkeypatch.setattr(plots, figure, lambda *args: "")
    monkeypatch.setattr(report_module, "token_counter", lambda spec: lambda text: len(text) // 100)
    assert main(["report", root.path(), "--tokenizer", "hundreds"]) == 0
    bench = json.loads(Path(root.path("report/leaderboard.json")).read_text())["benchmarks"]["rag_rewardbench"]
    assert bench["baselines"]["tokens"]["tokenizer"] == "hundreds"
    # synthetic pairs: chosen 100 + 37i % 300 characters, rejected 100 + 53i % 300; in hundreds, items 0-11 give
    # chosen vs rejected 1-1, 1-1, 1-2, 2-2, 2-3, 2-3, 3-1, 3-1, 3-2, 1-2, 1-3, 2-3: 3 ties, 3 longer of 9
    assert bench["baselines"]["tokens"]["longer_wins"] == {"accuracy": pytest.approx(1 / 3), "n": 9}
