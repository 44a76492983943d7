"""Where a checkpoint's parameters are, as vLLM loads and shards them: the breakdown's data types.

A `ParamBreakdown` lists every weight of the model in two kinds:
  - `LinearWeight`: a matrix (in_features -> out_features) that quantization formats may store packed
    (attention projections, MLPs, routed and shared experts, Mamba / GDN in and out projections,
    vision-tower linears); `count` matrices of that shape (the experts of one layer);
  - `DenseWeight`: everything that stays in the model dtype whatever the format (embeddings,
    norms, routers, conv1d, A_log / D / dt_bias, sinks, patch embeddings).
Each weight carries the part of the checkpoint it belongs to (`language_model`, `vision`,
`audio`, `mtp`: checkpoint_parts.py's names), its checkpoint module name (quantization skip lists
match on it), the layer it sits in (for pipeline parallelism) and how vLLM splits it over
tensor-parallel ranks. `buffers` are tensors vLLM allocates at load that are not parameters (rotary
cos/sin caches); `token_buffers` are such tensors sized per scheduled token (numel per token, times
max_num_batched_tokens: Gemma 4's per-layer-input buffer); neither is counted in `num_params`, nor
are weights marked `allocated_only` (vLLM builds them though the checkpoint has no such tensor:
Gemma 4's K/V slots of the fused QKV on KV-shared layers). Pure data: the builders are
param_breakdown_build.py (decoders), param_breakdown_towers.py (vision) and
param_breakdown_audio.py (audio).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Part = Literal["language_model", "vision", "audio", "mtp"]  # the names of checkpoint_parts.PARTS
PARTS: tuple[Part, ...] = ("language_model", "vision", "audio", "mtp")
# column: the output features are split over TP ranks; row: the input features are; replicated:
# every rank holds it all. kv_heads > 0 marks a K or V projection whose heads vLLM replicates when
# there are fewer KV heads than ranks.
LinearParallel = Literal["column", "row", "replicated"]
# vocab: split over ranks after padding the vocabulary (vLLM's pad_vocab_size); sharded: divided
# evenly over ranks (GDN/Mamba conv1d, A_log, dt_bias); replicated: whole on every rank.
DenseParallel = Literal["vocab", "sharded", "replicated"]
# The role of a linear in a MoE block (formats that quantize only experts, and backend padding of the
# expert dimensions, need it): w13 = fused gate|up (in hidden, out 2 x intermediate), w2 = down;
# lm_head: the untied output projection (vocab-parallel; only some formats quantize it).
LinearRole = Literal["linear", "experts_w13", "experts_w2", "lm_head"]

EMBED_LAYER = -1  # layer index of the input embeddings (first pipeline stage)
HEAD_LAYER = 1 << 30  # layer index of the final norm and lm_head (last pipeline stage)


@dataclass(frozen=True)
class LinearWeight:
    module: str  # checkpoint name without ".weight", e.g. "model.layers.3.self_attn.q_proj"
    in_features: int
    out_features: int
    part: Part = "language_model"
    layer: int = 0  # decoder layer index (towers: 0; they sit with the first stage)
    parallel: LinearParallel = "column"
    count: int = 1  # matrices of this shape (routed experts of one layer)
    bias: bool = False
    kv_heads: int = 0  # > 0: a K or V projection of this many heads (out = kv_heads x head_dim)
    role: LinearRole = "linear"
    allocated_only: bool = False  # vLLM allocates it, the checkpoint has no such tensor

    @property
    def num_params(self) -> int:
        if self.allocated_only:
            return 0
        return self.count * (self.in_features * self.out_features + (self.out_features if self.bias else 0))


@dataclass(frozen=True)
class DenseWeight:
    module: str
    numel: int
    part: Part = "language_model"
    layer: int = 0
    parallel: DenseParallel = "replicated"
    rows: int = 0  # vocab-parallel weights: the number of rows (vocabulary entries) of `numel`
    allocated_only: bool = False  # vLLM allocates it, the checkpoint has no such tensor


@dataclass(frozen=True)
class ParamBreakdown:
    linears: tuple[LinearWeight, ...]
    dense: tuple[DenseWeight, ...]
    buffers: tuple[DenseWeight, ...] = ()  # allocated at load, not parameters (rotary caches)
    token_buffers: tuple[DenseWeight, ...] = ()  # allocated at load, numel per max_num_batched_tokens
    num_layers: int = 0  # decoder layers of the language model (pipeline stages split these)
    exact: bool = True  # False: the family has no builder; the linears are a Llama-shaped stand-in

    def num_params(self, parts: tuple[Part, ...] = PARTS) -> int:
        return sum(w.num_params for w in self.linears if w.part in parts) + sum(
            w.numel for w in self.dense if w.part in parts and not w.allocated_only
        )

    def parts_present(self) -> tuple[Part, ...]:
        seen = {w.part for w in self.linears} | {w.part for w in self.dense}
        return tuple(p for p in PARTS if p in seen)
