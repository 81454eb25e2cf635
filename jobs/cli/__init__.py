"""The `ragjudge` command, one module per verb: each adds its parser (`add`) and runs it (`run`), returning the
exit status. 0: done; 1: a cell failed, the run's storage did (unreachable past storage.retry_s, or full), or the
configured Ray cluster does not answer; 2: a user's mistake, said in one line; 3: another driver holds the run's
lease (jobs.cli.run); 128 + the signal's number after SIGTERM or SIGINT (143, 130: jobs.sweep.interrupt), the
answers stored, the same command resuming."""
from __future__ import annotations

import argparse
import sys

from benchmarks.protocol import UnknownBenchmark
from jobs.cli import (
    aggregate,
    benchmarks,
    cache,
    compare,
    ensemble,
    eval,
    fetch,
    items,
    models,
    plan,
    report,
    run,
    status,
    submit,
    validate,
)
from jobs.config import ConfigError
from jobs.store import StorageError
from jobs.sweep import ClusterUnreachable

VERBS = (eval, run, validate, benchmarks, aggregate, report, compare, items, ensemble, status, submit, plan, models, fetch, cache)
DESCRIPTION = ("Evaluate reward models and LLM judges on RAG benchmarks: evaluate one model in one command, "
               "validate a sweep's models, run a sweep, list the benchmarks and their fields, "
               "re-aggregate stored predictions, write a report, compare two runs, list items across models, add "
               "ensembles of models, show a running sweep's progress, fetch a sweep's hub weights ahead of its "
               "engines, list or prune the answers kept across runs.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ragjudge", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.add(commands)
    args, extra = parser.parse_known_args(argv)
    # argparse leaves key=value words that follow flags (`plan SWEEP --gpus 8 k=v`) unparsed: they are overrides.
    if extra and hasattr(args, "overrides") and all("=" in e and not e.startswith("-") for e in extra):
        args.overrides += extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, UnknownBenchmark) as e:  # a user's mistake: one line, no traceback
        print(f"ragjudge: {e}", file=sys.stderr)
        return 2
    except (StorageError, ClusterUnreachable) as e:  # the run root or the Ray cluster unreachable: one line
        print(f"ragjudge: {e}", file=sys.stderr)
        return 1


__all__ = ["main"]
