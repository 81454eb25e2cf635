"""What a sweep must satisfy when it loads, and what `plan` says of data it cannot read (issue 42, item 5): each
a one-line error naming the file and key (exit 2) before anything starts, never a traceback, a silent n=0 or a
plan that quietly leaves rows out."""
from __future__ import annotations

import gzip

import pytest
from sweeps import SAMPLE, write_sweep

from jobs.cli import main
from jobs.config import ConfigError, StorageConfig
from jobs.loading import load_sweep
from jobs.loading.checks import check_storage

JUDGE = '{name: judge, path: "gpt-x", kind: api, engine: http, api: {base_env: B, key_env: K}}'


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("limit", [-1, 0])
def test_a_limit_that_is_no_positive_count_is_refused_at_load(tmp_path, capsys, limit):
    sweep = write_sweep(tmp_path, "limits", [JUDGE], bench_extra=f", limit: {limit}")
    err = _one_line_error(capsys, ["plan", str(sweep)])
    assert f"key 'benchmarks.rag_rewardbench.limit': {limit} is not a positive number of items" in err
    assert str(sweep) in err
    assert load_sweep(write_sweep(tmp_path / "ok", "limits", [JUDGE], bench_extra=", limit: 1"))


def test_a_data_path_that_does_not_exist_is_refused_at_load(tmp_path, capsys):
    absent = tmp_path / "no-such.jsonl"
    sweep = write_sweep(tmp_path, "absent", [JUDGE], data=absent)
    err = _one_line_error(capsys, ["plan", str(sweep)])
    assert f"key 'benchmarks.rag_rewardbench.data': {absent} does not exist" in err


def test_run_refuses_missing_data_before_the_lease_and_ray(tmp_path, capsys):
    # With `size`, plan may go without the data; run may not, and says so before it takes anything.
    absent = tmp_path / "RAG-RewardBench"
    sweep = write_sweep(tmp_path, "later", [JUDGE], data=absent, bench_extra=", size: 1485",
                        storage=f'root: "{tmp_path / "results"}"')
    assert load_sweep(sweep).benchmarks["rag_rewardbench"].size == 1485
    err = _one_line_error(capsys, ["run", str(sweep)])
    assert f"benchmarks.rag_rewardbench.data: {absent}" in err and "not on this machine" in err
    assert not (tmp_path / "results").exists()  # no lease, no manifest: nothing was started


@pytest.mark.parametrize("run", ["..", ".", "a/b", '""', "/"])
def test_storage_run_that_is_no_folder_name_is_a_one_line_error(tmp_path, capsys, run):
    sweep = write_sweep(tmp_path, "runs", [JUDGE])
    err = _one_line_error(capsys, ["plan", str(sweep), f"storage.run={run}"])
    assert "key 'storage.run'" in err and "is not one folder name" in err


def test_a_control_character_in_the_run_name_is_refused(tmp_path):
    # the command line cannot carry one (OmegaConf reads "x\ny" as "x y"); a YAML file can
    with pytest.raises(ConfigError, match="key 'storage.run'"):
        check_storage(StorageConfig(run="x\ny"), tmp_path / "sweep.yaml")


def test_plan_names_the_rows_it_could_not_read_and_plans_the_rest(tmp_path, capsys):
    good = SAMPLE.read_text(encoding="utf-8").splitlines()
    data = tmp_path / "mixed.jsonl"
    data.write_bytes(("\n".join(good[:3]) + "\n").encode() + b'{"id": "x", "prompt": "\xff\xfe"}\n')
    sweep = write_sweep(tmp_path, "mixed", [JUDGE], data=data)
    assert main(["plan", str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "3 items from the data, leaving out 1 unreadable row of" in out and str(data) in out


@pytest.mark.parametrize("content", [b"", b'{"id": "cut", "prompt": "the half of a ro', b"\xff\xfe\xfa\n\xc3\x28\n"],
                         ids=["empty", "truncated", "invalid utf-8"])
def test_plan_fails_naming_the_file_when_a_benchmark_has_no_readable_item(tmp_path, capsys, content):
    data = tmp_path / "bad.jsonl"
    data.write_bytes(content)
    sweep = write_sweep(tmp_path, "bad", [JUDGE], data=data)
    assert main(["plan", str(sweep)]) == 1
    printed = capsys.readouterr()
    assert f"no readable item in {data}" in printed.err and "rag_rewardbench x judge" in printed.err
    assert "cannot plan" in printed.out


def test_plan_says_when_it_plans_without_the_data(tmp_path, capsys):
    absent = tmp_path / "RAG-RewardBench"
    sweep = write_sweep(tmp_path, "size", [JUDGE], data=absent, bench_extra=", size: 1485")
    assert main(["plan", str(sweep)]) == 0
    assert f"data not on this machine ({absent})" in capsys.readouterr().out


def test_a_gzipped_data_file_is_read_like_a_plain_one(tmp_path):
    # the data-path check looks for the file, not its suffix: .jsonl.gz loads as it did
    data = tmp_path / "pairs.jsonl.gz"
    with gzip.open(data, "wt", encoding="utf-8") as f:
        f.write(SAMPLE.read_text(encoding="utf-8"))
    assert load_sweep(write_sweep(tmp_path, "gz", [JUDGE], data=data)).benchmarks["rag_rewardbench"].data == [str(data)]
