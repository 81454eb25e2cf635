"""What the answers mean: leaderboards with intervals and paired tests, reliability and bias
columns, items across models, ensembles as virtual models, the agreement of two scorings (`ragjudge validate`),
run-to-run comparisons and the report."""
from jobs.analysis.agreement import Thresholds, held_models
from jobs.analysis.board import leaderboard_from_rows, leaderboard_of
from jobs.analysis.compare import compare_runs, format_comparison, write_flips
from jobs.analysis.ensembles import ENSEMBLES, ensemble_config, ensemble_rows
from jobs.analysis.items import board_items, format_items, items_jsonl
from jobs.analysis.leaderboard import leaderboard
from jobs.analysis.report import load_report, report_text, write_report
from jobs.analysis.report_view import Report
from jobs.analysis.response_pairs import pair_problem
from jobs.analysis.tokens import token_counter

__all__ = ["ENSEMBLES", "Report", "Thresholds", "board_items", "compare_runs", "ensemble_config",
           "ensemble_rows", "format_comparison", "format_items", "held_models", "items_jsonl", "leaderboard",
           "leaderboard_from_rows", "leaderboard_of", "load_report", "pair_problem", "report_text", "token_counter", "write_flips", "write_report"]
