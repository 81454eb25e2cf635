"""Every benchmark's text table is titled with the run's name for the benchmark (metrics.json's `config`) where
it is not the module's own, so two configs of one benchmark never print alike (issue 61)."""
import pytest

from benchmarks.protocol import benchmark
from benchmarks.tables import titled


def test_a_title_names_the_configs_that_are_not_the_modules():
    assert titled("RAG-RewardBench", "rag_rewardbench", [{"config": "my_pairs"}]) == "my_pairs (RAG-RewardBench)"
    assert titled("RAG-RewardBench", "rag_rewardbench", [{"config": "rag_rewardbench"}, {}]) == "RAG-RewardBench"
    assert titled("RAG-RewardBench", "rag_rewardbench", []) == "RAG-RewardBench"
    both = [{"config": "rag_rewardbench"}, {"config": "my_pairs"}]  # one table of two configs names both
    assert titled("RAG-RewardBench", "rag_rewardbench", both) == "my_pairs, rag_rewardbench (RAG-RewardBench)"


# the least metrics.json each table draws from, and the first line of its default title
CASES = {
    "bianbench": ({"model": "judge", "splits": {}}, "Bi'anBench: accuracy %"),
    "mtrag_generation": ({"model": "judge", "settings": {}}, "mtRAG generation. IDK-conditioned"),
    "mtrag_retrieval": ({"model": "bm25", "strategies": {}}, "mtRAG retrieval: Table 3 layout"),
    "utility": ({"model": "judge", "conditions": {"pointwise/utility": {
        "form": "pointwise", "subsets": {}, "all": {"n": 1}}}}, "Utility judgments: Evidence sets"),
}


@pytest.mark.parametrize("module", sorted(CASES))
def test_each_benchmarks_table_is_titled_with_a_custom_configs_name(module):
    metrics, default = CASES[module]
    table = benchmark(module).table_text
    assert table([{**metrics, "config": module}]).startswith(default)
    paper = default.split(":")[0].split(".")[0]
    assert table([{**metrics, "config": "my_cfg"}]).startswith(f"my_cfg ({paper})")


def test_aligned_pads_labels_left_and_numbers_right():
    from benchmarks.tables import aligned
    rows = [["name", "n", "acc"], ["a", "10", "0.5"], ["longer", "2", "1.25"]]
    assert aligned(rows) == "name     n   acc\na       10   0.5\nlonger   2  1.25"
    assert aligned(rows, left=2) == "name    n    acc\na       10   0.5\nlonger  2   1.25"  # "n " padded left
    assert aligned([["1"], ["22"]], left=0) == " 1\n22"  # a right-aligned first column keeps its padding
    assert aligned([["x", "1"], ["yy", "1"]], left=2) == "x   1\nyy  1"  # trailing padding cut
