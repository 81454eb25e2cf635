"""What one GPU does with the 45-RM sweep's work, for the inputs of `ragjudge plan` (jobs/plan/estimate.py
GpuSpec): the share of peak bf16 FLOP/s a prefill reaches, and how fast weights reach the GPU.

    python perf/gpu_prefill.py OUT.json [--peak-tflops 989]

Plain PyTorch, no vLLM (its wheels did not fit on the H100 machine it ran on): decoder layers of the shapes of
the sweep's model sizes (Llama-3.x 8B and 70B, Qwen2.5 1.5B), random bf16 weights, run as a reward model's
scoring run is, a prefill of whole prompts: RAG-RewardBench's Table 4 mean of 2,242 tokens, 4 prompts a batch
(vLLM's default 8,192-token prefill budget, rounded up). A few layers are timed and multiplied by the model's
layer count (the layers are identical); the heads are timed apart: a scalar head (discriminative RM) and the
full vocabulary's log-softmax (implicit RM). Rotary embeddings are left out: elementwise work, under 1% of a
layer.

The efficiency is measured the way the plan counts: 2 x parameters (embeddings included, as `params_b` in
conf/models) x tokens over the time, against the GPU's dense bf16 peak (989 TFLOP/s for an H100 SXM; the H200
has the same compute). vLLM's fused kernels should do at least as well as these plain layers.

Weight loading: a pinned and an unpinned 4 GiB host tensor copied to the GPU, and an 8 GiB file read from this
machine's local disk after its pages were dropped from the page cache (posix_fadvise DONTNEED).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

PROMPT_TOKENS = 2242  # RAG-RewardBench Table 4: mean prompt + response tokens of a pair's side
BATCH = 4
GIB = 1 << 30


@dataclass
class Shape:
    name: str
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    layers: int
    vocab: int

    @property
    def params(self) -> int:
        head_dim = self.hidden // self.heads
        attention = 2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads * head_dim
        mlp = 3 * self.hidden * self.intermediate
        return self.layers * (attention + mlp + 2 * self.hidden) + 2 * self.vocab * self.hidden


SHAPES = [Shape("qwen2.5-1.5b", 1536, 8960, 12, 2, 28, 151936),
          Shape("llama-3.1-8b", 4096, 14336, 32, 8, 32, 128256),
          Shape("llama-3.1-70b", 8192, 28672, 64, 8, 80, 128256)]


class RMSNorm(nn.Module):
    """Llama's RMSNorm (torch's own arrived in 2.4; the GPU machine's torch may be older)."""

    def __init__(self, size: int, eps: float = 1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(size)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps).to(x.dtype)


class Layer(nn.Module):
    """A Llama decoder layer: RMSNorm, grouped-query causal attention, SwiGLU MLP (no rotary embeddings)."""

    def __init__(self, s: Shape):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = s.heads, s.kv_heads, s.hidden // s.heads
        kv = s.kv_heads * self.head_dim
        self.norm1, self.norm2 = RMSNorm(s.hidden), RMSNorm(s.hidden)
        self.q, self.k, self.v = (nn.Linear(s.hidden, n, bias=False) for n in (s.hidden, kv, kv))
        self.o = nn.Linear(s.hidden, s.hidden, bias=False)
        self.gate, self.up = (nn.Linear(s.hidden, s.intermediate, bias=False) for _ in range(2))
        self.down = nn.Linear(s.intermediate, s.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, h = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k, v = (p(y).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2) for p in (self.k, self.v))
        if self.kv_heads != self.heads:  # grouped-query: each key/value head serves heads / kv_heads queries
            k, v = (t.repeat_interleave(self.heads // self.kv_heads, dim=1) for t in (k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attended.transpose(1, 2).reshape(b, n, h))
        y = self.norm2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def timed(fn, repeats: int = 10) -> float:
    """Median seconds of fn() on the GPU, after three warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return sorted(times)[len(times) // 2]


@torch.inference_mode()
def layer_seconds(s: Shape, timed_layers: int) -> float:
    with torch.device("cuda"):  # made on the GPU: a 70B layer's weights would take a minute to make on the CPU
        layers = nn.Sequential(*(Layer(s) for _ in range(timed_layers))).to(torch.bfloat16)
    x = torch.randn(BATCH, PROMPT_TOKENS, s.hidden, device="cuda", dtype=torch.bfloat16)
    return timed(lambda: layers(x)) / timed_layers


@torch.inference_mode()
def head_seconds(s: Shape) -> tuple[float, float]:
    """(a scalar head, each token's log-probability over the vocabulary) for a batch's last hidden states."""
    hidden = torch.randn(BATCH * PROMPT_TOKENS, s.hidden, device="cuda", dtype=torch.bfloat16)
    lm_head = torch.randn(s.vocab, s.hidden, device="cuda", dtype=torch.bfloat16) / s.hidden ** 0.5
    score = torch.randn(1, s.hidden, device="cuda", dtype=torch.bfloat16)
    # a vocabulary-wide log-softmax in chunks of tokens, as vLLM computes prompt log-probs
    logprob_s = timed(lambda: [torch.log_softmax((c @ lm_head.T).float(), -1) for c in hidden.split(2048)])
    return timed(lambda: hidden @ score.T), logprob_s


def prefill(s: Shape, peak_tflops: float, timed_layers: int) -> dict:
    layer_s = layer_seconds(s, timed_layers)
    torch.cuda.empty_cache()
    score_s, logprob_s = head_seconds(s)
    torch.cuda.empty_cache()
    tokens = BATCH * PROMPT_TOKENS
    out = {"model": s.name, "params_b": round(s.params / 1e9, 2), "tokens_per_batch": tokens,
           "layer_ms": round(layer_s * 1000, 3)}
    for kind, head_s in (("discriminative", score_s), ("implicit", logprob_s)):
        seconds = s.layers * layer_s + head_s
        achieved = 2 * s.params * tokens / seconds / 1e12
        out[kind] = {"batch_s": round(seconds, 4), "tokens_per_s": round(tokens / seconds),
                     "plan_tflops": round(achieved, 1), "efficiency": round(achieved / peak_tflops, 3)}
    return out


def host_to_gpu() -> dict:
    rates = {}
    for pinned in (True, False):
        host = torch.empty(4 * GIB, dtype=torch.uint8, pin_memory=pinned)
        host.fill_(1)
        seconds = timed(lambda h=host: h.to("cuda", non_blocking=False), repeats=3)
        rates["pinned_gb_per_s" if pinned else "pageable_gb_per_s"] = round(4 * GIB / seconds / 1e9, 1)
        del host
        torch.cuda.empty_cache()
    return rates


def disk_read(size: int = 8 * GIB, chunk: int = 64 << 20) -> dict:
    """Read rate of a file on this machine's disk with its pages out of the page cache."""
    block = os.urandom(chunk)
    with tempfile.NamedTemporaryFile(dir=os.environ.get("TMPDIR", "/tmp")) as f:
        for _ in range(size // chunk):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        start = time.perf_counter()
        with open(f.name, "rb", buffering=0) as r:
            while r.read(chunk):
                pass
        seconds = time.perf_counter() - start
    return {"file_gib": size / GIB, "read_gb_per_s": round(size / seconds / 1e9, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="the GPU's dense bf16 peak")
    parser.add_argument("--timed-layers", type=int, default=4)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("perf/gpu_prefill.py measures a GPU; this machine has none")
    torch.backends.cuda.matmul.allow_tf32 = False
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "peak_tflops": args.peak_tflops,
              "prompt_tokens": PROMPT_TOKENS, "batch": BATCH,
              "prefill": [prefill(s, args.peak_tflops, args.timed_layers) for s in SHAPES],
              "host_to_gpu": host_to_gpu(), "disk": disk_read()}
    print(json.dumps(result, indent=2))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
