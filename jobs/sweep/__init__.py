"""How a sweep runs: the pipeline over its (benchmark, model) cells, one cell's rounds, the admission of cells
side by side, signals, live progress, retrieval cells and the encoder stage."""
from jobs.sweep.cell import Cell, CellOutcome, run_cell
from jobs.sweep.cluster import ClusterUnreachable, connect_ray
from jobs.sweep.interrupt import Interrupted, Stop, stop_on_signals
from jobs.sweep.pipeline import run_sweep
from jobs.sweep.progress import Progress, format_status

__all__ = ["Cell", "CellOutcome", "ClusterUnreachable", "Interrupted", "Progress", "Stop", "connect_ray", "format_status", "run_cell",
           "run_sweep", "stop_on_signals"]
