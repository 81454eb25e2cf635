"""`revision:` written into a model file, the rest of the file (comments, order) as it was: `ragjudge fetch --pin`
pins each hub model to the commit it fetched, so later runs load exactly those weights whatever is pushed."""
from __future__ import annotations

import re
from pathlib import Path

REVISION = re.compile(r"revision\s*:")
PATH = re.compile(r"path\s*:")


def pin_revision(source: Path, commit: str) -> str | None:
    """Set the model file's top-level `revision:` to `commit` (replacing the line, or adding one after `path:`);
    returns the revision it replaced ("" where there was none), or None when the file pinned `commit` already."""
    lines = source.read_text().splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if REVISION.match(line)), None)
    before = lines[at].split(":", 1)[1].split("#", 1)[0].strip().strip("'\"") if at is not None else ""
    if before == commit:
        return None
    pinned = f"revision: {commit}  # pinned by ragjudge fetch --pin{f' (was {before})' if before else ''}\n"
    if at is not None:
        lines[at] = pinned
    else:
        after = next((i for i, line in enumerate(lines) if PATH.match(line)), len(lines) - 1)
        lines.insert(after + 1, pinned)
    source.write_text("".join(lines))
    return before
