"""What a loaded config must satisfy beyond its types: a benchmark's options and data paths, and each model's kind,
engine and engine-only settings, as the engines declare them (jobs.engines)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from benchmarks.columns import mapping_problems, unread_lines
from benchmarks.hub import check_url, is_hub
from benchmarks.options import OptionsError, typed_options
from benchmarks.protocol import Benchmark, UnknownBenchmark, benchmark
from jobs.config import (
    ENSEMBLE_RULES,
    KINDS,
    SECTIONS,
    BenchmarkConfig,
    ConfigError,
    EnsembleConfig,
    ModelConfig,
    StorageConfig,
    ensemble_name,
    setting,
)
from jobs.engines.base import Engine, engines
from jobs.engines.transformers.heads import HEADS
from jobs.loading.names import check_env_names, check_name

UNSET_ALLOWED = ("verdict", "transformers.head")  # None: the benchmark's own reading; a stock classifier's raw logit


def choices() -> dict[str, tuple[str, ...]]:
    """The allowed values of the keys that take one of a few; engines are whichever are registered now."""
    return {"kind": tuple(KINDS), "engine": tuple(sorted(engines())), "verdict": ("logprob", "text"),
            "transformers.head": tuple(sorted(HEADS))}


def check_options(bench: BenchmarkConfig, source: str, name: str) -> None:
    """The benchmark exists and its options type-check (its Options dataclass) and agree with each other."""
    try:
        spec = benchmark(bench.module)
    except UnknownBenchmark as e:
        raise ConfigError(f"{source}: key 'benchmarks.{name}.module': {e}") from None
    try:
        problems = spec.problems(typed_options(spec.Options, bench.options))
    except OptionsError as e:
        key = ".".join(filter(None, ["benchmarks", name, "options", e.key]))
        raise ConfigError(f"{source}: key '{key}': {e.reason}") from None
    if problems:
        raise ConfigError(f"{source}: benchmark '{name}': " + "; ".join(problems))


def check_data(bench: BenchmarkConfig, source: str, name: str) -> None:
    """hf:// data paths are well formed (benchmarks.hub); they are fetched when a sweep runs, not here. `limit`
    is a positive number of items; the error budget is a share of requests."""
    if not 0.0 <= bench.max_error_rate <= 1.0:
        raise ConfigError(f"{source}: key 'benchmarks.{name}.max_error_rate': {bench.max_error_rate} is not a share "
                          "of requests between 0 and 1")
    if bench.limit is not None and bench.limit < 1:
        raise ConfigError(f"{source}: key 'benchmarks.{name}.limit': {bench.limit} is not a positive number of "
                          "items; leave it out to read them all")
    for path in filter(is_hub, bench.data):
        try:
            check_url(path)
        except ValueError as e:
            raise ConfigError(f"{source}: key 'benchmarks.{name}.data': {e}") from None


def check_columns(bench: BenchmarkConfig, source: str, name: str) -> None:
    """A `columns` mapping names fields of the benchmark, each from its own column."""
    if not bench.columns:
        return
    spec = benchmark(bench.module)
    if not isinstance(spec, Benchmark):
        raise ConfigError(f"{source}: key 'benchmarks.{name}.columns': {bench.module} is scored on rankings and "
                          "reads no columns")
    if problems := mapping_problems(spec.fields, bench.columns):
        raise ConfigError(f"{source}: key 'benchmarks.{name}.columns': " + "; ".join(
            p.removeprefix("columns: ") for p in problems))


def unread_column_lines(benchmarks: Mapping[str, BenchmarkConfig]) -> list[str]:
    """A line per data file holding columns its benchmark does not read (local files; hub and object data are
    read when the cell runs)."""
    lines = []
    for name, bench in benchmarks.items():
        spec = benchmark(bench.module)
        if isinstance(spec, Benchmark):
            local = [path for path in bench.data if "://" not in path and Path(path).exists()]
            lines += unread_lines(name, spec.fields, local, bench.columns)
    return lines


def check_data_present(bench: BenchmarkConfig, source: str, name: str) -> None:
    """A local data path exists, unless the benchmark gives `size` for `ragjudge plan` to go without it (`run`
    then refuses it before Ray starts: require_data). Checked last: a wrong module or option is the first thing
    to say of a benchmark whose data is not here either."""
    if bench.size is None and (missing := missing_data(bench)):
        raise ConfigError(f"{source}: key 'benchmarks.{name}.data': {missing[0]} does not exist")


def missing_data(bench: BenchmarkConfig) -> list[str]:
    """The benchmark's local data paths that are not there (hf:// and object storage are read when a cell runs,
    and fail it there, naming the path)."""
    return [path for path in bench.data if "://" not in path and not Path(path).exists()]


def require_data(benchmarks: Mapping[str, BenchmarkConfig]) -> None:
    """Every local data path of the benchmarks is there: what `run` checks before a cluster starts, so a missing
    path fails in a second, naming it, not after Ray and the first engine (`validate` falls back to bundled
    samples, `plan` to `size`)."""
    missing = [f"benchmarks.{name}.data: {path}" for name, bench in benchmarks.items() for path in missing_data(bench)]
    if missing:
        raise ConfigError(f"data not on this machine ({'; '.join(missing)}); fetch it or fix the path "
                          "(`ragjudge plan` works without it where the benchmark sets `size`)")


def check_storage(storage: StorageConfig, source: Path) -> None:
    """`storage.run` is one folder name under the root: it names the run everywhere (paths, leases, reports)."""
    run = storage.run.strip().strip("/")  # as RunRoot takes it: "run/" is the folder "run"
    if not run or "/" in run or run in (".", "..") or any(ord(c) < 32 for c in run):
        raise ConfigError(f"{source}: key 'storage.run': {storage.run!r} is not one folder name (no '/', not '.' "
                          "or '..', no control characters)")


def check_models(models: Mapping[str, ModelConfig], source: Path) -> None:
    """Each model's name and environment variable names, its choices, its kind against its engine's, and
    settings only another engine reads."""
    defaults = ModelConfig()  # a setting another engine owns is set when it differs from its default
    for name, model in models.items():
        for label in dict.fromkeys((name, model.name)):  # the sweep's key, and the name an override may change
            check_name(label, "model", "models", source)
        where = f"{source}: key 'models.{name}"
        check_env_names(model, where)
        for key, allowed in choices().items():
            value = setting(model, key)
            if value not in allowed and not (key in UNSET_ALLOWED and value is None):
                raise ConfigError(f"{where}.{key}': '{value}' is not one of {', '.join(allowed)}")
        engine = engines()[model.engine]
        if model.kind not in engine.kinds:
            # an engine made for one kind names the kind, so the kind is what is wrong; else the engine is
            key, value = ("kind", model.kind) if len(engine.kinds) == 1 else ("engine", model.engine)
            runs_it = sorted(e.name for e in engines().values() if model.kind in e.kinds)
            raise ConfigError(f"{where}.{key}': '{value}' does not go with "
                              f"{f'engine {model.engine}' if key == 'kind' else f'kind {model.kind}'}: kind "
                              f"{model.kind} runs on engine {' or '.join(runs_it)}, and engine {model.engine} runs "
                              f"only kind {' or '.join(sorted(engine.kinds))}")
        for section in (*SECTIONS, "retriever"):
            if section not in engine.sections and (key := _first_set(model, defaults, section)):
                readers = _engines_that(lambda e, wanted=section: wanted in e.sections)
                raise ConfigError(f"{where}.{section}.{key}': only engine {readers} reads the {section} section, "
                                  f"not kind {model.kind} on engine {model.engine}")
        if model.tokenizer is not None and not engine.separate_tokenizer:
            loaders = _engines_that(lambda e: e.separate_tokenizer)
            raise ConfigError(f"{where}.tokenizer': only engine {loaders} loads a separate tokenizer, not kind "
                              f"{model.kind} on engine {model.engine}")
        for key, why in engine.own_setting_problems(model):
            raise ConfigError(f"{where}.{key}': {why}")
        if model.reasoning is not None:
            _check_reasoning(model, where)


def _check_reasoning(model: ModelConfig, where: str) -> None:
    """A `reasoning:` block belongs to a model that generates, and its verdict is read from its text: a log-prob
    verdict is read right after the prompt, which for a thinking model is inside its trace."""
    if not KINDS[model.kind].generates:
        raise ConfigError(f"{where}.reasoning': kind {model.kind} generates no text to think in; only a generative "
                          "judge (kind generative or api) has a reasoning block")
    engine = engines()[model.engine]
    if model.verdict == "logprob" and not (engine.prefills and engine.continues_turns):
        able = _engines_that(lambda e: e.prefills and e.continues_turns)
        raise ConfigError(f"{where}.verdict': a thinking judge's log-prob verdict is read after its trace, in a "
                          f"request that continues the turn, which engine {model.engine} cannot do (engine {able} "
                          "can); drop verdict, or set it to text")
    for key, why in model.reasoning.problems():
        raise ConfigError(f"{where}.reasoning.{key}': {why}")
    if model.reasoning.parser is not None:
        _check_parser(model, where, engine)
    if model.reasoning.budget_tokens is not None and not engine.continues_turns:
        able = _engines_that(lambda e: e.continues_turns)
        raise ConfigError(f"{where}.reasoning.budget_tokens': a trace cut at its budget is closed and the answer "
                          f"generated after it, which engine {model.engine} cannot do (engine {able} can)")


def _check_parser(model: ModelConfig, where: str, engine: Engine) -> None:
    """vLLM's reasoning parser: a name its registry has, on the engine that runs it, and neither a budget nor a
    log-prob verdict after the trace, whose requests the driver writes with the trace's delimiters."""
    parser = model.reasoning.parser
    if not engine.runs_reasoning_parsers:
        runs = _engines_that(lambda e: e.runs_reasoning_parsers)
        raise ConfigError(f"{where}.reasoning.parser': vLLM's reasoning parsers run in engine {runs}, not "
                          f"{model.engine}; name the trace's delimiters (reasoning.start and end) instead")
    from vllm.reasoning import (
        ReasoningParserManager,  # vLLM's registry, imported only where a parser is named
    )

    if parser not in (known := ReasoningParserManager.list_registered()):
        raise ConfigError(f"{where}.reasoning.parser': vLLM {_vllm_version()} has no reasoning parser {parser!r}; "
                          f"it has {', '.join(known)}")
    if model.reasoning.budget_tokens is not None or model.verdict == "logprob":
        key = "reasoning.budget_tokens" if model.reasoning.budget_tokens is not None else "verdict"
        raise ConfigError(f"{where}.{key}': a budget and a log-prob verdict after the trace are asked with the "
                          "trace's delimiters, which reasoning.parser leaves to vLLM; name them (reasoning.start and "
                          "end) instead of a parser")


def _engines_that(which: Callable[[Engine], bool]) -> str:
    """The registered engines `which` holds for, by name, as the checks' messages list them."""
    return " or ".join(sorted(e.name for e in engines().values() if which(e)))


def _vllm_version() -> str:
    import vllm

    return str(vllm.__version__)


def _first_set(model: ModelConfig, defaults: ModelConfig, section: str) -> str | None:
    """The first key of the model's `section` that differs from its default, if any."""
    values, default = getattr(model, section), getattr(defaults, section)
    if isinstance(values, dict):
        return next(iter(values), None)  # `retriever`: empty by default
    return next((f.name for f in fields(values) if getattr(values, f.name) != getattr(default, f.name)), None)


def check_ensembles(ensembles: list[EnsembleConfig], models: Mapping[str, ModelConfig], benchmarks: Mapping[str, Any],
                    source: Path) -> None:
    """Each ensemble has two or more distinct members that are models of the sweep, a known rule, benchmarks
    of the sweep, and a name no model or other ensemble has."""
    names = set(models)
    for k, ensemble in enumerate(ensembles):
        where = f"{source}: key 'ensembles[{k}]"
        unknown = [m for m in ensemble.members if m not in models]
        if unknown:
            raise ConfigError(f"{where}.members': {', '.join(unknown)} not a model of the sweep")
        if len(set(ensemble.members)) < 2 or len(set(ensemble.members)) < len(ensemble.members):
            raise ConfigError(f"{where}.members': an ensemble needs two or more distinct members")
        if ensemble.rule not in ENSEMBLE_RULES:
            raise ConfigError(f"{where}.rule': '{ensemble.rule}' is not one of {', '.join(ENSEMBLE_RULES)}")
        if missing := [b for b in ensemble.benchmarks if b not in benchmarks]:
            raise ConfigError(f"{where}.benchmarks': {', '.join(missing)} not a benchmark of the sweep")
        name = ensemble_name(ensemble)
        check_name(name, "model", f"ensembles[{k}].name", source)
        if name in names:
            raise ConfigError(f"{where}.name': '{name}' is already a model or ensemble of the sweep")
        names.add(name)
