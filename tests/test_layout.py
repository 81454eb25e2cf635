"""The layout the architecture promises (docs/ARCHITECTURE.md), read from the source with ast: layers import
downwards only, no module imports another's private name, no import cycles, small files, and jobs/ reaches a
benchmark through its protocol methods, never by probing a module or naming one in its code."""
from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("benchmarks", "actors", "jobs")
# Who may import whom: benchmarks are pure; actors wrap engines (and may use a benchmark's pure scoring rules);
# jobs wire everything.
ALLOWED = {"benchmarks": {"benchmarks"}, "actors": {"actors", "benchmarks"}, "jobs": set(LAYERS)}
MAX_LINES = 400
# jobs/ in subpackages, each importing only those before it (docs/ARCHITECTURE.md): what a sweep is, where a run
# lives, who answers, a benchmark's walk from data to metrics, what the answers mean, how a sweep runs, then the
# plan, validation and the CLI on top.
JOBS_PACKAGES = ("config", "store", "console", "engines", "loading", "flow", "analysis", "sweep", "plan", "validate",
                 "cli")


def _modules() -> dict[str, Path]:
    out = {}
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> list[tuple[str, str, int]]:
    """(imported project module, imported name or "", line) for every import, in functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names if alias.name.split(".")[0] in LAYERS]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LAYERS:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append((submodule, "", node.lineno) if submodule in MODULES
                             else (node.module, alias.name, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    return {module: {target for target, _, _ in _imports(path) if target in MODULES}
            for module, path in MODULES.items()}


def test_every_layer_imports_only_the_layers_below_it():
    wrong = [f"{module} imports {target} (line {line})" for module, path in MODULES.items()
             for target, _, line in _imports(path)
             if target.split(".")[0] not in ALLOWED[module.split(".")[0]]]
    assert wrong == []


def test_jobs_is_made_of_the_declared_packages():
    folders = {p.name for p in (REPO / "jobs").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(JOBS_PACKAGES)
    assert sorted(p.name for p in (REPO / "jobs").glob("*.py")) == ["__init__.py", "__main__.py"]
    assert all((REPO / "jobs" / package / "__init__.py").is_file() for package in JOBS_PACKAGES)


def _jobs_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "jobs" and len(parts) > 1 and parts[1] in JOBS_PACKAGES else None


# Each engine declares its own keys of a model file beside its code (jobs/engines/<name>/settings.py), and
# jobs.config nests them in ModelConfig: the one thing of a later package the config imports. Those modules
# import nothing of jobs (test_an_engines_settings_module_imports_nothing_of_jobs), so the config still loads
# before every other package and no cycle can pass through them.
ENGINE_SETTINGS = sorted(m for m in MODULES if re.fullmatch(r"jobs\.engines\.[a-z_]+\.settings", m))


def test_every_jobs_package_imports_only_the_packages_before_it():
    wrong = [f"{module} imports {target} (line {line})" for module, path in MODULES.items()
             if (own := _jobs_package(module)) is not None
             for target, _, line in _imports(path)
             if (other := _jobs_package(target)) is not None
             and JOBS_PACKAGES.index(other) > JOBS_PACKAGES.index(own)
             and not (own == "config" and target in ENGINE_SETTINGS)]
    assert wrong == []


def test_an_engines_settings_module_imports_nothing_of_jobs():
    assert ENGINE_SETTINGS == ["jobs.engines.http.settings", "jobs.engines.transformers.settings",
                               "jobs.engines.vllm.settings"]
    assert [f"{module} imports {target}" for module in ENGINE_SETTINGS for target, _, _ in _imports(MODULES[module])
            if target.split(".")[0] == "jobs"] == []


def test_no_module_imports_a_private_name_of_another():
    private = [f"{module} imports {name} from {target} (line {line})" for module, path in MODULES.items()
               for target, name, line in _imports(path) if name.startswith("_") and target != module]
    assert private == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_there_is_no_import_cycle():
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_source_files_stay_small(module):
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(REPO)}: {lines} lines"


def test_jobs_never_probe_a_module_for_hooks():
    probes = [f"{path.relative_to(REPO)}:{number}" for path in sorted((REPO / "jobs").rglob("*.py"))
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if "getattr(module" in line or "hasattr(module" in line or "benchmark_module" in line]
    assert probes == []


def test_no_code_outside_jobs_engines_branches_on_an_engine_name():
    """Each engine owns its rules (jobs/engines/<name>/engine.py); elsewhere jobs/ asks engine_of(model)."""
    pattern = re.compile(r"engine ==|engine in \(|engine !=")
    found = [f"{path.relative_to(REPO)}:{i}" for path in (REPO / "jobs").rglob("*.py")
             if path.relative_to(REPO).parts[1] != "engines"
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_no_code_outside_jobs_engines_branches_on_a_kind_string():
    """What a model's kind means is declared once (jobs.config.schema KINDS: generates, pools, reads_logprobs,
    remote); elsewhere jobs/ asks it, so a new kind is one entry there."""
    pattern = re.compile(r"kind (==|!=|in \(|not in \()")
    found = [f"{path.relative_to(REPO)}:{i}" for path in (REPO / "jobs").rglob("*.py")
             if path.relative_to(REPO).parts[1] != "engines"
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_an_untyped_mapping_in_jobs_and_actors_is_named_for_its_edge():
    """Inside the project data travels as records; a mapping whose keys someone else defines (a JSON file, an
    Arrow row, a Ray Data batch, a library's keyword arguments) is written as benchmarks.boundary_types names it."""
    found = [f"{path.relative_to(REPO)}:{i}" for layer in ("jobs", "actors") for path in (REPO / layer).rglob("*.py")
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"dict\[str, ?Any\]", line)]
    assert found == []


# An engine is one folder, jobs/engines/<name>/: engine.py holds its rules for the driver, every other module is
# code its Ray workers run, which imports only actors/ (what all engines' workers share), benchmarks/ and the
# worker modules of its own folder. The packages above a worker module (jobs, jobs.engines, the folder) import
# nothing, so loading a worker module loads no driver code.
ENGINE_FOLDERS = sorted(p.parent.name for p in (REPO / "jobs" / "engines").glob("*/engine.py"))
WORKER_MODULES = sorted(m for m in MODULES if m.count(".") == 3 and m.split(".")[2] in ENGINE_FOLDERS
                        and m.startswith("jobs.engines.") and not m.endswith(".engine"))


def test_every_engine_is_one_folder():
    assert ENGINE_FOLDERS == ["anthropic_batch", "bm25", "http", "openai_batch", "sentence_transformers", "stand_in",
                              "transformers", "vllm"]
    # actors/ holds only what every engine's workers share, no one engine's code
    assert sorted(p.stem for p in (REPO / "actors").glob("*.py")) == [
        "__init__", "bertscore", "built_in_models", "engine_calls", "engine_ledger", "hardware", "retrievers",
        "sampling", "templating", "worker_model"]
    assert {"jobs.engines.vllm.server", "jobs.engines.transformers.scorers",
            "jobs.engines.bm25.index"} <= set(WORKER_MODULES)


def test_an_engines_worker_modules_import_only_shared_worker_code_and_their_own_folder():
    wrong = []
    for module in WORKER_MODULES:
        folder = module.rsplit(".", 1)[0]
        for target, _, line in _imports(MODULES[module]):
            own = target.startswith(folder + ".") and target != folder + ".engine"
            if not own and target.split(".")[0] not in ("actors", "benchmarks"):
                wrong.append(f"{module} imports {target} (line {line})")
    assert wrong == []


def test_the_packages_above_a_worker_module_import_nothing():
    packages = ["jobs", "jobs.engines", *(f"jobs.engines.{folder}" for folder in ENGINE_FOLDERS)]
    assert [p for p in packages if any(isinstance(node, (ast.Import, ast.ImportFrom))
                                      for node in ast.walk(ast.parse(MODULES[p].read_text(encoding="utf-8"))))] == []


@pytest.mark.parametrize("module", ["jobs.engines.vllm.server", "jobs.engines.transformers.scorers",
                                    "jobs.engines.http.client", "jobs.engines.sentence_transformers.index"])
def test_a_worker_loading_its_engine_loads_no_driver_module(module):
    """What a Ray worker imports when it starts an engine's actor, in a fresh interpreter."""
    code = f"import sys, {module}; print(' '.join(sorted(m for m in sys.modules if m.startswith('jobs'))))"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    folder = module.rsplit(".", 1)[0]
    driver = [m for m in loaded.stdout.split() if m not in ("jobs", "jobs.engines", folder)
              and not (m.startswith(folder + ".") and m != folder + ".engine")]
    assert driver == [] and module in loaded.stdout.split()


# The benchmark packages, from the filesystem; a name matches however it is spelled (RAG-RewardBench, Bi'anBench).
BENCHMARK_PACKAGES = sorted(p.name for p in (REPO / "benchmarks").iterdir() if (p / "__init__.py").is_file())
NAMES_A_BENCHMARK = re.compile("|".join(r"\b" + "[-_' ]?".join(re.escape(c) for c in name if c != "_")
                                        for name in BENCHMARK_PACKAGES), re.IGNORECASE)


def _code(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each token of a module but its comments and docstrings (any string that is a statement of
    its own)."""
    docstrings = {(node.lineno, node.col_offset) for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str)}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT and not (token.type == tokenize.STRING and token.start in docstrings):
            yield token.start[0], token.string


def _named(source: str) -> list[tuple[int, str]]:
    return [(line, text) for line, text in _code(source) if NAMES_A_BENCHMARK.search(text)]


def test_the_benchmark_name_finder_reads_code_and_strings_but_not_comments_or_docstrings():
    assert len(BENCHMARK_PACKAGES) >= 4 and "protocol" not in BENCHMARK_PACKAGES
    name = BENCHMARK_PACKAGES[0]
    source = (f'"""Module docstring: {name}."""\n'
              f"def f():\n    \"\"\"{name} in a docstring.\"\"\"\n    # {name} in a comment\n"
              f"    x = {name}_thing + 1  # code\n    return f'{name.upper().replace('_', '-')} items'\n")
    assert [line for line, _ in _named(source)] == [5, 6]


def test_jobs_code_names_no_benchmark():
    """jobs/ reaches a benchmark through the protocol and names in its code (identifiers and strings) none of
    the benchmark packages; a comment or docstring may give one as an example."""
    named = [f"{path.relative_to(REPO)}:{line}: {text}" for path in sorted((REPO / "jobs").rglob("*.py"))
             for line, text in _named(path.read_text(encoding="utf-8"))]
    assert named == []


# The only imports a function may hold, each with why it waits for its first use (seconds: import time measured
# on the 2-core CI machine). Everything else, our own modules first, is imported at the top, so the import graph
# reads from the first lines of a module.
DEFERRED = {
    "ray": "0.5 s, and `ragjudge --help`, `plan`, `models`, `report` never start a cluster",
    "torch": "1.5 s; only engines and encoders compute",
    "transformers": "1.3 s; only engines, tokenizers and the making of built-in models read it",
    "vllm": "seconds, and a driver that only submits may not have it",
    "accelerate": "1.9 s; only a reward net that loads with device maps",
    "jobs.engines.transformers.reward_nets": "imports torch at its top",
    "sentence_transformers": "7.6 s; only the dense retriever",
    "bert_score": "7 s; only the BERTScore stage",
    "bm25s": "0.7 s; only the lexical retriever",
    "faiss": "0.2 s; only an HNSW index",
    "openai": "0.9 s; only API judges",
    "rouge_score": "1.8 s (nltk); only the scoring of generated answers",
    "sacrebleu": "0.14 s; only the scoring of generated answers, beside rouge_score",
    "huggingface_hub": "0.2 s; the config and the CLI import benchmarks.hub on every command",
    "matplotlib": "0.6 s; only the report's figures",
    "s3fs": "0.5 s; only a run on object storage",
    "aiohttp": "only a run on object storage (s3fs's transport errors)",
    "botocore": "only a run on object storage (S3 error codes)",
    "pydantic": "a request class Ray Serve's LLM API defines, made only where a shared judge is deployed",
    "safetensors": "only a reward net's own weights",
}


def _deferred_imports() -> list[tuple[str, int, str]]:
    found = []
    for module, path in MODULES.items():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, ast.Import):
                        found += [(module, node.lineno, alias.name) for alias in node.names]
                    elif isinstance(node, ast.ImportFrom):
                        found.append((module, node.lineno, node.module or ""))
    return found


def test_imports_inside_functions_are_only_those_that_wait_for_a_reason():
    def reason(name: str) -> str | None:
        return next((DEFERRED[p] for p in (name, name.split(".")[0]) if p in DEFERRED), None)

    assert [f"{module}:{line}: {name}" for module, line, name in _deferred_imports() if reason(name) is None] == []
