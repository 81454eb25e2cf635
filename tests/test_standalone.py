"""The repository stands alone: what the demo and the tests read is inside it (data/, tests/data/), so a clone
with nothing beside it loads every benchmark of the demo sweep."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Spelled from parts so that this file, which names them, is not itself a file that reads beside the clone.
OUTSIDE = ("/".join(("..", "shared")), "RAGJUDGE_" + "SHARED", '/ "' + 'shared"', "RAGJUDGE_" + "SCHEMAS")
# Loads the demo sweep from the copy and reads each benchmark's data the way its cell does (retrieval: corpora,
# qrels and queries; the others: load_items), printing counts as JSON.
LOAD_DEMO = """
import json
from benchmarks.options import typed_options
from benchmarks.protocol import RetrievalBenchmark, benchmark
from jobs.flow import read_items
from jobs.loading import load_sweep

sweep = load_sweep("conf/sweeps/demo.yaml")
out = {}
for name, bench in sweep.benchmarks.items():
    spec = benchmark(bench.module)
    options = typed_options(spec.Options, bench.options)
    if isinstance(spec, RetrievalBenchmark):
        n, bad = 0, 0
        for domain in spec.domains(options):
            _, corpus, corpus_problems = spec.corpus(bench.data, domain)
            qrels, qrels_problems = spec.qrels(bench.data, domain)
            rows, problems = spec.queries(bench.data, domain, options, bench.limit)
            n += len(rows) * bool(corpus) * bool(qrels)
            bad += len(corpus_problems) + len(qrels_problems) + len(problems)
    else:
        items = list(read_items(spec, bench.data, bench.limit))
        n, bad = sum(not i.get("error") for i in items), sum(bool(i.get("error")) for i in items)
    out[name] = {"n": n, "bad": bad, "data": bench.data}
print(json.dumps(out))
"""


def _tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    return [name for name in listed if name and (REPO / name).is_file()]


def test_nothing_reads_beside_the_repository():
    found = [f"{name}: {word}" for name in _tracked_files()
             if name.split("/")[0] in ("benchmarks", "actors", "jobs", "conf", "tests", "perf", "Makefile", ".ci")
             for word in OUTSIDE if word in (REPO / name).read_text(encoding="utf-8", errors="replace")]
    assert found == []


# Copies the repository and loads the demo in a fresh interpreter, which imports the project anew (about 3.5 s).
@pytest.mark.integration
def test_demo_loads_from_a_copy_of_the_repository_alone(tmp_path):
    copy = tmp_path / "alone" / "repo"  # nothing beside it
    for name in _tracked_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, copy / name)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run([sys.executable, "-c", LOAD_DEMO], cwd=copy, env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(loaded) == {"rag_rewardbench", "bianbench", "utility", "mtrag_generation_mini", "mtrag_retrieval"}
    for name, counts in loaded.items():
        assert counts["n"] > 0 and counts["bad"] == 0, (name, counts)
        assert all(path.startswith(str(copy)) for path in counts["data"]), (name, counts["data"])
    assert loaded["mtrag_generation_mini"]["n"] == 507  # task_ids pick 8 of them when requests are expanded
