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


# Issue 64: the whole table, laid out by hand, for five models of the four kinds and one unknown; a tie at 50.0
# (kept in the input's order), a model with no overall (ranked last, not first: `or 0.0`), every note line.
def _five_models() -> list[dict]:
    return [
        {"model": "implicit-rm", "kind": "implicit", "n": 6, "columns": {"overall": 0.5, "helpful": 0.5},
         "columns_ci95": {"overall": [0.25, 0.75], "helpful": [0.0, 1.0]}},
        {"model": "new-kind", "kind": "weird", "config": "my_pairs", "n": 4, "columns": {}, "columns_ci95": {},
         "synthetic_subsets": ["s1", "s2"], "n_bad_rows": 3},
        {"model": "gen-judge", "kind": "generative", "n": 10,
         "columns": {"helpful": 0.5, "reason": 0.25, "citation": 1.0, "helpful_avg": 0.6, "harmless": 0.75,
                     "abstain": None, "conflict": 0.0, "harmless_avg": 0.5, "overall": 0.5},
         "columns_ci95": {"overall": [0.2, 0.8]}, "note": "pooled over two runs",
         "position": {"accuracy_chosen_first": 0.6, "accuracy_chosen_second": 0.4, "consistency": 0.8,
                      "first_position_rate": 0.55, "text_parse_failure_rate": None},
         "n_errors": 2, "n_bad_rows": 1},
        {"model": "api-judge", "kind": "api", "n": 12, "columns": {"overall": 0.9},
         "columns_ci95": {"overall": [0.8, 1.0]}, "note": "served by <vendor> & co",
         "position": {"accuracy_chosen_first": 0.9, "accuracy_chosen_second": 1.0, "consistency": 0.9,
                      "first_position_rate": 0.5, "text_parse_failure_rate": 0.0},
         "n_errors": 1},
        {"model": "rm", "kind": "discriminative", "n": 8, "columns": {"overall": 0.25, "harmless": 0.125},
         "columns_ci95": {"overall": [0.0, 0.5]}},
    ]


def test_the_whole_text_table_ranks_ties_in_order_puts_no_overall_last_and_prints_every_note():
    # The model column is 15 wide ("implicit-rm" + 4); a missing cell is "  -  " right-aligned to its title.
    dashes = "             -      -        -            -                -       -        -             -  "
    assert rb.table_text(_five_models()).split("\n") == [
        ("my_pairs, rag_rewardbench (RAG-RewardBench): accuracy %, micro-averaged; D/G/I/A = "
         "discriminative/generative/implicit RM, API judge"),
        ("Model           Helpful/General Reason Citation Helpful Avg. Harmless/General Abstain Conflict "
         "Harmless Avg. Overall   95% CI (overall)   n"),
        "[A] api-judge  " + dashes + "    90.0   [80,100]           12",
        ("[I] implicit-rm            50.0    -        -            -                -       -        -      "
         "       -      50.0   [25,75]            6"),
        ("[G] gen-judge              50.0   25.0    100.0         60.0             75.0     -        0.0      "
         "    50.0    50.0   [20,80]            10"),
        ("[D] rm                      -      -        -            -               12.5     -        -      "
         "       -      25.0   [0,50]             8"),
        "[?] new-kind   " + dashes + "     -                        4",
        ("Generative judges, both orders: acc(chosen 1st) acc(chosen 2nd) consistency 1st-position rate  "
         "text-parse failures"),
        "  gen-judge:  60.0  40.0  80.0  55.0   -  ",
        "  api-judge:  90.0 100.0  90.0  50.0   0.0",
        ("  new-kind: 2 SYNTHETIC subsets (generated stand-in pairs for timing, "
         "benchmarks/rag_rewardbench/synthetic.py): not a result, in no column"),
        "  new-kind: 0 pairs not scored (3 bad input rows); see errors/",
        "  gen-judge: 2 pairs not scored (1 bad input rows); see errors/",
        "  api-judge: 1 pairs not scored (0 bad input rows); see errors/",
        "Notes:",
        "  gen-judge: pooled over two runs",
        "  api-judge: served by <vendor> & co",
    ]


def test_a_table_without_notes_positions_or_errors_prints_none_of_their_lines():
    assert rb.table_text([_five_models()[4]]).split("\n") == [
        ("RAG-RewardBench: accuracy %, micro-averaged; D/G/I/A = discriminative/generative/implicit RM, "
         "API judge"),
        ("Model      Helpful/General Reason Citation Helpful Avg. Harmless/General Abstain Conflict "
         "Harmless Avg. Overall   95% CI (overall)   n"),
        ("[D] rm                 -      -        -            -               12.5     -        -             -"
         "      25.0   [0,50]             8"),
    ]


def test_the_whole_html_table_ranks_best_first_escapes_notes_and_puts_each_cells_interval_under_it():
    models = _five_models()
    empty = "<td>-<br><small></small></td>"
    assert rb.table_html([models[4], models[0], models[3]]) == (
        "<p>RAG-RewardBench: accuracy (%), micro-averaged over pairs; 95% bootstrap intervals.</p><table>"
        "<tr><th>Model</th><th>Helpful/General</th><th>Reason</th><th>Citation</th><th>Helpful Avg.</th>"
        "<th>Harmless/General</th><th>Abstain</th><th>Conflict</th><th>Harmless Avg.</th><th>Overall</th>"
        "<th>n</th></tr>"
        "<tr><td>api-judge (api)<br><small>served by &lt;vendor&gt; &amp; co</small></td>" + empty * 8
        + "<td>90.0<br><small>[80,100]</small></td><td>12</td></tr>"
        "<tr><td>implicit-rm (implicit)</td><td>50.0<br><small>[0,100]</small></td>" + empty * 7
        + "<td>50.0<br><small>[25,75]</small></td><td>6</td></tr>"
        "<tr><td>rm (discriminative)</td>" + empty * 4 + "<td>12.5<br><small></small></td>" + empty * 3
        + "<td>25.0<br><small>[0,50]</small></td><td>8</td></tr></table>")
