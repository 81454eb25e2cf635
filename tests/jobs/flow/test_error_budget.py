"""jobs.flow.error_budget: a cell's request error counts, its budget and when --retry-errors reopens it."""
from __future__ import annotations

from jobs.flow.error_budget import over_budget, reopens, request_errors, retried_failure

E503 = "api: HTTP 503 (model 'x', 3 tries): Error code: 503 - busy"
E400 = "api: HTTP 400 (model 'x', 1 try): Error code: 400 - bad"


def _answers(errors: list[str | None]) -> list[dict]:
    return [{"request_id": f"r{i}", "error": e, "retryable": None} for i, e in enumerate(errors)]


def test_counts_and_the_most_common_error_without_its_details():
    counts = request_errors(_answers([None] * 45 + [E503, E503.replace("busy", "later"), E400]))
    assert counts == {"requests": 48, "failed": 3, "retryable": 2,
                      "top_error": "api: HTTP 503 (model 'x', 3 tries)", "top_error_count": 2}
    assert request_errors([]) == {"requests": 0, "failed": 0, "retryable": 0, "top_error": None,
                                  "top_error_count": 0}


def test_the_budget_is_a_share_of_requests_and_reaching_it_is_within_it():
    counts = request_errors(_answers([None] * 48 + [E503, E400]))  # 2 of 50: 4%
    assert over_budget(counts, 0.04) is None and over_budget(request_errors([]), 0.0) is None
    assert over_budget(counts, 0.02) == ("2 of 50 requests failed (4.0% > max_error_rate 2%); most common: "
                                         "api: HTTP 503 (model 'x', 3 tries) (1); 1 retryable: "
                                         "`ragjudge run --retry-errors` asks them again")
    assert over_budget(request_errors(_answers([None, E400])), 0.02).endswith("; none retryable")


def test_the_stored_class_wins_and_rows_without_one_are_classed_now():
    assert retried_failure({"error": E400, "retryable": True}) and not retried_failure({"error": E503, "retryable": False})
    assert retried_failure({"error": E503}) and not retried_failure({"error": E400, "retryable": None})


def test_a_finished_cell_reopens_only_with_retryable_errors():
    assert reopens({"request_errors": {"retryable": 1}}) and not reopens({"request_errors": {"retryable": 0}})
    assert not reopens({"request_errors": None, "n_errors": 3})  # a retrieval cell: no requests
    assert reopens({"n_errors": 3}) and not reopens({"n_errors": 0})  # recorded before the counts were
