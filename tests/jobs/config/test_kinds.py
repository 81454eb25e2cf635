"""What each model kind means to the driver, declared once (jobs.config.schema KINDS)."""
from jobs.config import KINDS


def test_each_kind_declares_what_it_computes_and_where():
    traits = {name: (k.protocol, k.task, k.generates, k.pools, k.reads_logprobs) for name, k in KINDS.items()}
    assert traits == {
        "discriminative": ("discriminative", "classify", False, True, False),
        "generative": ("generative", "judge", True, False, False),
        "implicit": ("implicit", "logprobs", False, False, True),
        "api": ("generative", "judge", True, False, False),  # a generative judge; its engine says it is remote
        "retriever": ("retriever", None, False, False, False)}
