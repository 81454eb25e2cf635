"""`ragjudge models`: the model registry in conf/models, and whether each model can run on this machine now."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jobs.engines.readiness import Machine, why_not
from jobs.engines.weights import unpinned
from jobs.loading import PROJECT_CONF, format_models, list_models


def add(commands: Any) -> None:
    parser = commands.add_parser("models", help="list the model registry, and whether each model can run here")
    parser.add_argument("--conf", default=str(PROJECT_CONF), help="the conf/ folder whose models/ to list")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    models, machine = list_models(Path(args.conf)), Machine.here()
    print(f"This machine: {machine.gpus} GPUs, vLLM: {machine.vllm_build or 'not installed'}. A model is "
          "ready when its engine's packages, its GPUs, its weights (a folder, a built-in model's package or the "
          "Hugging Face cache) and its API variables are all here.")
    print(format_models(models, {m.name: why_not(m, machine) for m in models}))
    if names := unpinned(models):
        print(f"ragjudge models: {len(names)} model files load hub weights at no commit sha, so what they load moves with every push "
              f"to the repository: {', '.join(names)}. `ragjudge fetch SWEEP --pin` writes the commit it fetched "
              "into each file's `revision:`.", file=sys.stderr)
    return 0
