"""The reducer's compact state (jobs.flow.reducers.GroupRows: keys in Arrow, values in float arrays) gives the
pairs Python's own sorting gave, keys outside ASCII included, the last value of a key winning across shards, a
row without a measure's value leaving the one before; and benchmarks.keyed_values.pooled orders several
groups' values as sorting all their pairs would."""
import random

from benchmarks.keyed_values import Pairs, pooled
from jobs.flow.reducers import SubsetReducer

KEYS = ["b", "a", "Z", "é", "e", "ß", "z", "日本", "😀", "a\u0301", "ab", "A"]


def _reduce(*shards: list[tuple[str, float | None]]) -> dict:
    reducer = SubsetReducer(lambda row: {"m": row["m"]}, lambda row: "g", lambda row: row["k"])
    state = reducer.init()
    for shard in shards:
        reducer.merge(state, reducer.reduced({"k": k, "m": m} for k, m in shard))
    return reducer.finalize(state)


def test_pairs_are_sorted_as_python_sorts_str_one_per_key_the_last_added():
    later = [("é", 100.0), ("a", 101.0), ("b", None)]  # a later shard saw é and a again; b without a value
    pairs = _reduce([(k, float(i)) for i, k in enumerate(KEYS)], later)["m"]["g"]
    expected = sorted({**{k: float(i) for i, k in enumerate(KEYS)}, "é": 100.0, "a": 101.0}.items())
    assert list(pairs) == expected
    assert len(pairs) == len(KEYS) and pairs[0] == expected[0] and pairs[-1] == expected[-1]
    assert pairs[2:5] == expected[2:5] and pairs[::3] == expected[::3]


def test_shards_merged_give_the_same_groups_as_one_pass():
    rng = random.Random(7)
    rows = [{"item_id": f"i{rng.randrange(5000)}", "subset": rng.choice("xyz"), "correct": rng.random()}
            for _ in range(20_000)]
    reducer = SubsetReducer(lambda row: {"correct": row["correct"]})
    state = reducer.init()
    for start in range(0, len(rows), 3_000):
        reducer.merge(state, reducer.reduced(rows[start:start + 3_000]))
    merged = reducer.finalize(state)
    last: dict[str, dict[str, float]] = {}
    for row in rows:
        last.setdefault(row["subset"], {})[row["item_id"]] = row["correct"]
    assert {g: list(p) for g, p in merged["correct"].items()} == {g: sorted(v.items()) for g, v in last.items()}


def test_pooled_orders_values_as_sorting_every_pair_would():
    x = _reduce([("é", 0.0), ("a", 3.0), ("c", 1.0)])["m"]["g"]
    assert isinstance(x, Pairs)
    y = [("d", 5.0), ("b", 2.0), ("a", 4.0)]  # a plain, unsorted sequence: sorted first
    by_group = {"x": x, "y": y}
    assert list(pooled(by_group, ["x", "y", "missing"])) == [3.0, 4.0, 2.0, 1.0, 5.0, 0.0]
    assert list(pooled(by_group, ["y"])) == [4.0, 2.0, 5.0] and list(pooled(by_group, [])) == []


def test_measures_and_groups_come_in_the_order_first_seen_a_measure_only_where_it_has_values():
    reducer = SubsetReducer(lambda row: {"b": row.get("b"), "a": row.get("a")})
    rows = [{"item_id": "1", "subset": "y", "a": 1.0}, {"item_id": "2", "subset": "x", "b": 0.0, "a": 0.5},
            {"item_id": "3", "subset": "z"}]
    state = reducer.reduced(rows[:2])
    reducer.merge(state, reducer.reduced(rows[2:]))
    groups = reducer.finalize(state)
    assert [(m, list(g)) for m, g in groups.items()] == [("a", ["y", "x"]), ("b", ["x"])]
    assert list(groups["a"]["x"]) == [("2", 0.5)] and list(groups["b"]["x"]) == [("2", 0.0)]


def test_a_measure_one_shard_of_a_group_lacks_keeps_each_value_with_its_own_key():
    reducer = SubsetReducer(lambda row: {"a": row.get("a"), "b": row.get("b")})
    first = [{"item_id": "1", "subset": "g", "a": 1.0}, {"item_id": "2", "subset": "g", "a": 2.0}]
    second = [{"item_id": "3", "subset": "g", "b": 3.0}, {"item_id": "4", "subset": "g", "a": 4.0, "b": 5.0}]
    third = [{"item_id": "5", "subset": "g", "b": 6.0}]  # after a shard without b: its value must stay with 5
    for shards in ([first, second, third], [second, first, third]):
        state = reducer.init()
        for shard in shards:
            reducer.merge(state, reducer.reduced(shard))
        groups = reducer.finalize(state)
        assert list(groups["a"]["g"]) == [("1", 1.0), ("2", 2.0), ("4", 4.0)]
        assert list(groups["b"]["g"]) == [("3", 3.0), ("4", 5.0), ("5", 6.0)]
