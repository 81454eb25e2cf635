"""A cell's records on its run's storage: answers in parts as they arrive, then item rows and bad rows,
shard by shard (jobs.flow.judged_cell cuts a benchmark's items in shards of SHARD_ITEMS), its metrics and its entry
in manifest.json.

Part names are deterministic. A shard's answers are `s<shard>-<attempt>-<rows of the shard stored before it>`:
a shard reads back only its own parts, in the order they were stored, and a new part is named past every
part stored before it, a quarantined one's too, so no name is used twice. Parts named before shards existed
(`<attempt>-<rows>`, every cell then one shard) are shard 0's, and sort before its new ones. A shard's item
rows and bad rows are one part each, `<shard>` (zero-padded: they read back in shard order). A part that does
not read is moved to quarantine/, said and listed in manifest.json. Every write goes through the `RunRoot`, so
the run's fence, retries and redaction hold for all of them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.boundary_types import ArrowRow, JsonObject
from benchmarks.row_types import Answer, Row
from jobs.store import Manifest, RunRoot
from jobs.store.parquet_rows import joined_rows
from jobs.store.run_root import QuarantinedPart


class CellRecorder:
    """The records of one (benchmark, model) cell of a run: its manifest.json entry and metrics.json here, its
    item rows through `rows` (a RowRecorder, which a Ray task that walks the cell's shards is handed too), and
    the answers of its k-th shard through `shard_answers(k)`."""

    def __init__(self, root: RunRoot, manifest: Manifest, benchmark: str, model: str,
                 say: Callable[[str], None] = print):
        self.root, self.manifest, self.benchmark, self.model, self.say = root, manifest, benchmark, model, say
        self.rows = RowRecorder(root, benchmark, model)

    @property
    def key(self) -> str:
        return f"{self.benchmark}/{self.model}"

    def entry(self) -> JsonObject:
        """The cell's manifest.json entry ({} before its first run); a JSON record, hence the dict."""
        return self.manifest.cell(self.key)

    def record_entry(self, entry: JsonObject) -> None:
        self.manifest.set_cell(self.key, entry)

    def metrics(self) -> JsonObject:
        """The metrics.json an earlier attempt wrote (a cached cell's)."""
        return self.root.read_json(self.root.metrics_path(self.benchmark, self.model))

    def record_metrics(self, metrics: JsonObject) -> None:
        self.root.write_json(self.root.metrics_path(self.benchmark, self.model), metrics)

    def shard_answers(self, index: int, next_part: int = 0) -> ShardAnswers:
        """The k-th shard's answers; `next_part` where its stored parts were counted before (stored_answers)."""
        return ShardAnswers(self, index, next_part)

    def quarantined(self, unreadable: list[QuarantinedPart]) -> None:
        """Say and record the parts read_whole_rows moved to quarantine/."""
        for part in unreadable:
            self.say(f"WARNING {self.benchmark} x {self.model}: {self.root.uri(part['path'])} cannot be read "
                     f"({part['reason']}); moved to {self.root.uri(part['moved_to'])}, its requests are asked again")
        if unreadable:
            self.manifest.add_quarantined(self.key, unreadable)


def in_shard(part: str, index: int) -> bool:
    """Whether an answer part's name is shard `index`'s (a name from before shards, `<attempt>-<rows>`, is
    shard 0's)."""
    return part.startswith(f"s{index:05d}-") or index == 0 and part[:1].isdigit()


@dataclass(frozen=True)
class RowRecorder:
    """A cell's item rows and bad rows, recorded where its shards are walked (the driver, or a Ray task:
    jobs.flow.shard_tasks, through the run root's pickle, whose fence works there), and no manifest."""

    root: RunRoot
    benchmark: str
    model: str

    def clear(self) -> None:
        """Forget an earlier attempt's item rows and bad rows: this attempt writes them all anew."""
        for table in ("predictions", "errors"):
            self.root.clear(table, self.benchmark, self.model)

    def record_rows(self, shard: int, rows: list[Row], bad: list[ArrowRow]) -> None:
        """A shard's item rows and bad rows (none written for none)."""
        for table, these in (("predictions", rows), ("errors", bad)):
            self.root.write_rows(table, self.benchmark, self.model, these, part=f"{shard:06d}")

    def whole_answers(self, shard: int) -> list[Answer] | None:
        """The shard's stored answers in the order they were stored, or None where a part does not read: then
        nothing is moved, and the driver's walk (ShardAnswers) quarantines it, records that in manifest.json
        and asks its requests again."""
        parts, unreadable = self.root.readable_parts("requests", self.benchmark, self.model,
                                                     lambda name: in_shard(name, shard), quarantine=False)
        return None if unreadable else joined_rows(parts)


class ShardAnswers:
    """One shard's answers: its parts, read back and added to."""

    def __init__(self, cell: CellRecorder, index: int, next_part: int = 0):
        self.cell, self.index = cell, index
        self.prefix = f"s{index:05d}-"
        self.next_part = next_part  # the next part's name: past the shard's rows read and every stored part's name

    def _mine(self, name: str) -> bool:
        return in_shard(name, self.index)

    def stored_answers(self) -> list[Answer]:
        """The shard's answers in its readable parts (the others quarantined); the next part is named past
        every part's name the read listed, a quarantined one's too: the rows a quarantined part held are
        unknown, so the rows read are not enough (a part of 8 rows quarantined, one of 4 after it: counting 4,
        the second new part was named as that one and replaced it; chaos seed 2)."""
        cell = self.cell
        starts: list[int] = []

        def mine(name: str) -> bool:  # the read's own listing, so the partition is listed once
            if self._mine(name):
                starts.append(int(name.rsplit("-", 1)[1]))
                return True
            return False

        stored, unreadable = cell.root.read_whole_rows("requests", cell.benchmark, cell.model, mine)
        cell.quarantined(unreadable)
        self.next_part = max(len(stored), self.next_part, max(starts, default=-1) + 1)
        return stored

    def record_answers(self, part: list[Answer]) -> None:
        cell = self.cell
        cell.root.write_rows("requests", cell.benchmark, cell.model, part,
                             part=f"{self.prefix}{cell.manifest.attempts:04d}-{self.next_part:07d}")
        self.next_part += len(part)

    def parts_read_back(self) -> bool:
        """Every part decoded again, none of its rows made in Python (a shard's 10,000 answers were, beside the
        ones the cell had just read)."""
        cell = self.cell
        _, unreadable = cell.root.readable_parts("requests", cell.benchmark, cell.model, self._mine)
        cell.quarantined(unreadable)
        return not unreadable
