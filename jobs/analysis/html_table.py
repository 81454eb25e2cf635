"""The report's table cells and sortable tables (report/index.html's inline JS sorts a table whose class is
`sortable` by each cell's data-v), shared by every section of the page."""
from __future__ import annotations

import html


def number_cell(value: float | None, digits: int = 1, scale: float = 100.0) -> str:
    """A numeric cell that sorts by its value (data-v) and shows it scaled (percent by default)."""
    if value is None:
        return "<td data-v='-1'>-</td>"
    return f"<td data-v='{value:.6g}'>{scale * value:.{digits}f}</td>"


def table(header: list[str], rows: list[str], sortable: bool = True) -> str:
    """A table whose first header cell is the label column; `rows` are ready <tr> strings."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    cls = " class='sortable'" if sortable else ""
    return (f"<div class='scroll'><table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table></div>")
