"""Small helpers every benchmark's summary and tables share: a mean that tolerates no values, the percentages
(with 95% intervals) and fixed-decimal numbers the paper tables print, and names in the paper's order."""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any


def mean(values: Sequence[float]) -> float | None:
    """The mean, or None for no values (an empty cell is not 0)."""
    return sum(values) / len(values) if values else None


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal, as the papers print them; '-' for none."""
    return "-" if value is None else f"{100 * value:.1f}"


def pct_ci(cell: Mapping[str, Any], name: str) -> str:
    """cell[name] as a percentage with its interval cell[name + '_ci95'] when there is one; '-' for none."""
    if cell.get(name) is None:
        return "-"
    ci = cell.get(f"{name}_ci95")
    return pct(cell[name]) + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "")


def fixed(value: float | None, decimals: int = 2) -> str:
    """`value` with `decimals` decimals, as a paper prints it; '-' where there is none."""
    return "-" if value is None else f"{value:.{decimals}f}"


def ordered(known: Sequence[str], present: Collection[str]) -> list[str]:
    """`present` in the paper's order (`known`), the names it does not know after, sorted."""
    return [k for k in known if k in present] + sorted(set(present) - set(known))
