"""A benchmark's walk from its data to its metrics, written once (docs/ARCHITECTURE.md, "The flow").

`flow_of(module)` gives a benchmark's flow: judged item by item (`JudgedFlow`: jobs.flow.walk's protocol walk,
answered in rounds by jobs.flow.rounds) or scored on rankings (`RankedFlow`: jobs.flow.ranked). A cell runs
with an answerer (jobs.flow.answerer) and a recorder handed in (`CellJob`); the sweep's cell, `ragjudge
validate`, `ragjudge plan` and the report's item viewer all walk benchmarks through here, and nothing outside
this package tells the two kinds of benchmark apart.
"""
from jobs.flow.answerer import Answerer, StreamTarget
from jobs.flow.flows import Flow, JudgedFlow, RankedFlow, flow_of
from jobs.flow.judged_cell import CellJob, NoReadableRows
from jobs.flow.progress import CellProgress
from jobs.flow.recorder import CellRecorder
from jobs.flow.walk import answers_by_item, first_requests, item_rows, read_items

__all__ = ["Answerer", "CellJob", "CellProgress", "CellRecorder", "Flow", "JudgedFlow", "NoReadableRows",
           "RankedFlow", "StreamTarget", "answers_by_item", "first_requests", "flow_of", "item_rows", "read_items"]
