"""Score heads: how the transformers engine turns a discriminative reward model's outputs into its score.

Most reward models are stock sequence classifiers, scored by their raw logit (the `classifier` head, what vLLM
pooling returns too). Ten of RAG-RewardBench's 45 define their score otherwise in their model cards: a value
head under another name, a token appended before it is read, a two-layer score MLP, a logit of the language
model head, or a preference vector instead of a scalar. A model file names its head with `head:`; each head
here follows its card. Where the card's class is remote code (or only printed in the card), the head is our own
implementation of the card's description (jobs.engines.transformers.reward_nets), loading the published weights by name.

This module imports nothing heavy, so configs can check head names without torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from actors.templating import Messages, Templater
from benchmarks.row_types import TaskColumns

if TYPE_CHECKING:
    from torch import nn

HEADS: dict[str, type[Head]] = {}


def register(cls: type[Head]) -> type[Head]:
    HEADS[cls.name] = cls
    return cls


def make_head(name: str, path: str, load: Any, tokens: Templater) -> Head:
    """The head `name` over the weights at `path` (load: jobs.engines.transformers.reward_nets.Load), reading
    `tokens`' ids."""
    if name not in HEADS:
        raise ValueError(f"unknown score head {name!r}; heads: {', '.join(sorted(HEADS))}")
    return HEADS[name](path, load, tokens)


class Head:
    """One kind of score: loads its model, builds a conversation's ids, reads the answer columns from them."""

    name: ClassVar[str]
    columns: ClassVar[TaskColumns] = {"score": None}  # the answer's columns, as an unanswered row has them

    def __init__(self, path: str, load: Any, tokens: Templater):
        self.path, self.load, self.tokens = path, load, tokens

    def prompt(self, messages: Messages) -> tuple[list[int], Any]:
        """The ids the card scores and whatever `answer` needs besides them; the closed conversation by default."""
        return self.tokens.closed(messages), None

    def answer(self, ids: list[int], extra: Any) -> TaskColumns:
        raise NotImplementedError


def _no_auto_map_without_trust(path: str, load: Any, auto_class: str) -> None:
    """A model whose repository maps `auto_class` to its own code would silently get transformers' stock class
    (with a freshly initialised head) unless that code may run: refuse instead, naming the key."""
    from transformers import PretrainedConfig

    config, _ = PretrainedConfig.get_config_dict(path, revision=load.revision)
    if auto_class in config.get("auto_map", {}) and not load.trust_remote_code:
        raise ValueError(f"{path}: its repository defines its own {auto_class} ({config['auto_map'][auto_class]}); "
                         "set trust_remote_code: true in its model file to run that class, or name a `head:` "
                         "that implements its card")


@register
class ClassifierHead(Head):
    """A sequence classifier's first logit, raw (a reward model's score has no sigmoid). With trust_remote_code,
    the class the repository ships (URM-LLaMa-3.1-8B's card reads `logits[0][0]` of its own class)."""

    name = "classifier"

    def __init__(self, path: str, load: Any, tokens: Templater):
        super().__init__(path, load, tokens)
        from transformers import AutoModelForSequenceClassification

        _no_auto_map_without_trust(path, load, "AutoModelForSequenceClassification")
        self.model, info = AutoModelForSequenceClassification.from_pretrained(
            path, dtype=load.torch_dtype(), revision=load.revision, trust_remote_code=load.trust_remote_code,
            output_loading_info=True)
        if info["missing_keys"]:  # a head transformers had to invent scores nothing
            raise ValueError(f"{path}: the checkpoint has no {', '.join(sorted(info['missing_keys'])[:4])} for a "
                             "stock classifier; name the model's `head:` (jobs.engines.transformers.heads) or "
                             "trust its own code")
        self.model = load.placed(self.model)

    def answer(self, ids: list[int], extra: Any) -> TaskColumns:
        import torch

        with torch.no_grad():
            logits = self.model(torch.tensor([ids], device=self.load.device)).logits
        return {"score": float(logits.float().reshape(-1)[0])}


@register
class NemotronHead(Head):
    """Llama-3.1-Nemotron-70B-Reward-HF: a causal LM whose reward is the logit of vocabulary token 0 at the
    position after the closed conversation (the card reads the first generated step's score for token 0; NVIDIA
    copied the trained reward head into that row of the output embedding)."""

    name = "nemotron"
    token = 0

    def __init__(self, path: str, load: Any, tokens: Templater):
        super().__init__(path, load, tokens)
        from transformers import AutoModelForCausalLM

        self.model = load.placed(AutoModelForCausalLM.from_pretrained(
            path, dtype=load.torch_dtype(), revision=load.revision, trust_remote_code=load.trust_remote_code))

    def answer(self, ids: list[int], extra: Any) -> TaskColumns:
        import torch

        with torch.no_grad():
            logits = self.model(torch.tensor([ids], device=self.load.device), logits_to_keep=1).logits
        return {"score": float(logits[0, -1, self.token].float())}


class _ValueHead(Head):
    """A backbone and a bias-free Linear(hidden, 1) read at one position: the InstructGPT-style reward head,
    stored under a different name by each card."""

    prefix: ClassVar[str] = "model."  # where the checkpoint keeps the backbone
    module: ClassVar[str] = "v_head"  # what it calls the head
    internlm2: ClassVar[bool] = False

    def __init__(self, path: str, load: Any, tokens: Templater):
        super().__init__(path, load, tokens)
        from jobs.engines.transformers.reward_nets import load_reward_net

        self.net, self.config = load_reward_net(path, load, prefix=self.prefix, heads=self.modules,
                                                internlm2=self.internlm2)

    def modules(self, checkpoint: Any, config: Any) -> dict[str, nn.Module]:
        from torch import nn

        return {self.module: nn.Linear(config.hidden_size, 1, bias=False)}

    def position(self, ids: list[int]) -> int:
        return len(ids) - 1

    def answer(self, ids: list[int], extra: Any) -> TaskColumns:
        hidden = self.net.hidden(ids)[self.position(ids)]
        return {"score": float(self.net.apply(self.module, hidden).reshape(-1)[0])}


def _before_first(ids: list[int], pad: int | None) -> int:
    """The position a pad-aware pooling reads in an unpadded sequence: the token before the first `pad` id,
    wrapping to the last token when there is none (as the cards' indexing does)."""
    return ((ids.index(pad) if pad in ids else len(ids)) - 1) % len(ids)


@register
class EurusHead(_ValueHead):
    """Eurus-RM-7b: a MistralModel and `regression_head` read at the last token of "[INST] prompt [/INST]
    response" (the model file supplies that template; the card tokenizes it with its BOS)."""

    name = "eurus"
    module = "regression_head"


@register
class StarlingHead(_ValueHead):
    """Starling-RM-34B: Yi-34B-Chat's transformer without its LM head, under `transformer.`, and a scalar
    `v_head` read at the token before the first id 0 (the card's pad id), i.e. the last token of an unpadded
    conversation."""

    name = "starling"
    prefix = "transformer."
    pad = 0

    def position(self, ids: list[int]) -> int:
        return _before_first(ids, self.pad)


@register
class AtheneHead(_ValueHead):
    """Athene-RM-8B: the tokenizer's CLS token is appended to the templated conversation and the scalar `v_head`
    is read at its (last) occurrence."""

    name = "athene"

    def __init__(self, path: str, load: Any, tokens: Templater):
        if tokens.tokenizer.cls_token_id is None:
            raise ValueError(f"{path}: the athene head appends the tokenizer's CLS token, and this tokenizer has none")
        super().__init__(path, load, tokens)

    def prompt(self, messages: Messages) -> tuple[list[int], Any]:
        return self.tokens.closed(messages) + [self.tokens.tokenizer.cls_token_id], None

    def position(self, ids: list[int]) -> int:
        return len(ids) - 1 - ids[::-1].index(self.tokens.tokenizer.cls_token_id)


@register
class InternLM2Head(_ValueHead):
    """InternLM2-Reward (1.8B, 7B, 20B): the config's reward token is appended to the conversation (unless it
    already ends with it) and the scalar `v_head` is read there, as the card's get_score does."""

    name = "internlm2"
    internlm2 = True

    def __init__(self, path: str, load: Any, tokens: Templater):
        super().__init__(path, load, tokens)
        if getattr(self.config, "reward_token_id", None) is None:
            raise ValueError(f"{path}: the internlm2 head appends the config's reward_token_id, and it has none")

    def prompt(self, messages: Messages) -> tuple[list[int], Any]:
        ids, reward = self.tokens.closed(messages), self.config.reward_token_id
        return (ids if ids and ids[-1] == reward else ids + [reward]), None


@register
class InfOrmHead(_ValueHead):
    """INF-ORM-Llama3.1-70B: the card's score is a two-layer MLP (Linear, ReLU, Linear, with biases) on the
    hidden state the classifier pools: before the first pad id, else the last token."""

    name = "inf_orm"
    module = "score"

    def modules(self, checkpoint: Any, config: Any) -> dict[str, nn.Module]:
        from torch import nn

        size = config.hidden_size
        return {"score": nn.Sequential(nn.Linear(size, size), nn.ReLU(), nn.Linear(size, 1))}

    def position(self, ids: list[int]) -> int:
        return _before_first(ids, getattr(self.config, "pad_token_id", None))


@register
class GpmHead(Head):
    """GPM-Llama-3.1-8B (General Preference Model): a response is an L2-normalised preference vector (the
    `value_head` at the last token, which the card sets to EOS); the prompt's last token gives, through the
    `prompt_head` and a softmax, one weight per 2-d block. Two responses compare by a skew-symmetric product
    (benchmarks.rag_rewardbench.preference_margin, where a pair is scored), so there is no scalar per
    response: `score` stays empty and the vectors are the answer."""

    name = "gpm"
    columns: ClassVar[TaskColumns] = {"score": None, "preference": None, "preference_scale": None}

    def __init__(self, path: str, load: Any, tokens: Templater):
        super().__init__(path, load, tokens)
        from jobs.engines.transformers.reward_nets import load_reward_net

        if tokens.tokenizer.eos_token_id is None:
            raise ValueError(f"{path}: the gpm head ends the sequence with the tokenizer's EOS, and it has none")
        self.net, _ = load_reward_net(path, load, prefix="model.", heads=self.modules)

    @staticmethod
    def modules(checkpoint: Any, config: Any) -> dict[str, nn.Module]:
        from torch import nn

        shape = checkpoint.shape("value_head.weight")
        if not shape or shape[0] % 2:
            raise ValueError(f"{checkpoint.path}: value_head.weight should be (even dimension, hidden), not {shape}")
        out = {"value_head": nn.Linear(config.hidden_size, shape[0], bias=False)}
        if checkpoint.shape("prompt_head.weight"):
            out["prompt_head"] = nn.Linear(config.hidden_size, shape[0] // 2, bias=False)
        return out

    def prompt(self, messages: Messages) -> tuple[list[int], Any]:
        if len(messages) < 2 or messages[-1]["role"] != "assistant":
            raise ValueError("the gpm head scores a prompt and the assistant's response after it")
        ids = self.tokens.closed(messages)
        ids[-1] = self.tokens.tokenizer.eos_token_id
        return ids, len(self.tokens.closed(messages[:-1])) - 1

    def answer(self, ids: list[int], prompt_end: int) -> TaskColumns:
        import torch

        hidden = self.net.hidden(ids)
        vector = torch.nn.functional.normalize(self.net.apply("value_head", hidden[-1]), p=2, dim=-1)
        if "prompt_head" in self.net.heads:
            scale = self.net.apply("prompt_head", hidden[prompt_end]).softmax(-1)
        else:  # no prompt head: every block weighs 1
            scale = torch.ones(vector.shape[-1] // 2)
        return {"score": None, "preference": [float(v) for v in vector],
                "preference_scale": [float(s) for s in scale]}
