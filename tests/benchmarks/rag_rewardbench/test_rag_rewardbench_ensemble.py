"""RAG-RewardBench ensembles (issue 30, item 3) with hand-computed margins, z-scores and votes."""
import pytest

from benchmarks.protocol import benchmark

RRB = benchmark("rag_rewardbench")


def scorer(column, pairs):
    """A member's rows: item -> (chosen, rejected) score, or None for a failed row."""
    return [{"item_id": item, "subset": "s", "correct": None if p is None else float(p[0] > p[1]),
             "error": "boom" if p is None else None,
             f"{column}_chosen": None if p is None else p[0], f"{column}_reject": None if p is None else p[1]}
            for item, p in pairs.items()]


# d1: scores +-1 (sd 1), margins a 2, b -2, c 2, d failed; d2: +-10 (sd 10), margins a 20, b 20, c -20, d -20;
# i1 (implicit rewards, sd 1): margins a 2, b -2, c -2, d 2
D1 = scorer("score", {"a": (1, -1), "b": (-1, 1), "c": (1, -1), "d": None})
D2 = scorer("score", {"a": (10, -10), "b": (10, -10), "c": (-10, 10), "d": (-10, 10)})
I1 = scorer("reward", {"a": (1, -1), "b": (-1, 1), "c": (-1, 1), "d": (1, -1)})
JUDGE = [{"item_id": i, "subset": "s", "correct": c, "error": None} for i, c in zip("abcd", (0.5, 1.0, 0.0, 0.5))]
JUDGE.append({"item_id": "e", "subset": "t", "correct": None, "error": "context overflow"})


def by_item(rows):
    return {r["item_id"]: r for r in rows}


def test_mean_of_margins():
    rows = by_item(RRB.ensemble({"d1": D1, "d2": D2, "i1": I1}, "mean"))
    # a: (2 + 20 + 2) / 3 = 8; b: (-2 + 20 - 2) / 3; c: (2 - 20 - 2) / 3; d: d1 failed, (-20 + 2) / 2 = -9
    assert {i: (r["margin"], r["correct"]) for i, r in rows.items()} == {
        "a": (8.0, 1.0), "b": (pytest.approx(16 / 3), 1.0), "c": (pytest.approx(-20 / 3), 0.0), "d": (-9.0, 0.0)}
    assert rows["a"]["benchmark"] == "rag_rewardbench" and rows["a"]["subset"] == "s"


def test_z_scored_mean_weighs_members_alike():
    rows = by_item(RRB.ensemble({"d1": D1, "d2": D2, "i1": I1}, "zscore"))
    # each member's margins over its own sd: d2's 20s become 2s; b: (-2 + 2 - 2) / 3 flips to wrong; d: a tie,
    # wrong as one scorer's tie is
    assert {i: (r["margin"], r["correct"]) for i, r in rows.items()} == {
        "a": (2.0, 1.0), "b": (pytest.approx(-2 / 3), 0.0), "c": (pytest.approx(-2 / 3), 0.0), "d": (0.0, 0.0)}


def test_majority_of_votes_counts_a_split_judge_as_abstaining():
    rows = by_item(RRB.ensemble({"d1": D1, "d2": D2, "i1": I1, "j": JUDGE}, "majority"))
    # a: 3 chosen, j abstains (0.5) -> right; b: d1 and i1 reject, d2 and j chosen -> tie, 0.5; c: 1 vs 3 -> wrong;
    # d: d1 failed, d2 reject, i1 chosen, j abstains -> tie; e: only j, failed -> an error row
    assert {i: r["correct"] for i, r in rows.items()} == {"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.5, "e": None}
    assert rows["d"]["votes"] == "d1=none; d2=reject; i1=chosen; j=-"
    assert rows["e"]["error"] == "no member scored this pair" and rows["e"]["subset"] == "t"


def test_a_judge_cannot_join_an_average_and_unknown_rules_are_named():
    with pytest.raises(ValueError, match="member 'j' has no scores to average"):
        RRB.ensemble({"d1": D1, "j": JUDGE}, "mean")
    with pytest.raises(ValueError, match="unknown ensemble rule 'median'"):
        RRB.ensemble({"d1": D1, "d2": D2}, "median")
    assert RRB.ensemble_rules == ("mean", "zscore", "majority")
    assert benchmark("bianbench").ensemble_rules == ("majority",)
    with pytest.raises(ValueError, match="bianbench has no ensemble rule 'mean'"):
        benchmark("bianbench").ensemble({}, "mean")
    with pytest.raises(ValueError, match="utility has no ensemble rule 'majority'"):
        benchmark("utility").ensemble({}, "majority")


def test_error_rows_and_half_scored_rows_give_no_score_or_vote_beside_good_ones():
    from benchmarks.rag_rewardbench.ensemble import _votes, member_scores
    rows = [{"item_id": "a", "score_chosen": 2.0, "score_reject": 1.0},
            {"item_id": "b", "score_chosen": 3.0, "score_reject": 0.0, "error": "api: timeout"},
            {"item_id": "c", "score_chosen": None, "score_reject": 1.0},  # a rejected score only
            {"item_id": "d", "score_chosen": 1.0, "score_reject": None}]
    assert member_scores("m", rows) == {"a": (2.0, 1.0)}
    # a member whose only scores are rejected ones has no chosen score column: no scores to average
    with pytest.raises(ValueError, match=r"member 'r' has no scores to average \(score_chosen/score_reject or "
                                         r"reward_chosen/reward_reject\): a judge can join a majority ensemble only$"):
        member_scores("r", [{"item_id": "c", "score_chosen": None, "score_reject": 1.0}])
    votes = [{"item_id": "a", "correct": 1.0}, {"item_id": "b", "correct": 0.0},
             {"item_id": "c", "correct": 0.5}, {"item_id": "e", "correct": 1.0, "error": "parse: no verdict"},
             {"item_id": "f", "correct": None}]
    assert _votes(votes) == {"a": 1, "b": -1, "c": 0}
