"""What each model kind means to the driver, declared once (jobs.config.schema KINDS)."""
from jobs.config import KINDS


def test_each_kind_declares_what_it_computes_and_where():
    traits = {name: (k.protocol, k.task, k.generates, k.pools, k.reads_logprobs, k.remote) for name, k in KINDS.items()}
    assert traits == {
        "discriminative": ("discriminative", "classify", False, True, False, False),
        "generative": ("generative", "judge", True, False, False, False),
        "implicit": ("implicit", "logprobs", False, False, True, False),
        "api": ("generative", "judge", True, False, False, True),  # a generative judge, remote: priced in dollars
        "retriever": ("retriever", None, False, False, False, False)}
