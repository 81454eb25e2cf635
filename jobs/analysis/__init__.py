"""What the answers mean: per-cell reducers, leaderboards with intervals and paired tests, reliability columns,
the agreement of two scorings (`ragjudge validate`), run-to-run comparisons and the report."""
from jobs.analysis.agreement import VALIDATE, Thresholds, held_models
from jobs.analysis.compare import compare_runs, format_comparison, write_flips
from jobs.analysis.leaderboard import leaderboard, leaderboard_from_rows
from jobs.analysis.reducers import aggregate, row_problem
from jobs.analysis.report import load_report, report_text, write_report

__all__ = ["VALIDATE", "Thresholds", "aggregate", "compare_runs", "format_comparison", "held_models", "leaderboard",
           "leaderboard_from_rows", "load_report", "report_text", "row_problem", "write_flips", "write_report"]
