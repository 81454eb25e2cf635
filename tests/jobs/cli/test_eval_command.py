"""`ragjudge eval` as a new user runs it (issue 61): their own model folder (a copy of the tiny classifier) and
their own pairs (question, passages, chosen, rejected; no subset), from an empty folder with an empty home, on a
real local Ray cluster and vLLM's CPU engine. The stored requests hold every passage; the written sweep runs again
to equal metrics; the same rows as CSV and Parquet, and mapped by a config's `columns:`, give the same metrics; a
file of only bad rows exits 1 with its reasons."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from actors.built_in_models import TINY_CLASSIFIER, resolve_model
from actors.templating import Templater
from benchmarks.paths import CHECKOUT
from benchmarks.rag_rewardbench import expand, load_items

ROWS = [{"question": f"What colour is thing {i}?",
         "passages": [f"Thing {i} is painted blue.", {"title": f"Thing {i}", "text": f"It was never red ({i})."}],
         "chosen": f"Thing {i} is blue [1].", "rejected": f"Thing {i} is red.", "note": "unread"} for i in range(5)]
TIMING = ("seconds", "started_at", "finished_at")


def _ragjudge(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "HF_HOME": str(home / "hf"), "PYTHONPATH": str(CHECKOUT)}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "jobs", *args], check=False, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _metrics(run: Path) -> dict[str, dict]:
    return {p.parent.parent.name.removeprefix("benchmark="): {k: v for k, v in json.loads(p.read_text()).items()
                                                             if k not in (*TIMING, "config")}
            for p in run.glob("metrics/benchmark=*/model=*/metrics.json")}


@pytest.mark.integration
def test_eval_of_a_users_folder_and_pairs_from_an_empty_folder(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    shutil.copytree(resolve_model(TINY_CLASSIFIER), work / "my-rm")
    (work / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))

    done = _ragjudge(home, work, "eval", "./my-rm", "--data", "pairs.jsonl", "--columns", "reject=rejected")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kind discriminative (config.json: LlamaForSequenceClassification" in done.stdout
    assert "column 'note' not read" in done.stdout and "cells: 1 done" in done.stdout
    assert "pairs" in done.stdout and "Overall" in done.stdout
    [run] = (work / "results").glob("eval-my-rm-*")
    first = _metrics(run)["pairs"]
    assert first["n"] == 5 and first["n_bad_rows"] == 0

    # Every request the engine scored held every passage: its token count is that of the templated request.
    templater = Templater(str(work / "my-rm"))
    expected = {r["request_id"]: len(templater.closed(r["messages"]))
                for item in load_items(str(work / "pairs.jsonl"), {"reject": "rejected"})
                for r in expand(item, "discriminative")}
    stored = {row["request_id"]: row["n_tokens"]
              for part in run.glob("requests/**/*.parquet") for row in pq.read_table(part).to_pylist()}
    assert stored == expected

    again = _ragjudge(home, tmp_path, "run", str(run / "sweep.yaml"), "storage.run=again")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _metrics(run.parent / "again") == {"pairs": first}

    # The same rows as CSV (passages as JSON text) and Parquet, and the JSONL mapped by a config's columns.
    flat = [{**r, "passages": json.dumps(r["passages"])} for r in ROWS]
    with (work / "pairs.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(flat[0]))
        writer.writeheader()
        writer.writerows(flat)
    pq.write_table(pa.Table.from_pylist(flat), work / "pairs.parquet")
    benches = [{"name": f"as_{form}", "module": "rag_rewardbench", "data": [f"pairs.{form}"],
                "columns": {"reject": "rejected"}} for form in ("jsonl", "csv", "parquet")]
    sweep = {"name": "forms", "benchmarks": benches, "models": [{"name": "my-rm", "path": str(work / "my-rm"),
                                                                 "kind": "discriminative", "vllm": {"enforce_eager": True},
                                                                 "max_model_len": 4096}],
             "storage": {"root": str(work / "results"), "run": "forms"}}
    (work / "forms.yaml").write_text(json.dumps(sweep))
    forms = _ragjudge(home, work, "run", "forms.yaml")
    assert forms.returncode == 0, forms.stderr[-3000:]
    assert _metrics(work / "results" / "forms") == {f"as_{form}": first for form in ("jsonl", "csv", "parquet")}

    (work / "bad.jsonl").write_text("not json\n" + json.dumps({"question": "q?", "chosen": "c"}) + "\n")
    bad = _ragjudge(home, work, "eval", "./my-rm", "--data", "bad.jsonl", "--columns", "reject=rejected")
    assert bad.returncode == 1
    assert "FAILED_DATA bad x my-rm: no readable row" in bad.stderr
    assert "bad.jsonl: row 1: not valid JSON" in bad.stderr
    assert "bad.jsonl: row 2: field 'reject' (column 'rejected') missing" in bad.stderr
    [failed] = [board for board in (work / "results").glob("eval-my-rm-*/report/leaderboard.json")
                if json.loads(board.read_text())["cells_not_scored"]]
    [cell] = json.loads(failed.read_text())["cells_not_scored"]
    assert (cell["benchmark"], cell["status"]) == ("bad", "failed_data") and "not valid JSON" in cell["reason"]
    page = (failed.parent / "index.html").read_text()
    assert "Cells not scored" in page and "failed_data" in page and "Cells not scored" in bad.stdout
