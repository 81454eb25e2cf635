"""`python -m jobs` is the `ragjudge` command."""
import sys

from jobs.cli import main

if __name__ == "__main__":  # vLLM spawns processes: entry points need this guard
    sys.exit(main())
