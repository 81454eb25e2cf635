"""The report's per-item viewer, its data: report/viewer/, beside report/index.html, as JavaScript files that the
page loads with <script src> (a browser runs those from file://, where it refuses fetch and XMLHttpRequest):

    viewer/index.js       window.RAGJUDGE_ITEMS = {...}: per benchmark its models (leaderboard order), item ids,
                          subsets and each model's outcome per item (the leaderboard's item means), and which
                          chunk holds each item's texts. Loaded with the page: the list and its filters.
    viewer/b<B>-c<C>.js   ragjudgeChunk("b<B>-c<C>", {...}): the texts of consecutive items, up to CHUNK_BYTES a
                          chunk: each item's fields as the benchmark's data has them, and every model's
                          prediction rows of it. Loaded when one of its items is opened.

A benchmark of more than VIEWER_ITEMS items has its first VIEWER_ITEMS in the viewer, and the page says so: the
report reads the data and the rows of those only, so its memory does not grow with a run's items (the
leaderboard and report/items.jsonl count every item).

Nothing here knows a benchmark: an item's fields and a row's columns are shown as they are, each either short
(a field beside its name, a table cell) or a text (a block of its own): a judge's raw text per order, a
prompt, a response, a passage. The item texts are read at report time from the data paths in the run's
manifest, through the benchmark's own load_items; rows only carry what combine() wrote.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.boundary_types import JsonObject
from jobs.analysis.report_view import BenchmarkView, Report
from jobs.flow import JudgedFlow, flow_of, walk
from jobs.store import RunRoot
from jobs.store.layout import REPORT_VIEWER as FOLDER

INDEX = "index.js"
CHUNK_BYTES = 256_000  # an opened item loads its chunk; 1,485 Table-4-long pairs x 45 models make 170
VIEWER_ITEMS = 5_000  # a benchmark's items the viewer holds, the first: only their data and rows are read
SHORT = 80  # longer strings, and any with a line break, are texts
PROSE_WORDS = 4  # an item's field of this many words is a text too (a short response is still a response)
READERS = 8
_ROW_KEYS = {"item_id", "benchmark", "subset", "model"}  # the same in every row of an item, or the list's own
_ITEM_KEYS = {"item_id", "benchmark", "subset", "source", "row", "error"}

Pairs = list[list[Any]]  # [[name, value], ...]: kept in order, as JSON arrays


def _rounded(value: Any) -> Any:
    """Floats to 4 significant digits (whole ones as ints), inside lists and dicts too; NaN and infinities as
    text (JSON has none)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most values: the fast way out
        return value
    if kind is float:
        if not math.isfinite(value):
            return str(value)
        rounded = float(f"{value:.4g}")
        return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value if isinstance(value, (str, int, float)) else str(value)


def shown(value: Any) -> Any:
    """A value as the page shows it: numbers rounded, lists and dicts as compact JSON text."""
    value = _rounded(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": ")) if isinstance(value, (list, dict)) \
        else value


def is_text(value: Any) -> bool:
    """Whether a shown value needs a block of its own."""
    return isinstance(value, str) and (len(value) > SHORT or "\n" in value)


def is_prose(value: Any) -> bool:
    """Whether an item's field is a text however short (a response, a question): a few words or more. Names,
    labels and ids (`gpt-4o-2024-08-06`, `FAIL`, `Opinion+Summarization`) have none."""
    return is_text(value) or isinstance(value, str) and len(value.split()) >= PROSE_WORDS


def _record(element: Any) -> str:
    if not isinstance(element, dict):
        return str(element)
    return "\n".join(f"{key}: {shown(v)}" for key, v in element.items())


def item_entry(item: Mapping[str, Any]) -> dict[str, Pairs]:
    """{"f": short fields, "t": texts} of one item of the benchmark's data. A list of texts or records
    (passages, turns) too long for one field is a block per element, records as `key: value` lines."""
    fields: Pairs = []
    texts: Pairs = []
    for name, value in item.items():
        if name in _ITEM_KEYS or value in (None, "", [], {}):
            continue
        value_shown = shown(value)
        if not is_prose(value_shown):
            fields.append([name, value_shown])
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, dict)) for v in value):
            texts += [[f"{name} [{k}]", _record(element)] for k, element in enumerate(value, 1)]
        else:
            texts.append([name, value_shown])
    return {"f": fields, "t": texts}


def text_columns(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The columns of a model's rows that hold a text in any row: shown as texts in every row, so a judge's
    short answer on one item and long one on the next sit in the same place."""
    return {name for row in rows for name, value in row.items()
            if isinstance(value, (str, list, tuple, dict)) and is_text(shown(value))}


def row_entry(row: Mapping[str, Any], texts: set[str], item: Mapping[str, Any] | None = None
              ) -> tuple[Pairs, Pairs]:
    """(short fields, texts) of one prediction row. A null field stays (a judge's missing verdict in one order
    is news), but not a null text or `error`; the fields the row copies from its `item` (the same name and
    value: a task id, a reference answer) are left out, the item shows them once."""
    fields: Pairs = []
    blocks: Pairs = []
    for name, value in row.items():
        if name in _ROW_KEYS or item and name in item and item[name] == value:
            continue
        if name in texts:
            if value is not None:
                blocks.append([name, shown(value)])
        elif value is not None or name != "error":
            fields.append([name, shown(value)])
    return fields, blocks


def read_items(config: Mapping[str, Any], module: str, wanted: Collection[str], cap: int | None = None
               ) -> tuple[JsonObject, str | None]:
    """The benchmark's items among `wanted` by id, in the data's order, read from the data the run's config
    names as the run read it (the first `limit` of each path), at most `cap` of them (the reading stops there),
    and the reason when they cannot be: {} and a problem."""
    paths = list(config.get("data") or [])
    if not paths:
        return {}, "the run's manifest names no data for this benchmark"
    found: JsonObject = {}
    try:
        flow = flow_of(module)
        if not isinstance(flow, JudgedFlow):
            return {}, f"{module} is not judged item by item"
        for item in walk.read_items(flow.spec, paths, config.get("limit"), config.get("columns")):
            if not item.get("error") and item["item_id"] in wanted:
                found[item["item_id"]] = item
                if len(found) == cap:
                    break
    except Exception as e:  # noqa: BLE001  (data moved or unreadable: the viewer says so, the report goes on)
        return {}, f"the data could not be read ({', '.join(paths)}): {type(e).__name__}: {e}"
    return found, None


def shown_ids(view: BenchmarkView, items: Mapping[str, Any], cap: int) -> list[str]:
    """The ids the viewer holds: the view's items in the data's order, then those only the rows name (sorted),
    the first `cap` of them."""
    ids = [i for i in items if i in view.subsets][:cap]
    return ids if len(ids) == cap else ids + sorted(set(view.subsets).difference(items))[:cap - len(ids)]


def _outcome(value: float | None) -> float | int | None:
    return None if value is None else _rounded(float(value))


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def benchmark_data(number: int, view: BenchmarkView, board: Mapping[str, Any], rows: Mapping[str, list[dict]],
                   items: Mapping[str, Any], problem: str | None) -> tuple[JsonObject, dict[str, str]]:
    """(the benchmark's entry in index.js, chunk name -> the chunk as JSON text: item id -> its texts and
    rows) for one benchmark of the report, every item of the view shown (viewer_data)."""
    chunks: dict[str, str] = {}
    index = viewer_data(number, view, board, shown_ids(view, items, len(view.subsets)), rows, items, problem,
                        chunks.__setitem__)
    return index, chunks


def viewer_data(number: int, view: BenchmarkView, board: Mapping[str, Any], ids: list[str],
                rows: Mapping[str, list[dict]], items: Mapping[str, Any], problem: str | None,
                write: Callable[[str, str], None]) -> JsonObject:
    """The benchmark's entry in index.js for the items `ids`, each chunk (item id -> its texts and rows, as
    JSON text) handed to `write` with its name as it is cut. Each item's JSON is made once, and chunks are cut
    between items."""
    models = [m["model"] for m in board["models"]]
    subsets = sorted({view.subsets[i] for i in ids})
    subset_index = {s: k for k, s in enumerate(subsets)}
    by_item: dict[str, list[list[Any]]] = {}
    for m, model in enumerate(models):
        texts = text_columns(rows.get(model, []))
        for row in rows.get(model, []):
            entry = row_entry(row, texts, items.get(row.get("item_id")))
            by_item.setdefault(row.get("item_id"), []).append([m, *entry])
    chunk_of: list[int] = []
    current: list[str] = []
    size = cut = 0
    for item_id in ids:
        entry = {**(item_entry(items[item_id]) if item_id in items else {}), "r": by_item.pop(item_id, [])}
        text = f"{_json(item_id)}:{_json(entry)}"
        if current and size + len(text) > CHUNK_BYTES:
            write(f"b{number}-c{cut}", "{" + ",".join(current) + "}")
            current, size, cut = [], 0, cut + 1
        current.append(text)
        size += len(text)
        chunk_of.append(cut)
    if current:
        write(f"b{number}-c{cut}", "{" + ",".join(current) + "}")
    return {"name": view.name, "models": models, "kinds": [view.kinds.get(m, "") for m in models],
            "scores": [_outcome(m["score"]) for m in board["models"]], "items": ids, "subsets": subsets,
            "subset": [subset_index[view.subsets[i]] for i in ids],
            "outcomes": [[_outcome(view.outcomes.get(model, {}).get(i)) for i in ids] for model in models],
            "chunk": chunk_of, "prefix": f"b{number}-c", "problem": problem}


def write_viewer(root: RunRoot, report: Report) -> list[str] | None:
    """Write report/viewer/ (the old one removed first) for the report's benchmarks that have a leaderboard,
    each with at most VIEWER_ITEMS items (only their rows and data are read); the lines that say which
    benchmarks hold fewer items than they have ([] when none), or None, and nothing written, when no benchmark
    has a leaderboard."""
    boards = report.leaderboard["benchmarks"]
    views = [v for v in report.views if (boards.get(v.name) or {}).get("models")]
    root.delete_folders(*FOLDER.split("/"))
    if not views:
        return None
    config = (report.manifest.get("config") or {}).get("benchmarks") or {}
    entries, notes = [], []

    def write(key: str, chunk: str) -> None:
        root.write_text(f"{FOLDER}/{key}.js", f"ragjudgeChunk({_json(key)},{chunk});\n")

    with ThreadPoolExecutor(READERS) as pool:
        for number, view in enumerate(views):
            items, problem = read_items(config.get(view.name) or {}, view.module, view.subsets, VIEWER_ITEMS)
            ids = shown_ids(view, items, VIEWER_ITEMS)
            among = None if len(ids) == len(view.subsets) else _among(ids)
            models = [m["model"] for m in boards[view.name]["models"]]
            rows = dict(zip(models, pool.map(partial(root.read_rows, "predictions", view.name, transform=among),
                                             models)))
            entries.append(viewer_data(number, view, boards[view.name], ids, rows, items, problem, write))
            if among is not None:
                notes.append(f"{view.name}: the viewer holds the first {len(ids):,} of its {len(view.subsets):,} "
                             "items (in the data's order); the leaderboard, the tables and report/items.jsonl "
                             "count every item.")
    root.write_text(f"{FOLDER}/{INDEX}", f"window.RAGJUDGE_ITEMS={_json({'benchmarks': entries})};\n")
    return notes


def _among(ids: list[str]) -> Callable[[pa.Table], pa.Table]:
    """A part's rows of these items."""
    wanted = pa.array(ids, pa.string())
    return lambda part: part.filter(pc.is_in(part.column("item_id").cast(pa.string()), value_set=wanted))
