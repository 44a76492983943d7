"""Weight bytes of one rank, as vLLM loads them ("Model loading took X GiB").

Sources, first that applies:
  given   cfg.weights_bytes.
  header  the checkpoint's exact bytes from safetensors headers (ModelSpec.checkpoint_bytes), less
          the parts vLLM does not load (MTP layers unless speculative decoding drafts with them;
          vision/audio towers with cfg.language_model_only), scaled to one rank by the share the
          config computation gives that rank (TP/PP split, backend padding). Not used when vLLM
          quantizes at load (--quantization fp8 / bitsandbytes on an unquantized checkpoint).
  config  the parameter breakdown (model_specs/param_breakdown*.py) in the quantization format's
          bytes (quantization/), split over ranks as vLLM splits it (weight_shards.py), plus the
          buffers vLLM allocates while loading (rotary cos/sin caches; per-token buffers such as
          Gemma 4's per-layer inputs, sized by max_num_batched_tokens).
  config  (no breakdown, or a quant_method hkv does not model) num_params x dtype bytes / ranks,
          with a wide band.
Bands: header exact at TP = PP = 1, else +-1 % (the per-rank share is computed); config +-2 %:
the residuals against logged "Model loading took" figures (tests/planner/budget/
test_weights_vs_logs.py) stay within 0.6 % for every record with a config at hand.
"""

from __future__ import annotations

from math import ceil

from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.param_breakdown import Part
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.budget.quantization.base import QuantContext
from hkv.planner.budget.quantization.dispatch import quant_format
from hkv.planner.budget.weight_shards import most_loaded_rank
from hkv.planner.plan_config import PlanConfig

CONFIG_BAND = 0.02
SCALED_HEADER_BAND = 0.01
FALLBACK_BAND_LOW, FALLBACK_BAND_HIGH = 0.6, 0.05  # unknown quantization: params x dtype over-states it


def loaded_parts(model: ModelSpec, cfg: PlanConfig) -> tuple[Part, ...]:
    """The checkpoint parts vLLM loads for this plan."""
    parts: list[Part] = ["language_model"]
    if not cfg.language_model_only:
        parts += ["vision", "audio"]
    if cfg.speculative_tokens and cfg.draft_layers is None:  # MTP drafting (EAGLE brings its own drafter)
        parts.append("mtp")
    return tuple(parts)


def _compute_capability(cfg: PlanConfig) -> tuple[int, int] | None:
    return (
        get_gpu(cfg.gpu).compute_capability if cfg.gpu is not None and cfg.gpu_memory_bytes is None else None
    )


def _batched_tokens(model: ModelSpec, cfg: PlanConfig) -> int:
    """max_num_batched_tokens, resolved only for models with per-token load-time buffers."""
    if model.param_breakdown is None or not model.param_breakdown.token_buffers:
        return 0
    # memory_budget imports this module: resolve the engine default lazily.
    from hkv.planner.budget.memory_budget import resolve_max_num_batched_tokens

    return resolve_max_num_batched_tokens(cfg)


def weights_term(model: ModelSpec, cfg: PlanConfig) -> BudgetTerm:
    """The "weights" term of one rank (the most loaded pipeline stage)."""
    if cfg.weights_bytes is not None:
        return BudgetTerm.exact("weights", cfg.weights_bytes, "given", "weights per rank given by hand")
    weight_dtype = cfg.weight_dtype_bytes(model.dtype_bytes)
    fmt = quant_format(model.quantization_config, cfg.quantization, model.model_type)
    if model.param_breakdown is None or fmt is None:
        return _fallback(model, cfg, weight_dtype, fmt is None)
    present = model.param_breakdown.parts_present()
    in_header = set(model.checkpoint_bytes.bytes_by_part) if model.checkpoint_bytes is not None else set()
    parts = tuple(p for p in loaded_parts(model, cfg) if p in present or p in in_header)
    ctx = QuantContext(weight_dtype, _compute_capability(cfg))
    tokens = _batched_tokens(model, cfg)
    rank = most_loaded_rank(
        model.param_breakdown, fmt, ctx, tp=cfg.tp, pp=cfg.pp, parts=parts, batched_tokens=tokens
    )
    ranks = f"TP {cfg.tp} x PP {cfg.pp}"
    quantized_at_load = not model.quantization_config and cfg.quantization is not None  # headers hold bf16
    if model.checkpoint_bytes is not None and not quantized_at_load:
        header = sum(model.checkpoint_bytes.part_bytes(p) for p in parts)
        # The share of the unpadded, unsharded model this rank holds, measured in the format's bytes.
        whole = most_loaded_rank(
            model.param_breakdown, fmt, QuantContext(weight_dtype, None), tp=1, pp=1, parts=parts
        )
        share = (rank.linear_bytes + rank.dense_bytes) / max(1, whole.linear_bytes + whole.dense_bytes)
        per_rank = ceil(header * share) + rank.buffer_bytes
        note = f"safetensors headers ({', '.join(parts)}) x rank share {share:.4f} ({ranks}) + rotary caches"
        if share == 1:
            return BudgetTerm.exact("weights", per_rank, "header", note)
        return BudgetTerm.banded("weights", per_rank, "header", SCALED_HEADER_BAND, SCALED_HEADER_BAND, note)
    exact = "" if model.param_breakdown.exact else " (family without a breakdown: Llama-shaped stand-in)"
    stored = "unquantized" if fmt.method == "none" else fmt.method
    note = f"config: {', '.join(parts)} {stored}, {ranks}, most loaded rank{exact}"
    band = CONFIG_BAND if model.param_breakdown.exact else 2 * CONFIG_BAND
    return BudgetTerm.banded("weights", rank.total, "config", band, band, note)


def _fallback(model: ModelSpec, cfg: PlanConfig, weight_dtype: int, unknown_method: bool) -> BudgetTerm:
    ranks = cfg.tp * cfg.pp
    if model.weights_bytes_exact is not None:
        return BudgetTerm.banded(
            "weights",
            ceil(model.weights_bytes_exact / ranks),
            "header",
            0.05,
            0.05,
            f"safetensors headers / {ranks} ranks",
        )
    per_rank = ceil(model.num_params * weight_dtype / ranks)
    if unknown_method:
        method = (model.quantization_config or {}).get("quant_method")
        return BudgetTerm.banded(
            "weights",
            per_rank,
            "config",
            FALLBACK_BAND_LOW,
            FALLBACK_BAND_HIGH,
            f"quant_method {method!r} not modelled: {model.num_params:,} parameters x "
            f"{weight_dtype} bytes / {ranks} ranks (an upper bound)",
        )
    return BudgetTerm.banded(
        "weights",
        per_rank,
        "config",
        2 * CONFIG_BAND,
        2 * CONFIG_BAND,
        f"{model.num_params:,} parameters x {weight_dtype} bytes / {ranks} ranks",
    )
