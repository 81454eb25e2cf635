"""The transformers engine in padded batches, the way most reward-model scripts run: `ragjudge validate`'s
reference path for models our transformers engine scores one sequence at a time.

Our engines never pad, so a model whose pooling or tokenizer mishandles padding scores correctly here and
wrongly in its authors' batched scripts (RewardBench's scores moved with the batch size: reward-bench #137).
This engine pads each batch on the tokenizer's own `padding_side` with its pad token (EOS where it has none),
passes the attention mask and positions, and reads each sequence's outputs where its tokens are; a stock
classifier pools where transformers pools (the last token that is not the config's `pad_token_id`). Where its
scores differ from the one-at-a-time engine's, padding changes what the model answers.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from actors.templating import Messages, overflow
from benchmarks.row_types import PromptAnswer, TaskColumns
from jobs.engines.transformers.model import TransformersEngine


class PaddedBatchEngine(TransformersEngine):
    """TransformersEngine whose forward passes run `batch_size` sequences at a time, padded."""

    def __init__(self, path: str, *, batch_size: int, **kwargs: Any):
        super().__init__(path, **kwargs)
        if self.task == "classify" and self.head.name != "classifier":
            raise ValueError(f"head {self.head.name!r} reads its score from one unpadded sequence; only a stock "
                             "classifier or a causal LM runs in padded batches")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self.batch_size = batch_size
        self._batch: list[list[int]] = []
        self._outputs: dict[tuple[int, ...], Any] | None = None

    def _rows(self, conversations: Sequence[Messages], task: str, prompt: Callable, answer: Callable,
              empty: TaskColumns) -> list[PromptAnswer]:
        if task == "classify":  # the pooled logit of the padded batch, not the head's own unpadded forward
            answer = self._pooled
        rows = []
        for start in range(0, len(conversations), self.batch_size):
            chunk = conversations[start:start + self.batch_size]
            fitting = (self._fitting_ids(prompt, conversation, task) for conversation in chunk)
            self._batch, self._outputs = [ids for ids in fitting if ids], None
            rows += super()._rows(chunk, task, prompt, answer, empty)
        return rows

    def _fitting_ids(self, prompt: Callable, conversation: Messages, task: str) -> list[int] | None:
        """The conversation's ids when the engine will score it (it templates and fits), else None."""
        try:
            ids = prompt(conversation)[0]
        except ValueError:
            return None
        return None if overflow(len(ids), self.max_model_len, generates=task == "generate") else ids

    def _pooled(self, ids: list[int], extra: Any) -> TaskColumns:
        return {"score": float(self._forward()[tuple(ids)][0])}

    def _logits(self, ids: list[int], keep: int = 0):
        logits = self._forward()[tuple(ids)]
        return logits[-keep:] if keep else logits

    def _forward(self) -> dict[tuple[int, ...], Any]:
        """The current batch's outputs by sequence, computed once, when the first row asks: a classifier's
        logits row; a causal LM's logits at the sequence's own positions."""
        if self._outputs is not None:
            return self._outputs
        import torch

        tokenizer = self.templater.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad is None:
            raise ValueError("the tokenizer has neither a pad nor an EOS token to pad a batch with")
        width, left = max(map(len, self._batch)), tokenizer.padding_side == "left"
        ids, mask = [], []
        for seq in self._batch:
            fill = width - len(seq)
            ids.append([pad] * fill + seq if left else seq + [pad] * fill)
            mask.append([0] * fill + [1] * len(seq) if left else [1] * len(seq) + [0] * fill)
        input_ids, attention = torch.tensor(ids, device=self.device), torch.tensor(mask, device=self.device)
        kwargs = {"attention_mask": attention}
        if "position_ids" in self._forward_args:  # each sequence counts its positions from its first token
            kwargs["position_ids"] = (attention.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = self.model(input_ids, **kwargs).logits.float()
        self._outputs = {}
        for row, seq in zip(logits, self._batch):
            if self.task == "classify":
                self._outputs[tuple(seq)] = row.reshape(-1)
            else:
                self._outputs[tuple(seq)] = row[width - len(seq):] if left else row[:len(seq)]
        return self._outputs
