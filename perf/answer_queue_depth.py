"""The stand-in cell's driver in one process: its RSS over time and the most answers that waited in the queue
between the engine's stream and the cell that stores them (jobs.sweep.answer_parts), to tell whether that
queue is where the driver grows from 20k to 1M pairs (issue 65; docs/measurements.md, "Where the stand-in's
growth from 20k to 1M goes").

    python perf/answer_queue_depth.py PAIRS.jsonl

PAIRS.jsonl: `python perf/list_engines_driver.py --make N PATH` makes N pairs. Prints the cell's outcome, the
process's ru_maxrss, the deepest the queue got, and about 40 (seconds, RSS MiB, deepest so far) samples.
"""
from __future__ import annotations

import argparse
import json
import queue
import resource
import tempfile
import threading
import time
from pathlib import Path

import psutil
from list_engines_driver import run_cell_path

from jobs.sweep import answer_parts

SAMPLE_S = 0.5


class DepthQueue(queue.Queue):
    """A queue.Queue that remembers the most items it held after a put."""

    deepest = 0

    def put(self, item, block=True, timeout=None) -> None:
        super().put(item, block, timeout)
        DepthQueue.deepest = max(DepthQueue.deepest, self.qsize())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    args = parser.parse_args()
    # answer_parts makes its queue as `queue.Queue()`: its module's `queue` is swapped for one whose Queue counts.
    answer_parts.queue = argparse.Namespace(Queue=DepthQueue, Empty=queue.Empty, Full=queue.Full)
    samples, done = [], threading.Event()

    def sample() -> None:
        process, start = psutil.Process(), time.monotonic()
        while not done.wait(SAMPLE_S):
            samples.append((round(time.monotonic() - start, 1), round(process.memory_info().rss / 2**20, 1),
                            DepthQueue.deepest))

    threading.Thread(target=sample, name="rss-sampler", daemon=True).start()
    outcome = run_cell_path(args.data, "stand_in", Path(tempfile.mkdtemp(prefix="queue-depth-")))
    done.set()
    print(json.dumps(outcome))
    print(f"ru_maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB, "
          f"deepest queue {DepthQueue.deepest} answers")
    for row in samples[::max(1, len(samples) // 40)]:
        print(row)


if __name__ == "__main__":
    main()
