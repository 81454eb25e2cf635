"""`ragjudge report` on a synthetic run root: leaderboard.json, the self-contained page, its plots in a real
headless Chromium when one is installed."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from test_leaderboard import CONTRACT

from benchmarks import protocol
from jobs.analysis.report import report_text, write_report
from jobs.analysis.report_view import BenchmarkView, subset_matrix
from jobs.cli import main
from jobs.store.run_root import RunRoot
from scripts.synthetic_run import build_run


class PaperStub:
    """Stands in for a benchmark's paper table (the benchmarks are being moved onto benchmarks.protocol)."""

    def __init__(self, name: str, with_html: bool) -> None:
        self.name, self.with_html = name, with_html

    def table_text(self, metrics):
        return f"PAPER TABLE {self.name}: {len(metrics)} models"

    def table_html(self, metrics):
        if not self.with_html:
            return None
        return f"<table id='paper-{self.name}'><tr><td>{len(metrics)}</td></tr></table>"


def _stub_protocol(monkeypatch, broken: str | None = None):
    def benchmark(name):
        if name == broken:
            raise protocol.UnknownBenchmark(f"unknown benchmark module '{name}'")
        return PaperStub(name, with_html=name == "rag_rewardbench")

    monkeypatch.setattr(protocol, "benchmark", benchmark)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A synthetic run (6 RAG-RewardBench models, 2 of them judges also on Bi'anBench), reported once."""
    folder = str(tmp_path_factory.mktemp("runs"))
    root = build_run(folder, "synthetic", models=6, items=120, bianbench_judges=2)
    manifest = root.read_json("manifest.json")
    cells = manifest["cells"]
    cells["rag_rewardbench/synthetic-rm-00"]["engine_start_s"] = 71.5  # a field of a newer pipeline
    cells["rag_rewardbench/synthetic-rm-99"] = {"status": "failed", "error": "PreflightError: no GPU"}
    root.write_json("manifest.json", manifest)
    printed: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        _stub_protocol(mp)
        report = write_report(root, out=printed.append)
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    return {"root": root, "report": report, "page": page, "printed": "\n".join(printed)}


def test_leaderboard_json_is_the_contract_and_matches_the_report(run):
    board = json.loads(Path(run["root"].path("report/leaderboard.json")).read_text())
    jsonschema.validate(board, CONTRACT)
    assert board == json.loads(json.dumps(run["report"].leaderboard))
    assert len(board["benchmarks"]["rag_rewardbench"]["models"]) == 6  # the failed cell is not a model
    assert len(board["benchmarks"]["rag_rewardbench"]["pairs"]) == 15
    assert len(board["benchmarks"]["bianbench"]["models"]) == 2


def test_page_is_self_contained_with_its_plots(run):
    page = run["page"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched
    assert "<link" not in page and "@import" not in page
    assert not re.search(r"url\(\s*['\"]?(?!#)", page)  # only the SVGs' own clip paths, url(#id)
    # rag_rewardbench: CI bars, subset heat map, position bias, item heat map; bianbench: the same, no judge in
    # both orders.
    labels = re.findall(r'<svg class="plot" role="img" aria-label="([^"]+)"', page)
    assert labels == ["bianbench: score and 95% interval", "bianbench: accuracy by subset",
                      "bianbench: models x items",
                      "rag_rewardbench: score and 95% interval", "rag_rewardbench: accuracy by subset",
                      "rag_rewardbench: position bias of the judges", "rag_rewardbench: models x items"]
    assert page.count("<table class='sortable'>") >= 5  # leaderboards, pairs, accounting
    for model in (m["model"] for m in run["report"].leaderboard["benchmarks"]["rag_rewardbench"]["models"]):
        assert model in page
    for column in ("consistency", "first position rate", "parse failure rate", "run agreement"):
        assert f"<th>{column}</th>" in page


def test_page_and_leaderboard_carry_the_bias_columns(run):
    board = run["report"].leaderboard["benchmarks"]["rag_rewardbench"]
    assert board["baselines"]["longer_wins"]["n"] > 0 and "bianbench" not in str(board.get("baselines"))
    judges = [m for m in board["models"] if "position" in m.get("bias", {})]
    assert len(judges) == 2 and all("length" in m["bias"] for m in board["models"])
    section = run["page"].split("<h2 id='rag_rewardbench'>")[1]
    assert "<h3>Length baselines</h3>" in section and "<th>right answer first %</th>" in section
    assert "<h3>Bias</h3>" not in run["page"].split("<h2 id='rag_rewardbench'>")[0]  # bianbench rows: no pairs


def test_page_keeps_each_benchmarks_paper_table(run):
    assert "<table id='paper-rag_rewardbench'><tr><td>6</td>" in run["page"]  # table_html
    assert "<pre>PAPER TABLE bianbench: 2 models</pre>" in run["page"]  # table_text where no HTML table
    assert "PAPER TABLE rag_rewardbench: 6 models" in run["printed"]
    assert "rag_rewardbench: leaderboard" in run["printed"]


def test_page_accounts_for_engines_and_time(run):
    page = run["page"]
    assert "Engines and time" in page
    assert re.search(r"vllm: \d+ cells, \d+ s", page)
    assert "<th>engine_start_s</th>" in page and "data-v='71.5'" in page
    assert "PreflightError: no GPU" in page


def test_a_table_that_fails_is_named_not_fatal(tmp_path, monkeypatch, capsys):
    root = build_run(str(tmp_path), "r", models=3, items=30, bianbench_judges=1)
    _stub_protocol(monkeypatch, broken="bianbench")
    assert write_report(root, out=lambda line: None) is not None
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    assert "Paper table unavailable: UnknownBenchmark: unknown benchmark module &#x27;bianbench&#x27;" in page
    assert "bianbench: paper table unavailable" in capsys.readouterr().err
    text = report_text([{"benchmark": "rag_rewardbench"}, {"benchmark": "bianbench"}])
    assert "PAPER TABLE rag_rewardbench: 1 models" in text and "PAPER TABLE bianbench" not in text


def test_report_command(tmp_path, monkeypatch, capsys):
    root = build_run(str(tmp_path), "r", models=2, items=20)
    _stub_protocol(monkeypatch)
    assert main(["report", root.path()]) == 0
    assert "leaderboard.json" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing")]) == 2


def test_report_open_hands_the_page_to_the_browser_or_says_how_to_open_it(tmp_path, monkeypatch, capsys):
    import webbrowser

    from jobs.cli.report import open_in_browser

    root = build_run(str(tmp_path), "r", models=2, items=20)
    _stub_protocol(monkeypatch)
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    assert main(["report", root.path(), "--open"]) == 0
    page = tmp_path / "r" / "report" / "index.html"
    assert opened == [page.as_uri()] and page.exists()
    capsys.readouterr()
    monkeypatch.setattr(webbrowser, "open", lambda url: False)  # a machine without a browser
    open_in_browser(root)
    assert capsys.readouterr().err == f"ragjudge report: no web browser found here; open {page.as_uri()}\n"
    open_in_browser(RunRoot("s3://bucket/results dir", "r"))
    assert "aws s3 cp --recursive 's3://bucket/results dir/r/report' report" in capsys.readouterr().err


def test_a_cell_over_its_error_budget_is_reported_and_marked(tmp_path, monkeypatch):
    root = build_run(str(tmp_path), "r", models=3, items=30)
    manifest = root.read_json("manifest.json")
    key = next(k for k in manifest["cells"] if k.startswith("rag_rewardbench/"))
    why = "9 of 60 requests failed (15.0% > max_error_rate 2%); most common: api: timeout after 120 s (model 'm') (9)"
    manifest["cells"][key].update(status="failed_errors", message=why)
    root.write_json("manifest.json", manifest)
    _stub_protocol(monkeypatch)
    printed: list[str] = []
    report = write_report(root, out=printed.append)
    models = {m["model"]: m for m in report.leaderboard["benchmarks"]["rag_rewardbench"]["models"]}
    assert len(models) == 3 and models[key.split("/", 1)[1]]["error_budget"] == why
    assert f"is over its error budget (failed_errors): {why}" in "\n".join(printed)
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    assert "failed_errors <small>9 of 60 requests failed" in page  # the accounting table


def test_subset_matrix():
    view = BenchmarkView("b", "b", outcomes={"m": {"1": 1.0, "2": 0.0, "3": 0.5}, "n": {"1": 1.0}},
                         subsets={"1": "x", "2": "x", "3": "y"})
    subsets, values = subset_matrix(view, ["m", "n"])
    assert subsets == ["x", "y"]
    np.testing.assert_array_equal(values, [[0.5, 0.5], [1.0, np.nan]])


def test_read_rows_can_skip_columns(tmp_path):
    root = RunRoot(str(tmp_path), "r")
    root.write_rows("predictions", "b", "m", [{"item_id": "1", "correct": 1.0, "text": "long"}], part="0")
    assert root.read_rows("predictions", "b", "m", columns={"item_id", "correct"}.__contains__) == \
        [{"item_id": "1", "correct": 1.0}]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _dump_dom(browser: str, path) -> str:
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                             f"file://{path}"], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.skipif(_chromium() is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_page_renders_in_headless_chromium(run, tmp_path):
    """The page's own script counts the plots that laid out with a non-zero size; a click sorts a table."""
    browser = _chromium()
    dom = _dump_dom(browser, run["root"].path("report/index.html"))
    assert 'data-plots-rendered="7"' in dom
    # Click "model" in the first leaderboard (bianbench's), twice: descending by name.
    probe = run["page"].replace("</body>", """<script>const t=document.querySelector('table.sortable');
const th=[...t.querySelectorAll('th')].find(h=>h.textContent==='model');th.click();th.click();
document.body.dataset.firstModel=t.tBodies[0].rows[0].cells[1].textContent;</script></body>""")
    probe_path = tmp_path / "probe.html"
    probe_path.write_text(probe, encoding="utf-8")
    names = sorted(m["model"] for m in run["report"].leaderboard["benchmarks"]["bianbench"]["models"])
    dom = _dump_dom(browser, probe_path)
    assert re.search(rf'data-first-model="{re.escape(names[-1])}\s*generative"', dom)


def test_engine_rows_show_each_engine_with_its_cached_share_of_prompt_tokens():
    from jobs.analysis.report_view import engine_rows

    manifest = {"engines": [
        {"model": "judge", "engine": "vllm", "starts": 2, "start_s": 40.04, "busy_s": 12.5, "requests": 8,
         "prompt_tokens": 200, "cached_prompt_tokens": 50, "generated_tokens": 30, "thinking_tokens": 21},
        {"model": "rm", "engine": "transformers", "starts": 1, "start_s": 3.0, "busy_s": 1.0, "requests": 4,
         "prompt_tokens": 0, "cached_prompt_tokens": 0, "generated_tokens": 0}]}
    header, judge, rm = engine_rows(manifest)
    assert header[0] == "model" and header[-1] == "cached %"
    assert judge == ["judge", "vllm", "2", "40.0", "12.5", "8", "200", "50", "30", "21", "25.0"]
    assert rm[-2] == "0"  # a manifest from before thinking tokens were counted shows none
    assert rm[-1] == "-"  # no prompt tokens counted: no share to show
    assert engine_rows({"cells": {}}) == []


def test_implicit_models_are_labelled_with_what_their_score_is(tmp_path, monkeypatch):
    """The manifest says per implicit model whether it was scored alone (Table 3) or against a reference; the
    text leaderboard and the page put that beside the model. A run from before the label was recorded gets it
    from its config's `reference`."""
    from jobs.store.manifest import ALONE

    root = build_run(str(tmp_path), "r", models=3, items=30)
    manifest = root.read_json("manifest.json")
    models = manifest["config"]["models"]
    models["synthetic-rm-00"].update(kind="implicit", reference=None)
    models["synthetic-rm-01"].update(kind="implicit", reference="base/llama")
    root.write_json("manifest.json", manifest)  # no implicit_scores: derived from the config
    _stub_protocol(monkeypatch)
    printed: list[str] = []
    write_report(root, out=printed.append)
    board = next(block for block in printed if block.startswith("rag_rewardbench: leaderboard")).splitlines()
    assert board[1].split()[:3] == ["rank", "model", "implicit"]
    rows = {line.split()[1]: line for line in board[2:]}
    assert f"  {ALONE}  " in rows["synthetic-rm-00"]
    assert "  log-ratio vs base/llama  " in rows["synthetic-rm-01"]
    assert rows["synthetic-rm-02"].split()[2] == "-"  # a judge: no implicit score
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    assert f"synthetic-rm-00 <small>implicit ({ALONE})</small>" in page
    assert "synthetic-rm-01 <small>implicit (log-ratio vs base/llama)</small>" in page
    assert "synthetic-rm-02 <small>generative</small>" in page

    manifest["implicit_scores"] = {"synthetic-rm-00": "as recorded"}  # the manifest's record wins
    root.write_json("manifest.json", manifest)
    printed.clear()
    write_report(root, out=printed.append)
    assert "as recorded" in "\n".join(printed) and "log-ratio" not in "\n".join(printed)


def test_a_board_without_implicit_models_has_no_implicit_column(run):
    assert "implicit score" not in run["printed"]


def test_report_text_gives_each_config_of_a_benchmark_its_own_titled_table():
    cell = {"benchmark": "rag_rewardbench", "model": "judge", "kind": "generative", "n": 2,
            "columns": {"overall": 0.5}, "columns_ci95": {}}
    text = report_text([{**cell, "config": "my_pairs"}, {**cell, "config": "rag_rewardbench"}])
    titles = [line for line in text.splitlines() if "RAG-RewardBench" in line]
    assert [t.split(":")[0] for t in titles] == ["my_pairs (RAG-RewardBench)", "RAG-RewardBench"]


def test_a_thinking_judges_accuracy_by_thinking_length_is_plotted_with_its_quartiles(tmp_path, monkeypatch):
    root = build_run(str(tmp_path), "thinking", models=3, items=40, bianbench_judges=0)
    judge = "synthetic-rm-02"  # every third model is a generative judge
    path = root.metrics_path("rag_rewardbench", judge)
    metrics = root.read_json(path)
    quartiles = [{"tokens_from": lo, "tokens_to": hi, "n": 10, "accuracy": a}
                 for lo, hi, a in ((12, 40, 0.9), (40, 75.5, 0.8), (75.5, 130, None), (130, 512, 0.4))]
    metrics["thinking"] = {"traces": 80, "unfinished": 3, "unfinished_thinking_rate": 3 / 80,
                           "thinking_tokens": None, "accuracy_by_thinking_quartile": quartiles}
    root.write_json(path, metrics)
    _stub_protocol(monkeypatch)
    write_report(root, out=lambda line: None)
    page = Path(root.path("report/index.html")).read_text(encoding="utf-8")
    labels = re.findall(r'<svg class="plot" role="img" aria-label="([^"]+)"', page)
    assert labels.count("rag_rewardbench: accuracy by thinking length") == 1
    plot = page.split('aria-label="rag_rewardbench: accuracy by thinking length"')[1].split("</svg>")[0]
    assert f"{judge} (quartiles up to 40, 75.5, 130, 512 tokens)" in plot and "Q4 (longest)" in plot
