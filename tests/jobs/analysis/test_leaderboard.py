"""leaderboard.json: the contract of issue 15 through `ragjudge aggregate`, and the numbers behind it."""
import json

import jsonschema
import pytest

from benchmarks.protocol import benchmark
from jobs.analysis.board import leaderboard_from_rows, leaderboard_of
from jobs.analysis.leaderboard import benchmark_leaderboard, item_outcomes, leaderboard
from jobs.analysis.report import leaderboard_text
from jobs.analysis.report_page import render_page
from jobs.analysis.report_view import BenchmarkView, PaperTable, Report
from jobs.analysis.significance import holm, mcnemar_exact
from jobs.cli import main
from jobs.flow.reducers import aggregate
from scripts.synthetic_run import bianbench_rows, rag_rewardbench_rows

NUMBER = {"type": "number"}
INTEGER = {"type": "integer"}
INTERVAL = {"type": ["array", "null"], "items": NUMBER, "minItems": 2, "maxItems": 2}


def _closed(required: list[str], optional: dict | None = None, **properties) -> dict:
    return {"type": "object", "additionalProperties": False, "required": required,
            "properties": {**properties, **(optional or {})}}


RATE = _closed(["accuracy", "n"], accuracy={"type": ["number", "null"], "minimum": 0, "maximum": 1}, n=INTEGER)
BASELINE = _closed(["longer_wins", "shorter_wins"], longer_wins=RATE, shorter_wins=RATE)
BY_SUBSET = {"type": "object", "additionalProperties": BASELINE}


def _split(first: str, second: str, **extra) -> dict:
    return _closed([first, second, "gap", "gap_ci95"], extra, **{first: RATE, second: RATE},
                   gap={"type": ["number", "null"]}, gap_ci95=INTERVAL)


BIAS = {  # issue 30: each part only where the rows had its data
    "length": _split("chosen_longer", "chosen_shorter"),
    "length_tokens": _split("chosen_longer", "chosen_shorter"),
    "self_preference": _split("own_chosen", "own_rejected", family={"type": "string"}),
    "position": _closed(["accuracy_first", "accuracy_second", "n"], {"first_position_rate": NUMBER},
                        accuracy_first=NUMBER, accuracy_second=NUMBER, n=INTEGER)}
BASELINES = _closed(["longer_wins", "shorter_wins", "unit", "by_subset"], {"tokens": _closed(
    ["tokenizer", "longer_wins", "shorter_wins", "by_subset"], tokenizer={"type": "string"}, longer_wins=RATE,
    shorter_wins=RATE, by_subset=BY_SUBSET)}, longer_wins=RATE, shorter_wins=RATE, unit={"const": "characters"},
    by_subset=BY_SUBSET)
ENSEMBLE = {"ensemble": {"const": True}, "members": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "rule": {"enum": ["mean", "zscore", "majority"]}}
ERRORS = {"missing": {"type": "integer", "minimum": 1}, "error_budget": {"type": "string"},  # issue 29
          "n_errors": {"type": "integer", "minimum": 0}, "n_bad_rows": {"type": "integer", "minimum": 0}}  # issue 61
MODEL = _closed(["model", "score", "ci95", "n", "rank", "group"], {"bias": _closed([], BIAS), **ENSEMBLE, **ERRORS},
                model={"type": "string"}, score=NUMBER, ci95={**INTERVAL, "type": "array"}, n=INTEGER, rank=INTEGER,
                group={"type": "string"})
PAIR = _closed(["a", "b", "n", "a_only", "b_only", "test", "p_value", "p_holm"], a={"type": "string"},
               b={"type": "string"}, n=INTEGER, a_only=INTEGER, b_only=INTEGER, test={"type": "string"},
               p_value=NUMBER, p_holm=NUMBER)
CANDIDATE = _closed(["item_id", "subset", "difficulty", "top_third_accuracy"], item_id={"type": "string"},
                    subset={"type": "string"}, difficulty=NUMBER, top_third_accuracy=NUMBER)
ITEMS = _closed(["n", "top_third", "label_noise"], n=INTEGER, top_third={"type": "array", "items": {"type": "string"}},
                label_noise={"type": "array", "items": CANDIDATE})
BOARD = _closed(["models", "pairs"], {"baselines": BASELINES, "items": ITEMS}, models={"type": "array", "items": MODEL},
                pairs={"type": "array", "items": PAIR})
# issue 15's format, closed (no field more, none less), with issue 30's optional parts
NOT_SCORED = _closed(["benchmark", "model", "status", "reason"], benchmark={"type": "string"},
                     model={"type": "string"}, status={"type": "string"}, reason={"type": "string"})  # issue 61
CONTRACT = _closed(["benchmarks"], {"cells_not_scored": {"type": "array", "items": NOT_SCORED}},
                   benchmarks={"type": "object", "additionalProperties": BOARD})


def _rows(model: str, outcomes: list[float | None]) -> list[dict]:
    return [{"item_id": f"rag_rewardbench/{i:03d}", "subset": ["helpful-a", "harmless-b"][i % 2],
             "model": model, "correct": c} for i, c in enumerate(outcomes)]


def test_aggregate_writes_the_contract_for_several_models(tmp_path, capsys):
    # strong: right on all 40; mid: right on 30 (wrong on items 0-9); weak: right on 10, one null (not
    # counted).
    rows = _rows("strong", [1.0] * 40) + _rows("mid", [0.0] * 10 + [1.0] * 30)
    rows += _rows("weak", [None] + [1.0] * 10 + [0.0] * 29)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", str(predictions),
                 "--out", str(tmp_path / "out")]) == 0
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    jsonschema.validate(board, CONTRACT)
    # each model's own metrics.json, not one over the three models' rows mixed
    overall = {m: json.loads((tmp_path / "out" / f"model={m}" / "metrics.json").read_text())["columns"]["overall"]
               for m in ("strong", "mid", "weak")}
    assert overall == {"strong": 1.0, "mid": 0.75, "weak": pytest.approx(10 / 39)}
    bench = board["benchmarks"]["rag_rewardbench"]
    models = {m["model"]: m for m in bench["models"]}
    assert [m["model"] for m in bench["models"]] == ["strong", "mid", "weak"]
    assert (models["strong"]["score"], models["mid"]["score"]) == (1.0, 0.75)
    assert models["weak"]["score"] == pytest.approx(10 / 39) and models["weak"]["n"] == 39
    assert [m["rank"] for m in bench["models"]] == [1, 2, 3]
    lo, hi = models["mid"]["ci95"]
    assert lo < 0.75 < hi
    pairs = {(p["a"], p["b"]): p for p in bench["pairs"]}
    assert set(pairs) == {("strong", "mid"), ("strong", "weak"), ("mid", "weak")}  # each unordered pair once
    sm = pairs["strong", "mid"]
    assert (sm["n"], sm["a_only"], sm["b_only"], sm["test"]) == (40, 10, 0, "mcnemar_exact")
    assert sm["p_value"] == mcnemar_exact(10, 0) == 2 / 2**10
    # common: items 1-39 (weak's item 0 is null); only mid right: 11-39; only weak right: 1-9
    mw = pairs["mid", "weak"]
    assert (mw["n"], mw["a_only"], mw["b_only"]) == (39, 29, 9)
    raw = [p["p_value"] for p in bench["pairs"]]
    assert [p["p_holm"] for p in bench["pairs"]] == pytest.approx(holm(raw))
    # all three pairs significant after Holm: three groups
    assert [m["group"] for m in bench["models"]] == ["a", "b", "c"]
    table = (tmp_path / "out" / "leaderboard.csv").read_text().splitlines()  # the same models, a row each
    assert [line.split(",")[:5] for line in table[1:]] == [
        ["rag_rewardbench", m["model"], "scored", str(m["score"]), str(m["ci95"][0])] for m in bench["models"]]


def test_aggregate_of_one_model_writes_no_leaderboard(tmp_path):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in _rows("only", [1.0, 0.0, 1.0])))
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", str(predictions),
                 "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "metrics.json").exists()
    assert not (tmp_path / "out" / "leaderboard.json").exists()


def test_rag_rewardbench_score_and_interval_are_table_2_overall():
    """Same rows, same resamples: the leaderboard's score and ci95 are metrics.json's Overall and its CI."""
    rows = {m: rag_rewardbench_rows(m, kind, 0.7, 300, seed) for m, kind, seed in
            (("judge", "generative", 1), ("scorer", "discriminative", 2))}
    board = leaderboard({"rag_rewardbench": {m: item_outcomes(r)[0] for m, r in rows.items()}})
    for entry in board["benchmarks"]["rag_rewardbench"]["models"]:
        metrics = aggregate(benchmark("rag_rewardbench"), rows[entry["model"]])
        assert entry["score"] == pytest.approx(metrics["columns"]["overall"], abs=1e-12)
        assert entry["ci95"] == pytest.approx(metrics["columns_ci95"]["overall"], abs=1e-12)
        assert entry["n"] == metrics["columns_n"]["overall"]
    pair = board["benchmarks"]["rag_rewardbench"]["pairs"][0]
    assert pair["test"] == "sign_flip_exact"  # the judge's 0 / 0.5 / 1 outcomes are not binary


def test_bianbench_item_is_the_mean_of_its_runs():
    rows = [{"item_id": "b/1", "subset": "qa", "model": "j", "run": r, "correct": c} for r, c in
            enumerate([1.0, 0.0, 1.0])]
    rows += [{"item_id": "b/2", "subset": "qa", "model": "j", "run": r, "correct": c} for r, c in
             enumerate([1.0, None, 1.0])]  # a failed run does not count
    outcomes, subsets = item_outcomes(rows)
    assert outcomes == pytest.approx({"b/1": 2 / 3, "b/2": 1.0})
    assert subsets == {"b/1": "qa", "b/2": "qa"}
    many = bianbench_rows("a", 0.9, 40, 1) + bianbench_rows("b", 0.5, 40, 2)
    for row, model in zip(many, ["a"] * 120 + ["b"] * 120):
        row["model"] = model
    pair = leaderboard_from_rows("bianbench", many)["benchmarks"]["bianbench"]["pairs"][0]
    assert pair["test"] == "sign_flip_exact" and pair["n"] == 40


def test_ties_share_a_rank_and_unscored_benchmarks_are_left_out():
    board = benchmark_leaderboard("x", {"p": {"1": 1.0, "2": 0.0}, "q": {"1": 0.0, "2": 1.0},
                                        "r": {"1": 0.0, "2": 0.0}})
    assert [(m["model"], m["rank"]) for m in board["models"]] == [("p", 1), ("q", 1), ("r", 3)]
    assert leaderboard({"retrieval": {"bm25": {}}, "x": {"p": {"1": 1.0}}})["benchmarks"].keys() == {"x"}


def test_models_lacking_items_through_errors_say_so_and_pairs_use_the_shared_items():
    over = "4 of 8 requests failed (50.0% > max_error_rate 2%); most common: api: HTTP 503 (model 'gappy', 3 tries) (4)"
    view = BenchmarkView("x", "x", outcomes={"full": {"1": 1.0, "2": 0.0, "3": 1.0, "4": 1.0},
                                             "gappy": {"1": 1.0, "2": 1.0}},
                         subsets=dict.fromkeys("1234", "s"), over_budget={"gappy": over})
    board = leaderboard_of([view])
    jsonschema.validate(board, CONTRACT)
    models = {m["model"]: m for m in board["benchmarks"]["x"]["models"]}
    assert "missing" not in models["full"] and (models["gappy"]["n"], models["gappy"]["missing"]) == (2, 2)
    assert models["gappy"]["error_budget"] == over and "error_budget" not in models["full"]
    assert board["benchmarks"]["x"]["pairs"][0]["n"] == 2  # the items both scored
    text = leaderboard_text(view, board["benchmarks"]["x"])
    assert text.splitlines()[1].split()[-1] == "missing"
    assert text.splitlines()[-2:] == [
        ("  missing: items other models scored and this one did not (its rows failed: errors/): gappy 2; each pair "
         "is tested on the items both scored (the pair's n)"), f"  gappy is over its error budget (failed_errors): {over}"]
    page = render_page(Report("r", {}, [view], board), {"x": PaperTable(text="t")})
    assert "<th>missing</th>" in page and "gappy 2; each pair is tested" in page and "over its error budget" in page
