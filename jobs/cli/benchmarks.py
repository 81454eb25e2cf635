"""`ragjudge benchmarks [NAME]`: the benchmarks of conf/benchmarks/, and for one of them the fields its rows have
(name, required or not, type, meaning, how each reaches the prompt) with two example rows and how to map a file's
own columns onto them."""
from __future__ import annotations

import argparse
from typing import Any

from benchmarks.columns import example_lines
from benchmarks.protocol import Benchmark, benchmark
from benchmarks.tables import aligned
from jobs.config import BenchmarkConfig, ConfigError
from jobs.loading import PROJECT_CONF
from jobs.loading.files import load_yaml, structured


def add(commands: Any) -> None:
    parser = commands.add_parser("benchmarks", help="list the benchmarks, or one benchmark's fields and an example")
    parser.add_argument("name", nargs="?", help="a benchmark of conf/benchmarks/ (as listed without a NAME) or a module")
    parser.set_defaults(func=run)


def configs() -> dict[str, BenchmarkConfig]:
    """Every benchmark config of the project's conf/benchmarks/, by name."""
    found = {}
    for path in sorted((PROJECT_CONF / "benchmarks").glob("*.yaml")):
        found[path.stem] = structured(BenchmarkConfig, load_yaml(path), str(path))
    return found


def run(args: argparse.Namespace) -> int:
    known = configs()
    if args.name is None:
        rows = [["name", "module", "data"]]
        rows += [[name, c.module, ", ".join(c.data)] for name, c in known.items()]
        print(aligned(rows, left=3))
        print("\n`ragjudge benchmarks NAME` lists a benchmark's fields; `ragjudge eval MODEL --benchmark NAME` runs it.")
        return 0
    module = known[args.name].module if args.name in known else args.name
    spec = benchmark(module)
    if not isinstance(spec, Benchmark):
        raise ConfigError(f"{args.name}: scored on rankings (corpora, queries and qrels in their released layout, "
                          "in the folders its config's data names), not read row by row")
    print(f"{args.name} (module {module}): the fields of a row\n")
    rows = [["field", "required", "type", "meaning", "in the prompt"]]
    rows += [[f.name, "yes" if f.required else "no", f.type, f.meaning, f.use] for f in spec.fields]
    print(aligned(rows, left=5))
    if examples := example_lines(spec.examples):
        print("\nTwo rows (JSONL):\n" + "\n".join(examples))
    print("\nYour own column names: `columns: {FIELD: YOUR_COLUMN}` in a benchmark config, or "
          "`ragjudge eval MODEL --data FILE --columns FIELD=YOUR_COLUMN,...`. Files: JSONL, JSON, CSV, TSV, "
          "Parquet, .jsonl.gz, a folder of them, hf://datasets/ORG/NAME, s3://BUCKET/KEY.")
    return 0
