"""What a sweep's API judges cost, at list price and through the provider's batch API, from the price table in
conf/prices.yaml (dollars per 1M tokens by model path, with the date its prices were read). Output tokens are
planned at each request's max_tokens budget, so the dollars are an upper bound on what the judges write."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.loading import PROJECT_CONF
from jobs.loading.files import load_yaml

PRICES = PROJECT_CONF / "prices.yaml"


@dataclass(frozen=True)
class Price:
    """Dollars per 1M tokens: list (one call per request) and batch."""

    input: float
    output: float
    batch_input: float
    batch_output: float

    def dollars(self, prompt_tokens: int, output_tokens: int, batch: bool) -> float:
        rates = (self.batch_input, self.batch_output) if batch else (self.input, self.output)
        return (prompt_tokens * rates[0] + output_tokens * rates[1]) / 1e6


@dataclass(frozen=True)
class PriceTable:
    read: str  # when the prices were read from the providers' pages
    prices: dict[str, Price]


def load_prices(path: Path = PRICES) -> PriceTable:
    table: Any = load_yaml(path)
    return PriceTable(str(table.read), {str(p): Price(**{k: float(v) for k, v in row.items()})
                                        for p, row in table.prices.items()})


def _money(dollars: float) -> str:
    """Cents, or four decimals under a dollar (a sample's cost), never more precision than the table has."""
    return f"${dollars:,.2f}" if dollars >= 1 else f"${dollars:.4f}"


def api_cost_lines(cells: Iterable[Any], table: PriceTable, source: str = "conf/prices.yaml") -> list[str]:
    """`ragjudge plan`'s dollar lines: each API cell (a CellPlan with a `path`) at list and batch price, which
    of the two its engine pays, the totals, and the API models the table has no price for."""
    cells = [c for c in cells if c.remote and not c.problem]
    if not cells:
        return []
    lines = [f"API dollars ({source}, prices read {table.read}; output at its max_tokens budget, an upper bound):"]
    totals, unpriced = [0.0, 0.0], []
    for c in cells:
        price = table.prices.get(c.path)
        if price is None:
            unpriced.append(f"{c.model} ({c.path})")
            continue
        both = [price.dollars(c.prompt_tokens, c.output_tokens, batch) for batch in (False, True)]
        totals = [t + d for t, d in zip(totals, both)]
        lines.append(f"  {c.benchmark} x {c.model}: list {_money(both[0])}, batch {_money(both[1])} "
                     f"(its engine pays {'batch' if c.batch else 'list'})")
    lines.append(f"  total: list {_money(totals[0])}, batch {_money(totals[1])}")
    if unpriced:
        lines.append(f"  no price in {source} for: {', '.join(sorted(set(unpriced)))}")
    return lines
