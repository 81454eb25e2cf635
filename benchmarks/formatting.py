"""How the paper tables print: percentages, and names in the paper's order."""
from __future__ import annotations

from collections.abc import Collection, Sequence


def pct(value: float | None) -> str:
    """A rate as a percentage with one decimal, as the papers print them; '-' where there is none."""
    return "-" if value is None else f"{100 * value:.1f}"


def ordered(known: Sequence[str], present: Collection[str]) -> list[str]:
    """`present` in the paper's order (`known`), the names it does not know after, sorted."""
    return [k for k in known if k in present] + sorted(set(present) - set(known))
