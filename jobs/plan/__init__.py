"""What a sweep will cost before it runs: requests, tokens, FLOPs and GPU-hours per cell (estimate), and engines
placed on GPU nodes (placement)."""
from jobs.plan.estimate import GpuSpec, format_plan, plan_schedule, plan_sweep

__all__ = ["GpuSpec", "format_plan", "plan_schedule", "plan_sweep"]
