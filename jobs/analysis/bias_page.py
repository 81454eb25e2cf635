"""The report's bias section of a benchmark (jobs.analysis.bias): the length-only baselines per subset, then one
row per model with its accuracy split by the chosen response's length, by whose family wrote it, and by the
position of the right answer. Only the columns some model has data for."""
from __future__ import annotations

import html

from benchmarks.boundary_types import JsonObject
from jobs.analysis.html_table import number_cell, table

SPLITS = {  # bias block -> its two splits (key, column head), in the table's order
    "length": (("chosen_longer", "chosen longer"), ("chosen_shorter", "chosen shorter")),
    "length_tokens": (("chosen_longer", "chosen longer (tokens)"), ("chosen_shorter", "chosen shorter (tokens)")),
    "self_preference": (("own_chosen", "own family chosen"), ("own_rejected", "own family rejected")),
}
POSITION = {"accuracy_first": "right answer first", "accuracy_second": "right answer second",
            "first_position_rate": "first-position picks"}
NOTE = ("<h3>Bias</h3><p class='note'>Accuracy (%) on the pairs whose chosen response is the longer or the shorter "
        "one (a tie counts in neither), on those where the model's own family (conf/model_families.yaml) wrote "
        "the chosen or the rejected response (a pair both of whose responses are its family's counts in neither), "
        "and, for judges asked in both orders, with the right answer shown first or second. Gap: the first minus "
        "the second, with a bootstrap interval over items.</p>")


def _count(n: int) -> str:
    return f"<td data-v='{n}'>{n}</td>"


def _baselines(baselines: JsonObject) -> str:
    tokens = baselines.get("tokens")
    header = ["subset", "pairs", "longer wins %", "shorter wins %"]
    if tokens:
        header += [f"pairs ({tokens['tokenizer']} tokens)", "longer wins % (tokens)"]
    rows = []
    for subset in ["all", *baselines["by_subset"]]:
        block = baselines if subset == "all" else baselines["by_subset"][subset]
        cells = (_count(block["longer_wins"]["n"]) + number_cell(block["longer_wins"]["accuracy"])
                 + number_cell(block["shorter_wins"]["accuracy"]))
        if tokens:
            counted = tokens if subset == "all" else tokens["by_subset"].get(subset)
            cells += (_count(counted["longer_wins"]["n"]) + number_cell(counted["longer_wins"]["accuracy"])
                      if counted else "<td>-</td><td>-</td>")
        rows.append(f"<tr><td class='l'>{html.escape(subset)}</td>{cells}</tr>")
    return table(header, rows)


def _split(block: str, split: JsonObject | None) -> str:
    family = block == "self_preference"
    if split is None:
        return "<td>-</td>" * (6 + family)
    cells = f"<td class='l'>{html.escape(split['family'])}</td>" if family else ""
    for key, _ in SPLITS[block]:
        cells += number_cell(split[key]["accuracy"]) + _count(split[key]["n"])
    ci = split["gap_ci95"]
    return cells + number_cell(split["gap"]) + (
        "<td>-</td>" if ci is None else f"<td>{100 * ci[0]:+.1f} – {100 * ci[1]:+.1f}</td>")


def bias_section(board: JsonObject) -> str:
    """The section's HTML for one benchmark's leaderboard (models best first); "" when it has nothing."""
    parts = []
    if board.get("baselines"):
        parts.append("<h3>Length baselines</h3><p class='note'>Accuracy of always preferring the longer (the "
                     "shorter) response, lengths in characters, over the pairs whose lengths differ.</p>"
                     + _baselines(board["baselines"]))
    models = [m for m in board["models"] if m.get("bias")]
    blocks = [b for b in SPLITS if any(b in m["bias"] for m in models)]
    position = [c for c in POSITION if any(c in m["bias"].get("position", {}) for m in models)]
    if not blocks and not position:
        return "\n".join(parts)
    header = ["model"]
    for block in blocks:
        (_, first), (_, second) = SPLITS[block]
        header += ["family"] * (block == "self_preference") + [
            f"{first} %", "n", f"{second} %", "n", "gap (points)", "gap 95% CI"]
    header += [f"{POSITION[c]} %" for c in position]
    rows = ["<tr><td class='l'>" + html.escape(m["model"]) + "</td>"
            + "".join(_split(block, m["bias"].get(block)) for block in blocks)
            + "".join(number_cell(m["bias"].get("position", {}).get(c)) for c in position) + "</tr>"
            for m in models]
    return "\n".join([*parts, NOTE + table(header, rows)])
