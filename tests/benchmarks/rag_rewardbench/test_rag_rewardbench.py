"""RAG-RewardBench rules (docs/protocols.md 1) with hand-computed expectations. Pure Python, milliseconds."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import rag_rewardbench as rb
from jobs.flow.reducers import aggregate

SAMPLE = "data/rag_rewardbench_appendix_d.jsonl"


def pair(subset="helpful-x", **extra):
    return {"prompt": "## References\n...\n## Question: q?\n## Response:", "chosen": "good answer",
            "reject": "bad answer", "subset": subset, **extra}


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_sample_file_is_the_six_appendix_d_examples_one_per_category():
    items = list(rb.load_items(SAMPLE))
    assert [i["error"] for i in items] == [None] * 6
    assert [rb.category(i["subset"]) for i in items] == ["helpful", "reason", "citation", "harmless", "abstain",
                                                        "conflict"]
    assert items[0]["item_id"] == "rag_rewardbench/appendix-d-example-1"
    assert items[5]["chosen"].startswith("Based on the provided references, Ben Nevis")


def test_bad_rows_become_error_rows_naming_file_row_and_field_and_good_rows_go_on(tmp_path):
    path = write_jsonl(tmp_path / "helpful.jsonl", [
        pair(), {k: v for k, v in pair().items() if k != "reject"}, pair(chosen="   "), "{not json", pair("reason-y"),
        pair(),  # same pair again
    ])
    items = list(rb.load_items(path))
    errors = [i["error"] for i in items]
    assert errors[0] is None and errors[4] is None
    assert errors[1] == f"{path}: row 2: field 'reject' missing"
    assert errors[2] == f"{path}: row 3: field 'chosen' empty or not text"
    assert errors[3].startswith(f"{path}: row 4: not valid JSON")
    assert errors[5].startswith(f"{path}: row 6: duplicate of {path}: row 1")
    assert len({i["item_id"] for i in items}) == 6


def test_parquet_and_folder_inputs(tmp_path):
    pq.write_table(pa.Table.from_pylist([pair("abstain-popqa"), pair("conflict-nq", chosen="other")]),
                   tmp_path / "abstain.parquet")
    write_jsonl(tmp_path / "helpful.jsonl", [pair("helpful-z", chosen="third")])
    items = list(rb.load_items(str(tmp_path)))
    assert sorted(i["subset"] for i in items) == ["abstain-popqa", "conflict-nq", "helpful-z"]
    assert all(i["error"] is None for i in items)
    assert {i["row"] for i in items if i["source"].endswith(".parquet")} == {1, 2}


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        list(rb.load_items(str(tmp_path / "nope.jsonl")))


def test_generative_expansion_runs_both_orders_with_the_table6_prompt():
    item = next(rb.load_items(SAMPLE))
    cr, rc = rb.expand(item, "generative")
    assert (cr["variant"], rc["variant"]) == ("cr", "rc")
    assert cr["request_id"] == item["item_id"] + "#cr" and cr["item_id"] == item["item_id"]
    assert cr["messages"][0] == {"role": "system", "content": rb.JUDGE_SYSTEM}
    user_cr, user_rc = cr["messages"][1]["content"], rc["messages"][1]["content"]
    assert user_cr.index(item["chosen"]) < user_cr.index(item["reject"])  # chosen is Response 1
    assert user_rc.index(item["reject"]) < user_rc.index(item["chosen"])  # chosen is Response 2
    assert user_cr.startswith('Prompt: "## References') and user_cr.endswith('analyzes in the response.')
    assert cr["prefill"] == "Choose " and cr["candidates"] == ["1", "2"]
    assert [list(m) for m in cr["messages"] + rc["messages"]] == [["role", "content"]] * 4
    assert [m["role"] for m in cr["messages"] + rc["messages"]] == ["system", "user", "system", "user"]


def test_scorer_expansion_is_a_closed_conversation_per_response():
    item = next(rb.load_items(SAMPLE))
    chosen, reject = rb.expand(item, "discriminative")
    assert chosen["messages"] == [{"role": "user", "content": item["prompt"]},
                                  {"role": "assistant", "content": item["chosen"]}]
    assert reject["messages"][-1] == {"role": "assistant", "content": item["reject"]}
    assert "prefill" not in chosen and "candidates" not in reject  # only judges get a verdict prefill
    assert rb.expand(item, "implicit")[0]["messages"] == chosen["messages"]
    with pytest.raises(ValueError, match="unknown reward-model kind"):
        rb.expand(item, "oracle")


@pytest.mark.parametrize("text, pick", [
    ('The answer is "Choose 1"', 1), ("**Choose 2**", 2), ("choose: 1", 1), ("Choose Response 2.", 2),
    ('"Choose 1" if Response 1 is better... so Choose 2', 2), ("Response 1 is better.", None), ("", None),
    (None, None), ("Choose 12 apples", None),
])
def test_text_verdict_parse(text, pick):
    assert rb.parse_choice(text) == pick


@pytest.mark.parametrize("lp1, lp2, pick", [
    (-0.1, -2.0, 1), (-3.0, -0.5, 2), (-1.0, -1.0, None), (None, -4.0, 2), (-4.0, None, 1), (None, None, None),
])
def test_logprob_verdict(lp1, lp2, pick):
    assert rb.logprob_choice(lp1, lp2) == pick


def answered(variant, **fields):
    return {"variant": variant, "error": None, "truncated": False, "n_tokens": 10, **fields}


ITEM = {"item_id": "rag_rewardbench/x", "subset": "helpful-x"}


def test_generative_item_is_the_mean_of_both_orders_with_consistency_and_position():
    # chosen first: log-probs pick 1 (right); chosen second: picks 1 again (wrong, position bias)
    row = rb.combine(ITEM, [answered("cr", candidate_logprobs=[-0.1, -2.0], text="Choose 1"),
                            answered("rc", candidate_logprobs=[-0.2, -1.5], text="I pick the second")],
                     "generative")
    assert (row["pick_cr"], row["pick_rc"]) == (1, 1)
    assert (row["correct_cr"], row["correct_rc"], row["correct"]) == (1.0, 0.0, 0.5)
    assert row["consistent"] is False
    assert row["text_pick_rc"] is None and row["correct_alt"] == (1.0 + 0.5) / 2  # unparsed text counts 0.5
    m = rb.measures(row)
    assert row["first_position_rate"] == 1.0 and m["first_position"] == 1.0 and m["text_parse_failure"] == 0.5

    both_right = rb.combine(ITEM, [answered("cr", candidate_logprobs=[-0.1, -2.0], text="Choose 1"),
                                   answered("rc", candidate_logprobs=[-3.0, -0.5], text="Choose 2")], "generative")
    assert both_right["correct"] == 1.0 and both_right["consistent"] is True
    text_path = rb.combine(ITEM, [answered("cr", candidate_logprobs=[-0.1, -2.0], text="no idea"),
                                  answered("rc", candidate_logprobs=[-3.0, -0.5], text="Choose 2")], "generative",
                           verdict="text")
    assert text_path["correct"] == (0.5 + 1.0) / 2 and text_path["consistent"] is None


def test_a_classifiers_row_read_beside_a_judges_has_the_classifiers_measures():
    """Read from a table that also holds a judge's rows, a classifier's row has the judge's columns, all None:
    it is still no judge's row (no text parse failure, no consistency), and a judge's row keeps its own."""
    classifier = rb.combine(ITEM, [answered("chosen", score=2.0), answered("reject", score=1.0)], "discriminative")
    judge = rb.combine(ITEM, [answered("cr", candidate_logprobs=[-0.1, -2.0], text="no idea"),
                              answered("rc", candidate_logprobs=[-3.0, -0.5], text="Choose 2")], "generative")
    read_back = {**dict.fromkeys(judge), **classifier}
    assert rb.measures(read_back) == rb.measures(classifier) == {"correct": 1.0, "error": 0.0, "truncated": 0.0}
    assert rb.measures({**dict.fromkeys(classifier), **judge}) == rb.measures(judge)
    assert rb.measures(judge)["text_parse_failure"] == 0.5


def test_a_text_verdict_judge_that_picks_the_first_response_in_both_orders_has_a_first_position_rate_of_one():
    """An API judge: no log-probs, 'Choose 1' in both orders. Its rate is of the picks it is scored by, as its
    consistency is; a vLLM judge scored by text (verdict: text) is rated by its text picks, not its log-probs."""
    api = [answered("cr", candidate_logprobs=None, text="Choose 1"),
           answered("rc", candidate_logprobs=None, text="**Choose 1**")]
    row = rb.combine(ITEM, api, "generative", verdict="text")
    assert (row["pick_cr"], row["pick_rc"], row["text_pick_cr"], row["text_pick_rc"]) == (None, None, 1, 1)
    assert (row["correct"], row["consistent"], row["first_position_rate"]) == (0.5, False, 1.0)
    assert rb.measures(row)["first_position"] == 1.0
    both_second = rb.combine(ITEM, [answered("cr", candidate_logprobs=[-3.0, -0.1], text="Choose 1"),
                                    answered("rc", candidate_logprobs=[-2.0, -0.5], text="Choose 1")],
                             "generative", verdict="text")  # log-probs pick 2 twice: not what it is scored by
    assert both_second["first_position_rate"] == 1.0
    one_verdict = rb.combine(ITEM, [answered("cr", text="Choose 1"), answered("rc", text="no idea")], "generative",
                             verdict="text")
    assert one_verdict["first_position_rate"] == 1.0 and one_verdict["consistent"] is None
    items = [{"item_id": f"rag_rewardbench/{i}", "subset": "helpful-x"} for i in range(3)]
    metrics = aggregate(rb.RagRewardBench(), [rb.combine(i, api, "generative", verdict="text") for i in items],
                        resamples=10)
    assert metrics["position"]["first_position_rate"] == 1.0 and metrics["position"]["consistency"] == 0.0


def test_rows_carry_the_pair_texts_and_the_models_that_wrote_them():
    item = next(rb.load_items(SAMPLE))
    row = rb.combine(item, [answered("chosen", score=1.0), answered("reject", error="overflow")], "discriminative")
    assert (row["chosen_model"], row["reject_model"]) == ("Mistral-Nemo-Instruct-2407", "gpt-4o-2024-08-06")
    assert (len(row["chosen"]), len(row["reject"])) == (1019, 393)  # also on a failed row
    assert row["chosen"].startswith("Hugh H. Goodwin rose to the rank of Vice Admiral")


def test_discriminative_tie_is_wrong_and_implicit_uses_reference_or_mean():
    tie = rb.combine(ITEM, [answered("chosen", score=1.5), answered("reject", score=1.5)], "discriminative")
    assert tie["correct"] == 0.0
    better = rb.combine(ITEM, [answered("chosen", score=-0.2), answered("reject", score=-0.3)], "discriminative")
    assert better["correct"] == 1.0
    # with a reference: reward = sum - ref_sum: chosen -10 - (-12) = 2 > reject -8 - (-7) = -1
    ref = rb.combine(ITEM, [answered("chosen", logp_sum=-10.0, logp_mean=-2.0, ref_logp_sum=-12.0),
                            answered("reject", logp_sum=-8.0, logp_mean=-1.0, ref_logp_sum=-7.0)], "implicit")
    assert (ref["reward_chosen"], ref["reward_reject"], ref["correct"]) == (2.0, -1.0, 1.0)
    # without: the mean per token decides (-2.0 < -1.0), although the chosen sum is lower too
    mean = rb.combine(ITEM, [answered("chosen", logp_sum=-10.0, logp_mean=-2.0, ref_logp_sum=None),
                             answered("reject", logp_sum=-8.0, logp_mean=-1.0, ref_logp_sum=None)], "implicit")
    assert mean["correct"] == 0.0


def test_a_failed_request_fails_the_item_with_its_reason():
    row = rb.combine(ITEM, [answered("chosen", score=1.0),
                            answered("reject", error="context overflow: 5000 tokens > max_model_len 4096",
                                     truncated=True)], "discriminative")
    assert row["correct"] is None and row["truncated"] is True
    assert row["error"] == "reject: context overflow: 5000 tokens > max_model_len 4096"
    missing = rb.combine(ITEM, [answered("cr", candidate_logprobs=[-1, -2], text="")], "generative")
    assert missing["error"] == "no answer for request(s) rc"


def test_category_averages_are_micro_averages_over_pairs():
    values = {"helpful-a": [1, 1, 0], "reason-b": [1, 0], "citation-c": [0.5], "harmless-x": [1, 1],
              "abstain-y": [0], "conflict-z": [1]}
    rows = [{"item_id": f"{s}/{i}", "subset": s, "correct": v} for s, vs in values.items() for i, v in enumerate(vs)]
    rows.append({"item_id": "e", "subset": "reason-b", "correct": None, "error": "boom", "truncated": True})
    m = aggregate(rb.RagRewardBench(), rows, resamples=200)
    c = m["columns"]
    assert c["helpful"] == pytest.approx(2 / 3) and c["reason"] == 0.5 and c["citation"] == 0.5
    assert c["helpful_avg"] == pytest.approx(3.5 / 6)  # micro; the macro mean of columns would be 0.5556
    assert c["harmless_avg"] == pytest.approx(3 / 4)  # micro; macro would be 0.6667
    assert c["overall"] == pytest.approx(6.5 / 10)
    assert m["n"] == 10 and m["n_errors"] == 1
    assert m["subsets"]["reason-b"]["n"] == 2 and m["subsets"]["reason-b"]["truncated_rate"] == pytest.approx(1 / 3)
    lo, hi = m["subsets"]["helpful-a"]["ci95"]
    assert 0.0 <= lo <= 2 / 3 <= hi <= 1.0
    assert m == aggregate(rb.RagRewardBench(), list(reversed(rows)), resamples=200)  # order-independent, seeded


def test_cli_aggregate_contract(tmp_path, capsys):
    from jobs.cli import main

    rows = [{"item_id": f"i{k}", "subset": s, "correct": v}
            for k, (s, v) in enumerate([("helpful-a", 1), ("harmless-b", 0), ("harmless-b", 0.5),
                                        ("conflict-c", 1)])]
    path = write_jsonl(tmp_path / "pred.jsonl", rows)
    assert main(["aggregate", "--benchmark", "rag_rewardbench", "--predictions", path,
                 "--out", str(tmp_path / "out")]) == 0
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["n"] == 4 and m["columns"]["harmless"] == 0.25 and m["columns"]["harmless_avg"] == 0.5
    assert m["columns"]["overall"] == 2.5 / 4 and m["subsets"]["harmless-b"]["n"] == 2
    assert len(m["subsets"]["conflict-c"]["ci95"]) == 2


def test_a_pairwise_preference_model_is_right_when_its_margin_favours_chosen():
    """GPM answers a vector per response; the pair's margin is computed once and stands for both scores."""
    scale = [2.0, 1.0]  # two 2-d blocks
    chosen, reject = [1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]
    # margin = 2 * (1*1 - 0*0) + 1 * (0*0 - 1*1) = 1
    assert rb.preference_margin(chosen, scale, reject) == 1.0 == -rb.preference_margin(reject, scale, chosen)
    row = rb.combine(ITEM, [answered("chosen", score=None, preference=chosen, preference_scale=scale),
                            answered("reject", score=None, preference=reject, preference_scale=scale)],
                     "discriminative")
    assert (row["score_chosen"], row["score_reject"], row["correct"]) == (1.0, -1.0, 1.0)
    swapped = rb.combine(ITEM, [answered("chosen", score=None, preference=reject, preference_scale=scale),
                                answered("reject", score=None, preference=chosen, preference_scale=scale)],
                         "discriminative")
    assert swapped["correct"] == 0.0
    tie = rb.combine(ITEM, [answered("chosen", score=None, preference=chosen, preference_scale=scale),
                            answered("reject", score=None, preference=chosen, preference_scale=scale)],
                     "discriminative")
    assert tie["score_chosen"] == 0.0 and tie["correct"] == 0.0  # a tie is wrong, as for scalar scores
