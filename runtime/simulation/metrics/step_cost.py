"""StepCost: the roofline estimate of how long one simulated step takes on one rank.

An estimate, not a measurement: a step is bound either by memory or by compute,

    memory_s  = (weight bytes read + KV bytes read) / HBM bandwidth
    compute_s = batched tokens x 2 x active matmul parameters per rank / dense BF16 throughput
    step_s    = overhead_s + max(memory_s, compute_s)

(the larger of the two, as if loads and math overlapped perfectly). Weights are read once per
step: all dense weights, and of a routed MoE's experts the expected share a batch of n tokens
touches, 1 - (1 - k/E)^n (independent uniform routing). KV bytes read come from the layout
(KvReadModel). Left out: attention FLOPs, communication between ranks, kernel launch and
scheduling overhead (`overhead_s`, 0 by default), the efficiency below peak that real kernels
reach. The bandwidth and throughput are spec-sheet peaks (planner/budget/gpu_table.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepCost:
    gpu: str  # the --gpu key the figures come from
    hbm_bytes_per_s: float
    dense_flops_per_s: float  # dense BF16 tensor throughput (spec sheet)
    dense_weight_bytes: int  # per rank: read whole every step
    expert_weight_bytes: int  # per rank: routed experts, read as the batch's tokens touch them
    num_experts: int  # routed experts per MoE layer; 0 for a dense model
    experts_per_token: int
    flops_per_token: float  # 2 x active matmul parameters per rank
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        assert self.hbm_bytes_per_s > 0 and self.dense_flops_per_s > 0, f"invalid {self}"
        assert self.num_experts == 0 or 0 < self.experts_per_token <= self.num_experts, f"invalid {self}"

    def weight_read_bytes(self, num_tokens: int) -> float:
        if self.num_experts == 0 or num_tokens <= 0:
            return float(self.dense_weight_bytes)
        untouched = (1.0 - self.experts_per_token / self.num_experts) ** num_tokens
        return self.dense_weight_bytes + self.expert_weight_bytes * (1.0 - untouched)

    def memory_s(self, num_tokens: int, kv_read_bytes: float) -> float:
        return (self.weight_read_bytes(num_tokens) + kv_read_bytes) / self.hbm_bytes_per_s

    def compute_s(self, num_tokens: int) -> float:
        return num_tokens * self.flops_per_token / self.dense_flops_per_s

    def step_s(self, num_tokens: int, kv_read_bytes: float) -> float:
        return self.overhead_s + max(self.memory_s(num_tokens, kv_read_bytes), self.compute_s(num_tokens))

    def describe(self) -> str:
        weights_gb = (self.dense_weight_bytes + self.expert_weight_bytes) / 1e9
        return (f"roofline estimate on {self.gpu}: max(weights {weights_gb:.1f} GB/rank + KV read at "
                f"{self.hbm_bytes_per_s / 1e12:.2f} TB/s, {self.flops_per_token / 1e9:.1f} GFLOP/token/rank at "
                f"{self.dense_flops_per_s / 1e12:.0f} TFLOPS dense BF16)"
                + (f" + {self.overhead_s * 1e3:g} ms" if self.overhead_s else "")
                + "; spec-sheet peaks, no attention FLOPs or communication")
