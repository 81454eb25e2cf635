"""The measured rows of docs/reliability.md's table (fault | how it is injected | outcome | requests lost |
requests duplicated | time to recover): each fault test writes its own row as JSON beside its files and prints
it, so the table is filled from the tests' output, not by hand."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

COLUMNS = ("fault", "injected", "outcome", "requests_lost", "requests_duplicated", "time_to_recover_s")


def record(folder: Path, **row: Any) -> dict[str, Any]:
    """Write `row` (the table's columns, in order) to folder/reliability_row.json and print it."""
    assert tuple(row) == COLUMNS, f"a reliability row has the columns {COLUMNS}"
    text = json.dumps(row, ensure_ascii=False)
    (folder / "reliability_row.json").write_text(text + "\n", encoding="utf-8")
    print(f"reliability row: {text}")
    return row
