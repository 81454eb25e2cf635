"""BERTScore as a Ray Data stage: the bert-score package's scorer inside an actor, so the encoder loads once per
actor and (candidate, reference) pairs stream through it in batches.

The encoder settings are a benchmark's `bertscore` options: model (a hub id, a local folder or a built-in spec
of actors.built_in_models), num_layers, lang, rescale_with_baseline, baseline_path, batch_size, and `folder`, the
model as the driver resolved it (jobs.flow.text_pairs): actors load it and make nothing. Rescaling reads
bert-score's own baseline file for the model's hub id (the one the config names, not its local folder),
unless baseline_path names another.

bert-score picks the model class from the name it is given: T5EncoderModel wherever "t5" occurs in it
(bert_score.utils.get_model, a rule meant for hub ids such as t5-base). The driver gives a local folder's
absolute path, and where a clone, a virtualenv or a cache has "t5" in its path by chance (/tmp/tmp.qt5Xa/...),
bert-score loads a BERT folder as T5: no weight of the checkpoint fits, each is drawn at random in each process,
and Bert-Rec moves by 0.02 from run to run (issue 62). A local folder's class is read from its
config.json here instead (`scorer_name`); the model then runs in float32, as bert-score ran it for the papers.
Each actor says what it computed with (`runtime`: the class, the dtype, actors.hardware.numerics).
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Self, TypedDict

import numpy as np

from actors.hardware import loaded_dtype, numerics
from benchmarks.boundary_types import ColumnBatch, JsonObject


class EncoderSettings(TypedDict, total=False):
    """A benchmark's `bertscore` options as its text_pair_encoder gives them, and where the driver put the model."""

    model: str  # a hub id, a local folder or a built-in spec of actors.built_in_models
    num_layers: int
    lang: str
    rescale_with_baseline: bool
    baseline_path: str | None  # absolute; None: bert-score's own baseline for `model`
    batch_size: int
    actors: int  # encoders side by side ...
    num_cpus: float  # ... each on these CPUs ...
    num_gpus: float  # ... and GPUs
    folder: str  # the driver's: the model resolved to a local folder (jobs.flow.text_pairs)


def baseline_file(encoder: EncoderSettings) -> str | None:
    """The rescale baseline (a TSV of LAYER,P,R,F) for the encoder; None without rescaling.

    FileNotFoundError naming the model when bert-score ships no baseline for it and none is configured.
    """
    if not encoder.get("rescale_with_baseline"):
        return None
    if encoder.get("baseline_path"):
        return str(encoder["baseline_path"])
    shipped = Path(str(resources.files("bert_score"))) / "rescale_baseline" / encoder["lang"] / f"{encoder['model']}.tsv"
    if not shipped.is_file():
        raise FileNotFoundError(f"bert-score has no {encoder['lang']} rescale baseline for {encoder['model']} "
                                f"({shipped}); set bertscore.baseline_path, or rescale_with_baseline: false")
    return str(shipped)


def encoder_label(encoder: EncoderSettings) -> str:
    """What is recorded beside the numbers, e.g. "microsoft/deberta-xlarge-mnli@40, rescaled"."""
    rescaled = "rescaled" if encoder.get("rescale_with_baseline") else "not rescaled"
    return f"{encoder['model']}@{encoder['num_layers']}, {rescaled}"


class _FolderName(str):
    """A local folder's path as bert-score reads it: its one test of the name, `"t5" in name`, answered by the
    folder's config, not by the letters of the path; everything else reads the path itself."""

    t5: bool

    def __new__(cls, path: str, t5: bool) -> Self:
        name = super().__new__(cls, path)
        name.t5 = t5
        return name

    def __contains__(self, part: object) -> bool:
        return self.t5 if part == "t5" else super().__contains__(part)

    def __getnewargs__(self) -> tuple[str, bool]:  # transformers deep-copies its arguments
        return str(self), self.t5


def scorer_name(model: str) -> str:
    """The model name to give bert-score's BERTScorer: `model` itself, unless it is a local folder whose path
    says "t5" where its config.json does not (or the other way round), then the path with that test fixed."""
    config = Path(model) / "config.json"
    if not config.is_file():
        return model  # a hub id: bert-score's rule is meant for those
    t5 = "t5" in str(json.loads(config.read_text()).get("model_type", ""))
    return model if t5 == ("t5" in model) else _FolderName(model, t5)


def runtime(model, device: str) -> JsonObject:
    """What an encoder computes with: its class, and its dtype with this process's numerics."""
    return {"model_class": type(model).__name__, **numerics(device, loaded_dtype(model))}


class BertScoreStage:
    """`map_batches` class: pair_id, candidate, reference -> pair_id, precision, recall, f1 (BERTScore, no idf)
    and runtime (the actor's `runtime` record as JSON, the same on each of its rows).

    A pair with an empty side gets NaN: bert-score 0.3.13 cannot encode an empty text under transformers 5
    (it calls a tokenizer method that no longer exists), and there is nothing to compare anyway.
    """

    def __init__(self, encoder: EncoderSettings):
        import torch
        from bert_score import BERTScorer

        baseline = baseline_file(encoder)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.scorer = BERTScorer(
            model_type=scorer_name(encoder["folder"]), num_layers=int(encoder["num_layers"]), lang=encoder["lang"],
            rescale_with_baseline=baseline is not None, baseline_path=baseline,
            batch_size=int(encoder["batch_size"]), device=device)
        # transformers 5 loads a checkpoint in its stored dtype ("auto"); bert-score under transformers 4, with
        # which the papers' numbers were made, loaded float32.
        self.scorer._model.to(torch.float32)
        self.runtime = json.dumps(runtime(self.scorer._model, device), sort_keys=True)

    def __call__(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        candidates = [str(c).strip() for c in batch["candidate"]]
        references = [str(r).strip() for r in batch["reference"]]
        scores = np.full((3, len(candidates)), np.nan)
        keep = [i for i, (c, r) in enumerate(zip(candidates, references)) if c and r]
        if keep:
            scored = self.scorer.score([candidates[i] for i in keep], [references[i] for i in keep])
            scores[:, keep] = np.stack([values.numpy() for values in scored])
        return {"pair_id": batch["pair_id"], "precision": scores[0], "recall": scores[1], "f1": scores[2],
                "runtime": np.full(len(candidates), self.runtime, dtype=object)}
