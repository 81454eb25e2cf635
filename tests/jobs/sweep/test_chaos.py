"""The chaos harness (issue 44, tests/chaos.py) on 3 fixed seeds of the quick sweep (3 models x 3 benchmarks on
a head and two worker nodes, the run root on S3 behind a gate): every fault a seed draws is injected while the
sweep runs, and every invariant of tests/chaos_checks.py holds at the end. `make chaos` runs 50 seeds of the full
sweep (with a vLLM engine) through tests/chaos_seeds.py. Each seed prints its line."""
from __future__ import annotations

import pytest
from chaos import run_seed
from chaos_seeds import seed_line

# `make test` runs this file beside the other integration tests (Makefile: test-own-ray): the seeds start their
# own clusters and share nothing with the session's Ray.
pytestmark = pytest.mark.integration
QUICK_SEED_S = 600  # one quick seed's process at most (each took 64 to 240 s, the slowest beside other tests)

SEEDS = (1, 2, 3)  # between them: an S3 outage, a node removed, a second driver, SIGTERM, a corrupted part,
# an engine killed, API bursts


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("chaos")


@pytest.mark.timeout(2 * QUICK_SEED_S + 120)  # the first seed runs the clean run before its own
@pytest.mark.parametrize("seed", SEEDS)
def test_a_chaos_seed_keeps_every_invariant(runs, seed):
    said = run_seed(seed, runs, "quick", QUICK_SEED_S)
    print(seed_line(said))
    assert said.get("injected"), said
    assert not said.get("problems"), "\n".join(said["problems"])
