"""Issue 30, item 3: ensembles as virtual models, from a sweep's `ensembles:` and from `ragjudge ensemble`,
scored, tested and grouped like any model and marked as ensembles; hand-computed on a constructed run."""
import json
from pathlib import Path

import jsonschema
import pytest
from test_leaderboard import CONTRACT

from benchmarks.protocol import benchmark
from jobs.analysis import load_report, plots
from jobs.analysis.leaderboard import item_outcomes
from jobs.cli import main
from jobs.config import ConfigError
from jobs.loading import load_sweep
from jobs.store.run_root import RunRoot
from scripts.synthetic_run import build_run


def scorer(pairs):
    """A discriminative model's rows: item -> (chosen, rejected) score, None for a failed row."""
    return [{"item_id": f"rag_rewardbench/{i}", "subset": "s", "chosen": "ccc", "reject": "rrrrrr" if i in "ab" else "rr",
             "error": "boom" if p is None else None, "correct": None if p is None else float(p[0] > p[1]),
             "score_chosen": None if p is None else float(p[0]), "score_reject": None if p is None else float(p[1])}
            for i, p in pairs.items()]


# d1: +-1 (sd 1), margins a 2, b -2, c 2, d failed; d2: +-10 (sd 10), margins a 20, b 20, c -20, d -20;
# j: a judge, right on b, wrong on c, split on a and d
ROWS = {"d1": scorer({"a": (1, -1), "b": (-1, 1), "c": (1, -1), "d": None}),
        "d2": scorer({"a": (10, -10), "b": (10, -10), "c": (-10, 10), "d": (-10, 10)}),
        "j": [{"item_id": f"rag_rewardbench/{i}", "subset": "s", "correct": c, "error": None, "correct_cr": c,
               "correct_rc": c} for i, c in zip("abcd", (0.5, 1.0, 0.0, 0.5))]}
KINDS = {"d1": "discriminative", "d2": "discriminative", "j": "generative"}


def make_run(folder, ensembles=(), rows=ROWS, kinds=KINDS):
    root = RunRoot(str(folder), "r")
    for model, model_rows in rows.items():
        root.write_rows("predictions", "rag_rewardbench", model, [{**r, "model": model} for r in model_rows],
                        part="0")
    root.write_json("manifest.json", {"run": "r", "cells": {f"rag_rewardbench/{m}": {"status": "done"} for m in rows},
                                      "config": {"benchmarks": {"rag_rewardbench": {"module": "rag_rewardbench",
                                                                                    "bootstrap_resamples": 100}},
                                                 "models": {m: {"kind": k} for m, k in kinds.items()},
                                                 "ensembles": list(ensembles)}})
    return root


def board_of(root):
    return json.loads(Path(root.path("report/leaderboard.json")).read_text())["benchmarks"]["rag_rewardbench"]


def test_a_sweeps_ensembles_join_the_leaderboard_like_models(tmp_path):
    root = make_run(tmp_path, [{"members": ["d1", "d2"], "rule": "zscore"},
                               {"name": "vote", "members": ["d1", "j"], "rule": "majority"}])
    report = load_report(root)
    view = report.views[0]
    # zscore: a (2 + 2) / 2 right; b (-2 + 2) / 2 = 0 and c (2 - 2) / 2 = 0 ties, wrong; d: only d2, -2, wrong
    assert view.outcomes["zscore(d1,d2)"] == {f"rag_rewardbench/{i}": v for i, v in zip("abcd", (1.0, 0, 0, 0))}
    # majority: a d1 chosen, j abstains -> right; b and c 1 vs 1 -> 0.5; d d1 failed, j abstains -> 0.5
    assert view.outcomes["vote"] == {f"rag_rewardbench/{i}": v for i, v in zip("abcd", (1.0, 0.5, 0.5, 0.5))}
    models = {m["model"]: m for m in report.leaderboard["benchmarks"]["rag_rewardbench"]["models"]}
    jsonschema.validate(report.leaderboard, CONTRACT)
    assert models["zscore(d1,d2)"] | {"ci95": None} == {
        "model": "zscore(d1,d2)", "score": 0.25, "ci95": None, "n": 4, "rank": 5, "group": "a", "ensemble": True,
        "members": ["d1", "d2"], "rule": "zscore", "bias": models["zscore(d1,d2)"]["bias"]}
    assert models["vote"]["score"] == 0.625 and models["vote"]["ensemble"] is True
    assert "ensemble" not in models["d1"]
    # tested like any model: a pair with each of the three models and with the other ensemble
    pairs = report.leaderboard["benchmarks"]["rag_rewardbench"]["pairs"]
    assert sum("vote" in (p["a"], p["b"]) for p in pairs) == 4
    # its length split from the members' pairs: chosen 3 chars vs 6 (a, b) and 2 (c, d): shorter a, b
    assert models["zscore(d1,d2)"]["bias"]["length"]["chosen_shorter"] == {"accuracy": 0.5, "n": 2}
    assert view.kinds["vote"] == "ensemble: majority of d1, j"


def test_an_ensemble_has_no_family_of_its_own(tmp_path):
    """Named after members whose families wrote responses, it still gets no self-preference column."""
    rows = {name: [{**r, "chosen_model": "Llama-3.1-8B-Instruct", "reject_model": "gpt-4o"} for r in ROWS[member]]
            for name, member in (("llama_3_1_8b_instruct", "d1"), ("gpt_4o", "d2"))}
    report = load_report(make_run(tmp_path, [{"members": list(rows), "rule": "mean"}], rows,
                                  dict.fromkeys(rows, "discriminative")))
    bias = {m["model"]: m["bias"] for m in report.leaderboard["benchmarks"]["rag_rewardbench"]["models"]}
    assert bias["llama_3_1_8b_instruct"]["self_preference"]["family"] == "llama"
    assert "self_preference" not in bias["mean(llama_3_1_8b_instruct,gpt_4o)"]


def test_a_rule_a_member_cannot_join_is_named_and_the_report_goes_on(tmp_path, capsys):
    root = make_run(tmp_path, [{"members": ["d1", "j"], "rule": "mean"}])
    report = load_report(root)
    assert "mean(d1,j)" not in report.views[0].outcomes
    assert ("ragjudge report: ensemble mean(d1,j): benchmark rag_rewardbench: member 'j' has no scores to average"
            in capsys.readouterr().err)


def test_ensemble_command_adds_replaces_and_refuses(tmp_path, capsys, monkeypatch):
    for figure in ("ci_plot", "position_plot", "heatmap"):  # the page's matplotlib figures are not tested here
        monkeypatch.setattr(plots, figure, lambda *args: "")
    root = make_run(tmp_path)
    assert main(["ensemble", root.path(), "--members", "d1,d2", "--rule", "mean"]) == 0
    assert "Ensemble mean(d1,d2) (mean of d1, d2) on rag_rewardbench" in capsys.readouterr().out
    # mean: a (2 + 20) / 2, b (-2 + 20) / 2 right; c (2 - 20) / 2, d -20 wrong
    entry = next(m for m in board_of(root)["models"] if m["model"] == "mean(d1,d2)")
    assert (entry["score"], entry["n"], entry["ensemble"], entry["rule"]) == (0.5, 4, True, "mean")
    assert main(["ensemble", root.path(), "--members", "d1,d2", "--rule", "zscore", "--name", "mean(d1,d2)"]) == 0
    assert json.loads(Path(root.path("ensembles.json")).read_text()) == [
        {"name": "mean(d1,d2)", "members": ["d1", "d2"], "rule": "zscore", "benchmarks": []}]  # replaced
    assert next(m for m in board_of(root)["models"] if m["model"] == "mean(d1,d2)")["score"] == 0.25
    capsys.readouterr()
    assert main(["ensemble", root.path(), "--members", "d1,j", "--rule", "mean"]) == 2
    assert "member 'j' has no scores to average" in capsys.readouterr().err
    assert main(["ensemble", root.path(), "--members", "d1,nope", "--rule", "majority"]) == 2
    assert "no benchmark of" in capsys.readouterr().err
    assert main(["ensemble", root.path(), "--members", "d1,nope", "--rule", "majority",
                 "--benchmark", "rag_rewardbench"]) == 2
    assert "benchmark rag_rewardbench: no finished cell of nope" in capsys.readouterr().err
    assert main(["ensemble", root.path(), "--members", "d1,d2", "--rule", "mean", "--name", "j"]) == 2
    assert main(["ensemble", root.path(), "--members", "d1", "--rule", "mean"]) == 2
    assert [e["name"] for e in json.loads(Path(root.path("ensembles.json")).read_text())] == ["mean(d1,d2)"]


def test_bianbench_majority_votes_reach_the_report(tmp_path):
    root = build_run(str(tmp_path), "r", models=6, items=30, bianbench_judges=2)
    judges = ["synthetic-rm-02", "synthetic-rm-05"]
    manifest = root.read_json("manifest.json")
    manifest["config"]["ensembles"] = [{"members": judges, "rule": "majority"}]
    root.write_json("manifest.json", manifest)
    report = load_report(root)
    bian = next(v for v in report.views if v.name == "bianbench")
    expected = benchmark("bianbench").ensemble({m: root.read_rows("predictions", "bianbench", m) for m in judges},
                                               "majority")
    assert bian.outcomes["majority(synthetic-rm-02,synthetic-rm-05)"] == item_outcomes(expected)[0]
    names = {m["model"]: m for m in report.leaderboard["benchmarks"]["bianbench"]["models"]}
    assert names["majority(synthetic-rm-02,synthetic-rm-05)"]["ensemble"] is True
    # two judges only: the rag_rewardbench one (judges have no scores, but majority needs none) joins too
    assert "majority(synthetic-rm-02,synthetic-rm-05)" in report.views[1].outcomes


def test_sweep_ensembles_are_checked_when_the_sweep_loads(tmp_path):
    def sweep(ensembles):
        path = tmp_path / "s.yaml"
        path.write_text("name: s\nbenchmarks: [rag_rewardbench_sample]\nmodels: [tiny_classifier, smollm2_judge]\n"
                        f"storage: {{run: r}}\nensembles: {ensembles}\n")
        return path

    loaded = load_sweep(sweep("[{members: [tiny_classifier, smollm2_judge], rule: majority}]"))
    assert loaded.ensembles[0].members == ["tiny_classifier", "smollm2_judge"]
    for ensembles, message in [
            ("[{members: [tiny_classifier, nope]}]", "key 'ensembles[0].members': nope not a model of the sweep"),
            ("[{members: [tiny_classifier]}]", "key 'ensembles[0].members': an ensemble needs two or more"),
            ("[{members: [tiny_classifier, smollm2_judge], rule: median}]",
             "key 'ensembles[0].rule': 'median' is not one of mean, zscore, majority"),
            ("[{members: [tiny_classifier, smollm2_judge], name: smollm2_judge}]",
             "key 'ensembles[0].name': 'smollm2_judge' is already a model or ensemble of the sweep"),
            ("[{members: [tiny_classifier, smollm2_judge], benchmarks: [x]}]",
             "key 'ensembles[0].benchmarks': x not a benchmark of the sweep")]:
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            load_sweep(sweep(ensembles))
