"""Names in the report's figures are text: a '$' in a model, a subset or a title is drawn as '$', never read as
matplotlib's mathtext (which raises on `tiny$x^$` and typesets `price $5 and $6`), nor handed to LaTeX."""
import json
from pathlib import Path

import matplotlib
import numpy as np

from jobs.analysis import plots
from jobs.cli import main
from scripts.synthetic_run import build_run

MODEL, SUBSET, LABEL = "tiny$x^$", r"helpful-$\nosuch$", "price $5 and $6"


def test_a_dollar_in_a_label_is_drawn_as_a_dollar():
    models = [{"model": MODEL, "group": "a", "score": 0.7, "ci95": [0.6, 0.8]},
              {"model": LABEL, "group": "b", "score": 0.5, "ci95": None}]
    judges = [{"model": MODEL, "first_position_rate": 0.6, "accuracy_first": 0.7, "accuracy_second": 0.5},
              {"model": LABEL, "first_position_rate": 0.4, "accuracy_first": 0.6, "accuracy_second": 0.6}]
    with matplotlib.rc_context({"text.usetex": True}):  # a user's matplotlibrc asking for LaTeX changes nothing
        svgs = [plots.ci_plot(models, SUBSET),
                plots.heatmap([MODEL, LABEL], [SUBSET, LABEL], np.array([[0.5, 0.6], [0.7, np.nan]]), SUBSET),
                plots.position_plot(judges, SUBSET)]
    for svg in svgs:  # svg.fonttype none: each label is one <text> element, as written
        assert f">{MODEL}" in svg and f">{LABEL}" in svg and f">{SUBSET}<" in svg


def test_report_draws_a_run_whose_names_hold_dollars(tmp_path, capsys):
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{i}", "prompt": "q?", "chosen": "c" * (40 + i), "reject": "r" * 50,
                                        "subset": SUBSET if i % 2 else LABEL, "chosen_model": "a",
                                        "reject_model": "b"}) + "\n" for i in range(24)))
    root = build_run(str(tmp_path), "dollars", models=3, data=str(data), names=[MODEL, LABEL, "judge $a$"])
    assert main(["report", root.path()]) == 0, capsys.readouterr().err
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    for text in (MODEL, SUBSET, LABEL, "judge $a$"):
        assert f">{text}<" in page  # a tick label of the plots
    board = json.loads(Path(root.path("report/leaderboard.json")).read_text())
    assert {m["model"] for m in board["benchmarks"]["rag_rewardbench"]["models"]} == {MODEL, LABEL, "judge $a$"}
