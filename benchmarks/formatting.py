"""How tables show values: numbers with a fixed count of decimals, groups in the paper's order."""
from __future__ import annotations

from collections.abc import Iterable, Sequence


def fixed(value: float | None, decimals: int = 2) -> str:
    """`value` with `decimals` decimals, as a paper prints it; '-' where there is none."""
    return "-" if value is None else f"{value:.{decimals}f}"


def ordered(known: Sequence[str], present: Iterable[str]) -> list[str]:
    """The `present` names in the paper's order (`known`), the others after them, sorted."""
    present = set(present)
    return [k for k in known if k in present] + sorted(present - set(known))
