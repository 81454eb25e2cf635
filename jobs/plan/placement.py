"""Where and when each engine of a sweep runs, for `ragjudge plan`: a schedule, not a division.

Dividing GPU-hours by the GPU count hides two things a sweep pays for: a model's engine holds its whole
tensor-parallel group (on one node) for as long as its longest work lasts, and groups that do not fill a node
leave GPUs idle. Model-major execution starts one engine per model, which answers all of that model's cells
and is then released; so the unit placed here is an engine job (its start plus its cells' work), never a cell.

Placement is list scheduling with conservative backfill: jobs are taken longest first (ties: wider group,
then name), and each is placed at the earliest time some node has its group's GPUs free for its whole
duration, around the jobs already placed (so a short job fills a gap before a wide one, but never delays it);
on the node where that time comes first (ties: the lower node). The result is a valid schedule, so its
makespan is achievable; beside it stand two lower bounds no schedule beats: total GPU-seconds / GPUs, and the
longest job.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class EngineJob:
    """One engine over its life in a sweep: it starts once, answers every cell of its model, then frees its
    GPUs."""

    name: str
    gpus: int  # the tensor-parallel group, all on one node
    start_s: float  # wall seconds from launch to ready (process, weights, graphs, KV cache)
    work_s: float  # wall seconds of answering, on the whole group
    cells: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.start_s + self.work_s

    @property
    def gpu_s(self) -> float:
        return self.gpus * self.duration_s


@dataclass(frozen=True)
class Placement:
    job: EngineJob
    node: int
    begin_s: float

    @property
    def end_s(self) -> float:
        return self.begin_s + self.job.duration_s


@dataclass
class Schedule:
    gpus: int
    node_gpus: list[int]  # GPUs of each node
    placements: list[Placement] = field(default_factory=list)
    unplaced: list[EngineJob] = field(default_factory=list)  # groups wider than every node

    @property
    def makespan_s(self) -> float:
        return max((p.end_s for p in self.placements), default=0.0)

    @property
    def busy_gpu_s(self) -> float:
        return sum(p.job.gpu_s for p in self.placements)

    @property
    def start_gpu_s(self) -> float:
        return sum(p.job.gpus * p.job.start_s for p in self.placements)

    @property
    def lower_bound_s(self) -> float:
        """Total GPU-seconds / GPUs: the makespan if every GPU were busy until the end."""
        return self.busy_gpu_s / self.gpus if self.gpus else 0.0

    @property
    def longest(self) -> EngineJob | None:
        return max((p.job for p in self.placements), key=lambda j: j.duration_s, default=None)

    @property
    def idle_gpu_s(self) -> float:
        """GPU-seconds paid for but unused until the makespan (gaps, and the tail after the last job)."""
        return self.gpus * self.makespan_s - self.busy_gpu_s


def node_sizes(gpus: int, per_node: int = 8) -> list[int]:
    """The nodes `gpus` GPUs make: full nodes of `per_node`, then one with the remainder."""
    if gpus < 1 or per_node < 1:
        raise ValueError(f"need at least one GPU and one GPU per node (got {gpus} GPUs, {per_node} per node)")
    return [per_node] * (gpus // per_node) + ([gpus % per_node] if gpus % per_node else [])


def order(jobs: Sequence[EngineJob]) -> list[EngineJob]:
    """Longest first; among equals the wider group first (harder to fit later), then by name."""
    return sorted(jobs, key=lambda j: (-j.duration_s, -j.gpus, j.name))


def earliest(placed: Sequence[Placement], size: int, job: EngineJob) -> float:
    """The earliest time a node of `size` GPUs, holding `placed`, has `job.gpus` free for `job.duration_s`:
    time 0 or the end of a placed job (usage only drops there)."""
    for begin in sorted({0.0, *(p.end_s for p in placed)}):
        end = begin + job.duration_s
        overlapping = [p for p in placed if p.begin_s < end and p.end_s > begin]
        # usage over [begin, end) peaks at `begin` or at a later start of an overlapping job
        peaks = {begin, *(p.begin_s for p in overlapping if p.begin_s > begin)}
        if all(sum(p.job.gpus for p in overlapping if p.begin_s <= t < p.end_s) + job.gpus <= size
               for t in peaks):
            return begin
    raise AssertionError("unreachable: after the last job ends the node is empty")


def schedule(jobs: Sequence[EngineJob], gpus: int, per_node: int = 8) -> Schedule:
    """Every job placed on the nodes of `gpus` GPUs (see the module's docstring for the rule)."""
    sizes = node_sizes(gpus, per_node)
    out = Schedule(gpus, sizes)
    on_node: list[list[Placement]] = [[] for _ in sizes]
    for job in order(jobs):
        options = [(earliest(on_node[n], size, job), n) for n, size in enumerate(sizes) if size >= job.gpus]
        if not options:
            out.unplaced.append(job)
            continue
        begin, n = min(options)
        on_node[n].append(Placement(job, n, begin))
        out.placements.append(on_node[n][-1])
    return out
