"""What a judged cell's survey leaves in the driver (issue 65): the stand-in cell of perf/list_engines_driver.py
run in this process up to the end of its survey, then stopped, and at that point the process's anonymous memory
(/proc/self/smaps_rollup) and the arenas of Python's small-object allocator (`sys._debugmallocstats`).

    python perf/survey_arenas.py PAIRS.jsonl

PAIRS.jsonl: `python perf/list_engines_driver.py --make N PATH` makes N pairs. Prints one line: items, anonymous
MiB, arenas allocated now, and the MiB of unused pools those arenas hold.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from list_engines_driver import run_cell_path

from jobs.flow import first_round


class SurveyEnded(Exception):
    """Raised where the survey's checks would run: the cell goes no further."""


def anonymous_mib() -> int:
    with open("/proc/self/smaps_rollup") as rollup:
        fields = dict(line.split(":", 1) for line in rollup.read().splitlines()[1:])
    return int(fields["Anonymous"].split()[0]) // 1024


def allocator_stats() -> str:
    """sys._debugmallocstats's text, which CPython writes to the C stderr, not sys.stderr."""
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        return out.read()


def at_survey_end(cell, plan) -> None:
    stats = allocator_stats()
    arenas = int(re.search(r"# arenas allocated current\s*=\s*([\d,]+)", stats)[1].replace(",", ""))
    unused = int(re.search(r"unused pools \* \d+ bytes\s*=\s*([\d,]+)", stats)[1].replace(",", ""))
    print(f"items {plan.items}, anonymous {anonymous_mib()} MiB, arenas {arenas}, unused pools "
          f"{unused / 2**20:.1f} MiB", flush=True)
    raise SurveyEnded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    args = parser.parse_args()
    first_round.check_survey = at_survey_end  # the survey's end, before the stream starts
    outcome = run_cell_path(args.data, "stand_in", Path(tempfile.mkdtemp(prefix="survey-arenas-")))
    if "SurveyEnded" not in outcome["message"]:
        raise SystemExit(f"the cell did not reach its survey's end: {outcome}")


if __name__ == "__main__":
    main()
