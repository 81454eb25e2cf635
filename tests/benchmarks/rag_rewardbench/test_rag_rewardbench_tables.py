"""RAG-RewardBench's Table 2 as text: titled with the run's name for the benchmark (a custom config's), every
column headed by its whole title (issue 61: two were "General", two cut to "Helpful " and "Harmless")."""
from benchmarks import rag_rewardbench as rb
from benchmarks.rag_rewardbench.metrics import COLUMN_TITLES

COLUMNS = ("helpful", "reason", "citation", "helpful_avg", "harmless", "abstain", "conflict", "harmless_avg",
           "overall")


def _metrics(config: str) -> dict:
    values = dict(zip(COLUMNS, (0.5, 0.25, 1.0, 0.6, 0.75, None, 0.0, 0.5, 2 / 3)))
    return {"model": "judge", "kind": "generative", "config": config, "n": 6, "columns": values,
            "columns_ci95": {"overall": [0.3333, 1.0]}}


def test_a_custom_configs_table_carries_its_name_and_a_distinct_title_per_column():
    # Laid out by hand: the model column 10 wide (its least: "judge" + 4 is 9), each column right-aligned to
    # its title's width, None as "-", then the overall interval padded to 17 and n.
    assert rb.table_text([_metrics("my_pairs")]).splitlines() == [
        ("my_pairs (RAG-RewardBench): accuracy %, micro-averaged; D/G/I/A = discriminative/generative/implicit RM,"
        " API judge"),
        ("Model      Helpful/General Reason Citation Helpful Avg. Harmless/General Abstain Conflict Harmless Avg. "
        "Overall   95% CI (overall)   n"),
        ("[G] judge             50.0   25.0    100.0         60.0             75.0     -        0.0          50.0 "
        "   66.7   [33,100]           6"),
    ]


def test_every_column_is_headed_by_its_whole_title_once():
    header = rb.table_text([_metrics("rag_rewardbench")]).splitlines()[1]
    assert len(set(COLUMN_TITLES.values())) == len(COLUMN_TITLES)
    assert all(header.count(title) == 1 for title in COLUMN_TITLES.values()), header


def test_the_benchmarks_own_config_keeps_the_papers_name_and_the_page_names_the_config():
    assert rb.table_text([_metrics("rag_rewardbench")]).startswith("RAG-RewardBench: accuracy %")
    assert rb.table_text([{k: v for k, v in _metrics("x").items() if k != "config"}]).startswith("RAG-RewardBench:")
    assert rb.table_html([_metrics("my_pairs")]).startswith("<p>my_pairs (RAG-RewardBench): accuracy (%)")
