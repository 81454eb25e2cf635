"""BERTScore as a Ray Data stage: the bert-score package's scorer inside an actor, so the encoder loads once per
actor and (candidate, reference) pairs stream through it in batches.

The encoder settings are a benchmark's `bertscore` options: model (a hub id, a local folder or a built-in spec
of actors.model_store), num_layers, lang, rescale_with_baseline, baseline_path, batch_size, and `folder`, the
model as the driver resolved it (jobs.flow.text_pairs): actors load it and make nothing. Rescaling reads
bert-score's own baseline file for the model's hub id (the one the config names, not its local folder),
unless baseline_path names another.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TypedDict

import numpy as np

from benchmarks.boundary_types import ColumnBatch


class EncoderSettings(TypedDict, total=False):
    """A benchmark's `bertscore` options as its text_pair_encoder gives them, and where the driver put the model."""

    model: str  # a hub id, a local folder or a built-in spec of actors.model_store
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


class BertScoreStage:
    """`map_batches` class: pair_id, candidate, reference -> pair_id, precision, recall, f1 (BERTScore, no idf).

    A pair with an empty side gets NaN: bert-score 0.3.13 cannot encode an empty text under transformers 5
    (it calls a tokenizer method that no longer exists), and there is nothing to compare anyway.
    """

    def __init__(self, encoder: EncoderSettings):
        import torch
        from bert_score import BERTScorer

        baseline = baseline_file(encoder)
        self.scorer = BERTScorer(
            model_type=encoder["folder"], num_layers=int(encoder["num_layers"]), lang=encoder["lang"],
            rescale_with_baseline=baseline is not None, baseline_path=baseline,
            batch_size=int(encoder["batch_size"]), device="cuda" if torch.cuda.is_available() else "cpu")

    def __call__(self, batch: dict[str, np.ndarray]) -> ColumnBatch:
        candidates = [str(c).strip() for c in batch["candidate"]]
        references = [str(r).strip() for r in batch["reference"]]
        scores = np.full((3, len(candidates)), np.nan)
        keep = [i for i, (c, r) in enumerate(zip(candidates, references)) if c and r]
        if keep:
            scored = self.scorer.score([candidates[i] for i in keep], [references[i] for i in keep])
            scores[:, keep] = np.stack([values.numpy() for values in scored])
        return {"pair_id": batch["pair_id"], "precision": scores[0], "recall": scores[1], "f1": scores[2]}
