"""`ragjudge eval MODEL`: one model on one or more benchmarks in one command. The command is turned into a sweep
(one model, its benchmarks, the data and column mapping given), written as `ROOT/RUN/sweep.yaml`, and run by
`ragjudge run`'s own code, so the file reruns or grows into the user's own sweep."""
from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from benchmarks.boundary_types import JsonObject
from jobs.cli import run as run_verb
from jobs.config import ConfigError
from jobs.loading.files import load_yaml
from jobs.loading.one_model import DEFAULTS, EvalRequest, absolute, eval_sweep, model_entry


def add(commands: Any) -> None:
    defaults = load_yaml(DEFAULTS)
    parser = commands.add_parser(
        "eval", help="evaluate one model (a folder, hf:ORG/NAME, a built-in, or http:NAME) in one command",
        description="Evaluate one model on one or more benchmarks: a one-model sweep is written to "
                    "ROOT/RUN/sweep.yaml and run as `ragjudge run` runs it (rerun or grow that file).",
        epilog="examples:\n  ragjudge eval ./my-rm\n  ragjudge eval ./my-rm --data pairs.jsonl --columns "
               "prompt=question,reject=rejected\n  ragjudge eval hf:Skywork/Skywork-Reward-Llama-3.1-8B-v0.2 "
               f"--benchmark {defaults.data_benchmark}\n  ragjudge eval http:gpt-4o-mini --api-base-env "
               "OPENAI_BASE_URL --api-key-env OPENAI_API_KEY --benchmark NAME",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a local model folder, hf:ORG/NAME[@REVISION], builtin:NAME or pypi:PACKAGE, "
                                      "http:NAME (an OpenAI-compatible endpoint's model), or a name in conf/models/")
    parser.add_argument("--benchmark", action="append", default=[], metavar="NAME",
                        help="a benchmark of conf/benchmarks/ (`ragjudge benchmarks` lists them); repeat for more; "
                             f"default: {defaults.benchmark}, or {defaults.data_benchmark} read from --data "
                             "(conf/eval.yaml)")
    parser.add_argument("--kind", choices=("discriminative", "generative", "implicit"),
                        help="what the model is; default: read from its config.json (a *ForSequenceClassification "
                             "is discriminative, a *ForCausalLM a generative judge)")
    parser.add_argument("--reference", help="an implicit RM's reference model (same forms as MODEL)")
    parser.add_argument("--data", action="append", default=[], metavar="PATH",
                        help="the benchmark's data instead of its own: a file or folder (JSONL, JSON, CSV, TSV, "
                             "Parquet, .jsonl.gz), hf://datasets/ORG/NAME or s3://BUCKET/KEY; repeat for more")
    parser.add_argument("--columns", default="", metavar="FIELD=COLUMN,...",
                        help="which of your columns holds each benchmark field, e.g. prompt=question,reject=rejected "
                             "(`ragjudge benchmarks NAME` lists the fields)")
    parser.add_argument("--name", help="the model's name in results (default: from MODEL)")
    parser.add_argument("--api-base-env", metavar="VAR", help="http: models: the variable holding the base URL")
    parser.add_argument("--api-key-env", metavar="VAR", help="http: models: the variable holding the API key")
    parser.add_argument("--root", default="results", help="where runs are written (a folder or s3://BUCKET/PREFIX)")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the sweep, e.g. "
                                                     "models.NAME.batch_size=32")
    parser.add_argument("--no-cache", action="store_true", help="as `ragjudge run --no-cache`")
    parser.add_argument("--verbose", action="store_true", help="as `ragjudge run --verbose`")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = EvalRequest(args.model, tuple(args.benchmark), args.kind, args.reference, tuple(args.data),
                          parse_columns(args.columns), args.name, args.api_base_env, args.api_key_env)
    model, how = model_entry(request)
    print(f"model {model['name']}: {how}")
    sweep = eval_sweep(request, model)
    run_name = f"eval-{model['name']}-{_digest(sweep)}"
    sweep["name"], sweep["storage"] = run_name, {"root": absolute(args.root), "run": run_name}
    path = _written(sweep, args.root, run_name)
    print(f"sweep: {path} (`ragjudge run {path}` reruns it)")
    return run_verb.run(argparse.Namespace(sweep=str(path), overrides=list(args.overrides), include_held=False,
                                           no_cache=args.no_cache, retry_errors=False, verbose=args.verbose))


def parse_columns(text: str) -> dict[str, str]:
    """'prompt=question,reject=rejected' -> {prompt: question, reject: rejected}."""
    columns: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise ConfigError(f"--columns: '{pair}' is not FIELD=COLUMN (e.g. --columns prompt=question,"
                              "reject=rejected)")
        columns[field.strip()] = column.strip()
    return columns


def _digest(sweep: JsonObject) -> str:
    """Six hex digits of the composed sweep: the same command reruns (resumes) the same run, another writes its
    own."""
    return hashlib.sha256(json.dumps(sweep, sort_keys=True).encode()).hexdigest()[:6]


def _written(sweep: JsonObject, root: str, run_name: str) -> Path:
    """The sweep as YAML in the run's folder (a local root), or beside the working folder's `.ragjudge/` for a
    run root on object storage, which `ragjudge run` reads from a local file."""
    folder = Path(root) / run_name if "://" not in root else Path(".ragjudge") / re.sub(r"\W", "_", run_name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sweep.yaml"
    text = ("# Written by `ragjudge eval`: `ragjudge run` this file to run it again, or copy and grow it.\n"
            + OmegaConf.to_yaml(OmegaConf.create(sweep)))
    path.write_text(text, encoding="utf-8")
    return path
