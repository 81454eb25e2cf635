"""The requests each reward-model kind needs for one pair (docs/protocols.md 1), with the paper's Table 6
prompt."""
from __future__ import annotations

from benchmarks.row_types import Item, Request

KINDS = ("discriminative", "generative", "implicit")

# Table 6 of the paper, verbatim (including its "Be as goal as possible").
JUDGE_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants "
    "to the user question displayed below. You should choose the assistant that follows the user's "
    "instructions and answers the user's question better. Begin your evaluation by comparing the two "
    "responses. Avoid any position biases and ensure that the order in which the responses were presented "
    "does not influence your decision. Do not allow the length of the responses to influence your evaluation. "
    "Do not favor certain names of the assistants. Be as goal as possible. Your final prediction should "
    'strictly follow this format: "Choose 1" if Response 1 is better, "Choose 2" if Response 2 is better.'
)
JUDGE_USER = (
    'Prompt: "{prompt}" Response 1: "{response1}" Response 2: "{response2}" Please respond with only '
    '"Choose 1" or "Choose 2", do not include any reasons and analyzes in the response.'
)
# The log-prob verdict reads the next token after the judge has been made to write this.
VERDICT_PREFILL = "Choose "
VERDICT_TOKENS = ("1", "2")
# Generative orders: which position holds the chosen response.
ORDERS = {"cr": 1, "rc": 2}


def expand(item: Item, kind: str) -> list[Request]:
    """The requests one pair needs, adjacent so they share a batch and the engine's prefix cache."""
    if kind == "generative":
        variants = []
        for order, chosen_position in ORDERS.items():
            first, second = (item["chosen"], item["reject"]) if chosen_position == 1 else (item["reject"], item["chosen"])
            user = JUDGE_USER.format(prompt=item["prompt"], response1=first, response2=second)
            variants.append((order, [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]))
    elif kind in ("discriminative", "implicit"):
        # A closed user/assistant conversation: the scorer templates it without opening a new turn.
        variants = [
            (side, [{"role": "user", "content": item["prompt"]}, {"role": "assistant", "content": item[side]}])
            for side in ("chosen", "reject")
        ]
    else:
        raise ValueError(f"unknown reward-model kind {kind!r}; expected one of {KINDS}")
    # Judges also get their verdict read from next-token log-probs after the prefilled "Choose ".
    extra = {"prefill": VERDICT_PREFILL, "candidates": list(VERDICT_TOKENS)} if kind == "generative" else {}
    return [
        {"request_id": f"{item['item_id']}#{variant}", "item_id": item["item_id"], "subset": item["subset"],
         "variant": variant, "messages": messages, **extra}
        for variant, messages in variants
    ]
