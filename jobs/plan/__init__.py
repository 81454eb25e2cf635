"""What a sweep will cost before it runs: requests, tokens, FLOPs and GPU-hours per cell (estimate), and engines
placed on GPU nodes (placement), and the weights to download first (downloads)."""
from jobs.plan.downloads import Download, format_downloads, plan_downloads
from jobs.plan.estimate import (
    GpuSpec,
    estimated_tokens,
    format_plan,
    plan_schedule,
    plan_sweep,
    unplaceable,
    unplanned,
)

__all__ = ["Download", "GpuSpec", "estimated_tokens", "format_downloads", "format_plan", "plan_downloads",
           "plan_schedule", "plan_sweep", "unplaceable", "unplanned"]
