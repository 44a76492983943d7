"""Bytes of one rank's share of a ParamBreakdown, split as vLLM splits the model.

Tensor parallelism (vllm/model_executor/layers/linear.py, vocab_parallel_embedding.py):
  column-parallel linears split their outputs, row-parallel ones their inputs (a row-parallel
  bias stays whole); K/V projections keep max(1, kv_heads / tp) heads per rank, so heads are
  replicated when there are fewer KV heads than ranks; fused MoE experts split their
  intermediate dimension (expert parallelism is not modelled); embeddings and lm_head pad the
  vocabulary to a multiple of 64 (pad_vocab_size, DEFAULT_VOCAB_PADDING_SIZE) and split the
  rows; norms and routers are replicated; GDN / Mamba conv1d, A_log and dt_bias split by heads.
  Towers split like the decoder (mm_encoder_tp_mode "weights", vLLM's default).
Pipeline parallelism (vllm/distributed/utils.py get_pp_indices): layers split evenly, the
remainder going to the stages before the last; the first stage holds the input embeddings, the
last the final norm, lm_head (a copy of the embeddings when tied) and the MTP block; every stage
builds the towers. Load-time buffers (rotary caches; per-token buffers times max_num_batched_tokens)
are whole on every rank. The budget takes the most loaded rank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import ceil

from hkv.model_specs.param_breakdown import (
    EMBED_LAYER,
    HEAD_LAYER,
    DenseWeight,
    LinearWeight,
    ParamBreakdown,
    Part,
)
from hkv.planner.budget.quantization.base import QuantContext, QuantFormat

VOCAB_PADDING = 64


def pad_vocab(rows: int) -> int:
    return ceil(rows / VOCAB_PADDING) * VOCAB_PADDING


def pp_layer_ranges(num_layers: int, pp: int) -> list[range]:
    """vLLM's get_pp_indices without VLLM_PP_LAYER_PARTITION: the remainder goes to stages
    pp-2, pp-3, ... (never the last, which holds the final norm and lm_head)."""
    sizes = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        sizes[-i] += 1
    starts = [sum(sizes[:s]) for s in range(pp)]
    return [range(start, start + size) for start, size in zip(starts, sizes)]


def linear_shape(w: LinearWeight, tp: int) -> tuple[int, int]:
    """(in, out) of `w` on one tensor-parallel rank."""
    if w.role == "lm_head":  # vocab-parallel: padded rows split over ranks
        return w.in_features, pad_vocab(w.out_features) // tp
    if w.parallel == "row":
        return ceil(w.in_features / tp), w.out_features
    if w.parallel == "replicated":
        return w.in_features, w.out_features
    if w.kv_heads:
        head_dim = w.out_features // w.kv_heads
        return w.in_features, max(1, w.kv_heads // tp) * head_dim
    return w.in_features, ceil(w.out_features / tp)


def dense_elements(w: DenseWeight, tp: int) -> int:
    if w.parallel == "vocab":
        per_row = w.numel // w.rows
        return pad_vocab(w.rows) // tp * per_row
    if w.parallel == "sharded":
        return ceil(w.numel / tp)
    return w.numel


@dataclass(frozen=True)
class RankBytes:
    linear_bytes: int
    dense_bytes: int
    buffer_bytes: int

    @property
    def total(self) -> int:
        return self.linear_bytes + self.dense_bytes + self.buffer_bytes


def _on_stage(layer: int, part: Part, stage: int, ranges: list[range]) -> bool:
    if part in ("vision", "audio"):
        return True
    if layer == EMBED_LAYER:
        return stage == 0
    if layer == HEAD_LAYER:
        return stage == len(ranges) - 1
    return layer in ranges[stage]


def stage_bytes(
    breakdown: ParamBreakdown,
    fmt: QuantFormat,
    ctx: QuantContext,
    *,
    tp: int,
    pp: int,
    parts: Iterable[Part],
    stage: int,
    batched_tokens: int = 0,
) -> RankBytes:
    loaded = set(parts)
    ranges = pp_layer_ranges(breakdown.num_layers, pp)
    linear = sum(
        fmt.linear_bytes(w, *linear_shape(w, tp), ctx)
        for w in breakdown.linears
        if w.part in loaded and _on_stage(w.layer, w.part, stage, ranges)
    )
    dense = [w for w in breakdown.dense if w.part in loaded and _on_stage(w.layer, w.part, stage, ranges)]
    elements = sum(dense_elements(w, tp) for w in dense)
    tied = not any(w.role == "lm_head" for w in breakdown.linears)
    if tied and pp > 1 and stage == pp - 1:  # the last stage builds its own lm_head from the embeddings
        elements += sum(dense_elements(w, tp) for w in breakdown.dense if w.layer == EMBED_LAYER)
    per_token = sum(w.numel for w in breakdown.token_buffers)
    buffers = (sum(w.numel for w in breakdown.buffers) + per_token * batched_tokens) * ctx.dtype_bytes
    return RankBytes(linear, elements * ctx.dtype_bytes, buffers)


def most_loaded_rank(
    breakdown: ParamBreakdown,
    fmt: QuantFormat,
    ctx: QuantContext,
    *,
    tp: int,
    pp: int,
    parts: Iterable[Part],
    batched_tokens: int = 0,
) -> RankBytes:
    """The rank (pipeline stage; TP ranks are alike) holding the most bytes."""
    parts = tuple(parts)
    stages = [
        stage_bytes(breakdown, fmt, ctx, tp=tp, pp=pp, parts=parts, stage=s, batched_tokens=batched_tokens)
        for s in range(pp)
    ]
    return max(stages, key=lambda r: r.total)
