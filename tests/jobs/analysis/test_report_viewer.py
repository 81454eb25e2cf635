"""The report's per-item viewer: the data it writes beside the page (report/viewer/), and, in a real headless
Chromium driven by Selenium, the page filtering to the items the models disagree on, opening one and showing
its texts and every model's verdict."""
import json
from pathlib import Path

import pytest

from jobs.analysis import ENSEMBLES
from jobs.analysis.item_viewer import CHUNK_BYTES, benchmark_data, item_entry, row_entry, text_columns
from jobs.analysis.report import write_report
from jobs.analysis.report_view import BenchmarkView
from scripts.browser import headless, missing, wait_for
from scripts.synthetic_run import build_run

SUBSETS = ("helpful-alpha", "reason-beta", "citation-gamma")


def _pairs(folder: Path, n: int = 12) -> tuple[str, dict[str, dict]]:
    """A RAG-RewardBench file of `n` made-up pairs with texts a test can find, and the pairs by item id."""
    pairs = [{"id": f"p{k:02d}", "subset": SUBSETS[k % 3],
              "prompt": f"## References\nReference [1]\nText: The river Ix{k} flows north.\n"
                        f"## Question: Where does the river Ix{k} flow?",
              "chosen": f"The river Ix{k} flows north, as reference [1] says.",
              "reject": f"The river Ix{k} flows south-east, into the sea at Port Yv{k}.",
              "chosen_model": "model-a", "reject_model": "model-b"} for k in range(n)]
    path = folder / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return str(path), {f"rag_rewardbench/{p['id']}": p for p in pairs}


def _script_data(path: str) -> dict:
    """The JSON inside viewer/index.js (`window.RAGJUDGE_ITEMS={...};`) or a chunk (`ragjudgeChunk("k",{...});`)."""
    text = Path(path).read_text(encoding="utf-8").strip().removesuffix(";")
    if text.startswith("window.RAGJUDGE_ITEMS="):
        return json.loads(text.removeprefix("window.RAGJUDGE_ITEMS="))
    return json.loads(text[text.index(",") + 1:-1])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A synthetic run of 4 models (synthetic-rm-02 a both-order judge) on 12 pairs of a data file and a majority
    of the other three (a model without stored rows), reported."""
    folder = tmp_path_factory.mktemp("viewer")
    data, pairs = _pairs(folder)
    root = build_run(str(folder / "runs"), "synthetic", models=4, data=data)
    root.write_json(ENSEMBLES, [{"members": ["synthetic-rm-00", "synthetic-rm-01", "synthetic-rm-03"],
                                 "rule": "majority", "name": "vote"}])
    report = write_report(root, out=lambda text: None)
    assert "vote" in report.views[0].outcomes
    rows = {m: root.read_rows("predictions", "rag_rewardbench", m) for m in report.views[0].outcomes}
    return {"root": root, "report": report, "pairs": pairs, "rows": rows}


def test_the_viewer_data_has_every_item_its_texts_and_each_models_outcome(run):
    root, view = run["root"], run["report"].views[0]
    index = _script_data(root.path("report/viewer/index.js"))["benchmarks"]
    assert [b["name"] for b in index] == ["rag_rewardbench"]
    entry = index[0]
    board = run["report"].leaderboard["benchmarks"]["rag_rewardbench"]
    assert entry["models"] == [m["model"] for m in board["models"]]  # leaderboard order
    assert entry["items"] == list(run["pairs"])  # the data's order
    assert entry["problem"] is None
    for model, outcomes in zip(entry["models"], entry["outcomes"]):
        assert outcomes == [view.outcomes[model].get(i) for i in entry["items"]]
    chunk = _script_data(root.path(f"report/viewer/{entry['prefix']}{entry['chunk'][0]}.js"))
    first = chunk[entry["items"][0]]
    pair = run["pairs"][entry["items"][0]]
    assert dict(first["f"]) == {"chosen_model": "model-a", "reject_model": "model-b"}
    assert first["t"] == [["prompt", pair["prompt"]], ["chosen", pair["chosen"]], ["reject", pair["reject"]]]
    judge = entry["models"].index("synthetic-rm-02")
    fields, texts = next((f, t) for m, f, t in first["r"] if m == judge)
    row = run["rows"]["synthetic-rm-02"][0]
    assert dict(texts) == {"text_cr": row["text_cr"], "text_rc": row["text_rc"]}  # both orders' raw texts
    assert dict(fields)["pick_cr"] == row["pick_cr"] and "item_id" not in dict(fields)


def test_pairs_rows_link_to_the_items_where_the_two_models_differ(run):
    page = Path(run["root"].path("report/index.html")).read_text(encoding="utf-8")
    pair = run["report"].leaderboard["benchmarks"]["rag_rewardbench"]["pairs"][0]
    assert f"href='#items?benchmark=rag_rewardbench&amp;a={pair['a']}&amp;b={pair['b']}'" in page
    assert "<script src='viewer/index.js'></script>" in page and "<h2 id='items'>" in page


def test_unreadable_data_is_said_and_the_ids_and_rows_remain(tmp_path):
    root = build_run(str(tmp_path), "r", models=2, items=10)
    manifest = root.read_json("manifest.json")
    manifest["config"]["benchmarks"]["rag_rewardbench"]["data"] = [str(tmp_path / "gone.jsonl")]
    root.write_json("manifest.json", manifest)
    (tmp_path / "r" / "report" / "viewer").mkdir(parents=True)
    (tmp_path / "r" / "report" / "viewer" / "b9-c9.js").write_text("stale")
    write_report(root, out=lambda text: None)
    entry = _script_data(root.path("report/viewer/index.js"))["benchmarks"][0]
    assert "the data could not be read" in entry["problem"] and "gone.jsonl" in entry["problem"]
    assert len(entry["items"]) == 10
    assert not (tmp_path / "r" / "report" / "viewer" / "b9-c9.js").exists()  # an old report's chunk is gone


def test_values_are_shown_short_or_as_texts():
    item = {"item_id": "b/1", "subset": "s", "benchmark": "b", "question": "short?", "labels": [0, 1],
            "passages": ["p" * 90, "second passage"], "turns": [{"speaker": "user", "text": "hi\nthere"}],
            "answer": None, "score": 0.123456}
    assert item_entry(item) == {"f": [["question", "short?"], ["labels", "[0, 1]"], ["score", 0.1235]],
                                "t": [["passages [1]", "p" * 90], ["passages [2]", "second passage"],
                                      ["turns [1]", "speaker: user\ntext: hi\nthere"]]}
    rows = [{"item_id": "1", "model": "m", "text": "Choose 1", "pick": 1.0, "x": None, "error": None},
            {"item_id": "2", "model": "m", "text": None, "pick": float("nan"), "error": "boom"},
            {"item_id": "3", "model": "m", "text": "long " * 20}]
    columns = text_columns(rows)
    assert columns == {"text"}
    # a text column, though short here; a null field stays (a missing verdict), a null error does not
    assert row_entry(rows[0], columns) == ([["pick", 1], ["x", None]], [["text", "Choose 1"]])
    assert row_entry(rows[1], columns) == ([["pick", "nan"], ["error", "boom"]], [])
    # what a row copies from its item is shown once, with the item
    assert row_entry({"task_id": "t", "answer": "a", "x": 1}, set(), {"task_id": "t", "answer": "b"}) == \
        ([["answer", "a"], ["x", 1]], [])


def test_texts_are_split_into_chunks_of_consecutive_items():
    ids = [f"b/{k}" for k in range(5)]
    view = BenchmarkView("b", "b", outcomes={"m": {i: 1.0 for i in ids}}, subsets={i: "s" for i in ids})
    board = {"models": [{"model": "m", "score": 1.0}]}
    items = {i: {"item_id": i, "prompt": "w" * (CHUNK_BYTES // 3)} for i in ids}
    entry, chunks = benchmark_data(0, view, board, {"m": []}, items, None)
    assert entry["chunk"] == [0, 0, 1, 1, 2] and list(chunks) == ["b0-c0", "b0-c1", "b0-c2"]
    assert list(json.loads(chunks["b0-c1"])) == ["b/2", "b/3"]


@pytest.mark.integration
@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_the_viewer_in_headless_chromium(run):
    """Filter to the items the models disagree on, open the first, read its texts and the verdicts; then follow
    a pairs table's link to the items where two models differ."""
    from selenium.webdriver.common.by import By

    root, view = run["root"], run["report"].views[0]
    models = [m["model"] for m in run["report"].leaderboard["benchmarks"]["rag_rewardbench"]["models"]]
    disagree = [i for i in run["pairs"] if len({view.outcomes[m][i] for m in models if i in view.outcomes[m]}) > 1]
    assert 0 < len(disagree) < len(run["pairs"])
    driver = headless()
    try:
        driver.get(Path(root.path("report/index.html")).as_uri())
        assert wait_for(driver, "document.body.dataset.viewerReady") == "yes"
        count = driver.find_element(By.ID, "viewer-count")
        assert count.text == "12 of 12 items"
        driver.find_element(By.ID, "viewer-disagree").click()
        assert count.text == f"{len(disagree)} of 12 items"
        shown = [r.get_attribute("title") for r in driver.find_elements(By.CSS_SELECTOR, "#viewer-list td[title]")]
        assert shown == disagree
        driver.find_element(By.CSS_SELECTOR, "#viewer-list tr[data-i]").click()
        assert wait_for(driver, "document.body.dataset.viewerItem") == disagree[0]
        panel = driver.find_element(By.ID, "viewer-item").get_attribute("textContent")
        pair = run["pairs"][disagree[0]]
        for text in (pair["prompt"], pair["chosen"], pair["reject"]):
            assert text in panel
        table = driver.find_element(By.ID, "viewer-models")
        header, *lines = [[c.text for c in r.find_elements(By.CSS_SELECTOR, "th,td")]
                          for r in table.find_elements(By.TAG_NAME, "tr")]
        shown = {line[0].split()[0]: dict(zip(header, line)) for line in lines}
        assert {m: cells["outcome"] for m, cells in shown.items()} == \
            {m: f"{view.outcomes[m][disagree[0]]:g}" for m in models}
        judge = next(r for r in run["rows"]["synthetic-rm-02"] if r["item_id"] == disagree[0])
        for order in ("cr", "rc"):  # the judge's verdict in each order, and its raw text
            assert shown["synthetic-rm-02"][f"pick_{order}"] == ("-" if judge[f"pick_{order}"] is None
                                                               else str(judge[f"pick_{order}"]))
            assert judge[f"text_{order}"] in panel
        scorer = next(r for r in run["rows"]["synthetic-rm-00"] if r["item_id"] == disagree[0])
        assert shown["synthetic-rm-00"]["score_chosen"] == f"{scorer['score_chosen']:g}"

        pair = next(p for p in run["report"].leaderboard["benchmarks"]["rag_rewardbench"]["pairs"]
                    if p["a_only"] + p["b_only"] > 0)
        link = driver.find_element(By.CSS_SELECTOR, f"a[href*='a={pair['a']}&b={pair['b']}']")
        driver.execute_script("arguments[0].closest('details').open = true", link)  # the pairs table, folded
        link.click()
        wait_for(driver, "document.getElementById('viewer-pair').textContent.includes('differ')")
        assert count.text == f"{pair['a_only'] + pair['b_only']} of 12 items"
        assert driver.find_element(By.ID, "viewer-disagree").is_selected() is False
    finally:
        driver.quit()
