"""The chaos harness (issue 44, tests/chaos.py) on 3 fixed seeds of the quick sweep (3 models x 3 benchmarks on
a head and two worker nodes, the run root on S3 behind a gate): every fault a seed draws is injected while the
sweep runs, and every invariant of tests/chaos_checks.py holds at the end. `make chaos` runs 50 seeds of the full
sweep (with a vLLM engine) through scripts/chaos.py. Each seed prints its line."""
from __future__ import annotations

import pytest
from chaos import run_seed

from scripts.chaos import seed_line

pytestmark = pytest.mark.integration

SEEDS = (1, 2, 3)  # between them: an S3 outage, a node removed, a second driver, SIGTERM, a corrupted part,
# an engine killed, API bursts


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("chaos")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_chaos_seed_keeps_every_invariant(runs, seed):
    said = run_seed(seed, runs, "quick")
    print(seed_line(said))
    assert said.get("injected"), said
    assert not said.get("problems"), "\n".join(said["problems"])
