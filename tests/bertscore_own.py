"""bert-score's own BERTScore, the reference the encoder stage (actors.bertscore) is held to.

bert-score picks T5EncoderModel for any model name with "t5" in it, and a folder's absolute path is the
machine's (a clone's, a virtualenv's), so the reference is given a name of its own: a link, named relatively,
beside the test's files. Nothing of ours runs on the way.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

LINK = "bertscore-encoder"  # no "t5" in it


def bertscore_own(folder: str, candidates: list[str], references: list[str], num_layers: int,
                  here: Path) -> tuple[list[float], list[float]]:
    """(precision, recall) from bert-score's BERTScorer, unrescaled, for the model in `folder`; `here`: an empty
    folder of the test's (tmp_path), where the link is made."""
    from bert_score import BERTScorer

    here.mkdir(parents=True, exist_ok=True)
    link = here / LINK
    link.symlink_to(Path(folder).resolve(), target_is_directory=True)
    with contextlib.chdir(here):  # loaded here, once; scoring reads no file
        scorer = BERTScorer(model_type=LINK, num_layers=num_layers, lang="en")
    assert type(scorer._model).__name__ != "T5EncoderModel", folder
    precision, recall, _ = scorer.score(candidates, references)
    return precision.tolist(), recall.tolist()
