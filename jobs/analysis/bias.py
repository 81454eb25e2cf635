"""Bias columns from stored predictions (issue 30): is a model's accuracy mostly a length preference, does it
favour its own family's responses, and (for judges asked in both orders) the position numbers already
computed, side by side in leaderboard.json.

- `baselines`: per benchmark, the accuracy of always picking the longer (the shorter) response, overall and per
  subset, over the pairs whose lengths differ (a tie has no longer response); lengths in characters, and in
  tokens of the named tokenizer where one counted them.
- `bias.length`: a model's accuracy on the pairs whose chosen response is the longer one and on those where it
  is the shorter one (a tie counts in neither), and the gap between the two with a bootstrap interval (the two
  splits are disjoint items, each resampled on its own: benchmarks.stats.bootstrap_diff_ci).
- `bias.self_preference`: for a model whose family (conf/model_families.yaml) wrote some responses, its
  accuracy when its family's response is the chosen one and when it is the rejected one; a pair both of whose
  responses are its family's counts in neither. The same gap and interval.
- `bias.position`: a both-order judge's accuracy with the right answer first and second, and its
  first-position pick rate (jobs.analysis.reliability).
"""
from __future__ import annotations

from collections.abc import Mapping

from benchmarks.boundary_types import JsonObject
from benchmarks.stats import bootstrap_diff_ci
from jobs.analysis.leaderboard import Outcomes
from jobs.analysis.report_view import BenchmarkView
from jobs.analysis.response_pairs import ResponsePair
from jobs.loading.families import Families, family_of, model_names

UNITS = ("chars", "tokens")  # a ResponsePair's chosen_<unit> and reject_<unit>


def length_sides(pairs: Mapping[str, ResponsePair], unit: str = "chars") -> dict[str, int]:
    """item -> 1 (the chosen response is longer), -1 (shorter) or 0 (as long), in `unit`; items whose length
    in that unit is unknown are left out."""
    sides = {}
    for item, pair in pairs.items():
        chosen, reject = getattr(pair, f"chosen_{unit}"), getattr(pair, f"reject_{unit}")
        if chosen is not None and reject is not None:
            sides[item] = (chosen > reject) - (chosen < reject)
    return sides


def rate(values: list[float]) -> JsonObject:
    """{accuracy: the mean (None without values), n}."""
    return {"accuracy": sum(values) / len(values) if values else None, "n": len(values)}


def length_baselines(pairs: Mapping[str, ResponsePair], subsets: Mapping[str, str],
                     unit: str = "chars") -> JsonObject:
    """longer_wins / shorter_wins over the pairs whose lengths differ, overall and `by_subset`."""
    sides = length_sides(pairs, unit)

    def block(items: list[str]) -> JsonObject:
        longer = [float(sides[i] > 0) for i in items if sides[i] != 0]
        return {"longer_wins": rate(longer), "shorter_wins": rate([1.0 - v for v in longer])}

    by_subset: dict[str, list[str]] = {}
    for item in sorted(sides):
        by_subset.setdefault(subsets.get(item, ""), []).append(item)
    return {**block(sorted(sides)), "by_subset": {s: block(items) for s, items in sorted(by_subset.items())}}


def split_accuracy(outcomes: Outcomes, sides: Mapping[str, int], names: tuple[str, str], seed_key: str,
                   resamples: int) -> JsonObject:
    """A model's accuracy on the items of side 1 and of side -1 (named `names`; side 0 and items without a side
    count in neither), the gap first minus second and its bootstrap interval."""
    first = [outcomes[i] for i in sorted(outcomes) if sides.get(i) == 1]
    second = [outcomes[i] for i in sorted(outcomes) if sides.get(i) == -1]
    a, b = rate(first), rate(second)
    gap = a["accuracy"] - b["accuracy"] if first and second else None
    return {names[0]: a, names[1]: b, "gap": gap,
            "gap_ci95": bootstrap_diff_ci(first, second, seed_key, resamples)}


def self_preference_sides(pairs: Mapping[str, ResponsePair], family: str, families: Families) -> dict[str, int]:
    """item -> 1 (only the chosen response is `family`'s), -1 (only the rejected one), 0 (both or neither)."""
    known: dict[str, str | None] = {}

    def own(author: str) -> bool:
        if author not in known:
            known[author] = family_of([author], families)
        return known[author] == family

    return {item: own(p.chosen_model) - own(p.reject_model) for item, p in pairs.items()}


def model_bias(view: BenchmarkView, model: str, families: Families, path: str | None = None) -> JsonObject:
    """The bias block of one model of `view` (only the parts its rows have data for)."""
    outcomes, key = view.outcomes.get(model, {}), f"{view.name}/{model}"
    out: JsonObject = {}
    for unit, name in zip(UNITS, ("length", "length_tokens")):
        sides = length_sides(view.pairs, unit)
        if sides:
            out[name] = split_accuracy(outcomes, sides, ("chosen_longer", "chosen_shorter"),
                                       f"{key}/{name}", view.resamples)
    # an ensemble's name holds its members' names, not a family of its own
    family = None if model in view.ensembles else family_of(model_names(model, path), families)
    sides = self_preference_sides(view.pairs, family, families) if family else {}
    if any(sides.values()):
        out["self_preference"] = {"family": family, **split_accuracy(
            outcomes, sides, ("own_chosen", "own_rejected"), f"{key}/self_preference", view.resamples)}
    if model in view.position:
        out["position"] = dict(view.position[model])
    return out


def add_bias(board: JsonObject, view: BenchmarkView, families: Families,
             paths: Mapping[str, str] | None = None, tokenizer: str | None = None) -> None:
    """Add `baselines` to a benchmark's leaderboard and `bias` to each of its models, where the rows had the
    data (response texts, their authors, both orders); `paths`: each model's path, a second name for its
    family; `tokenizer`: what counted the tokens, if anything did."""
    if view.pairs:
        board["baselines"] = {**length_baselines(view.pairs, view.subsets), "unit": "characters"}
        if tokenizer and length_sides(view.pairs, "tokens"):
            board["baselines"]["tokens"] = {"tokenizer": tokenizer,
                                            **length_baselines(view.pairs, view.subsets, "tokens")}
    for entry in board["models"]:
        bias = model_bias(view, entry["model"], families, (paths or {}).get(entry["model"]))
        if bias:
            entry["bias"] = bias
