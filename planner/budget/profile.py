"""vLLM's memory profile of one rank, release by release: what it takes besides weights and KV.

    activation = dummy pixel values + max(vision tower's live set,
                 kept hidden states + encoder outputs + max(forward's live set, dummy sampler))
                 (profile_activation.py, sampler_peak.py, encoder_profile.py, vision_profile.py)
    cudagraph  = the graph memory estimate, where the release subtracts it and graphs are
                 captured (cudagraph_estimate.py)
    non_torch  = CUDA context, cuBLAS, NCCL / custom all-reduce, linear-attention kernels, and on
                 unified memory the pinned host buffers (non_torch.py, vision_profile.py)

Each term is an estimate whose band holds the values real start-up logs printed
(shared/data/vllm_memory_logs; residuals per record in tests/planner/budget/test_profile_logged.py).
The release switches live in VllmRules (sampler_sorts_vocab < 0.17, flashinfer_sampler_default
< 0.11.1 with PlanConfig.flashinfer_installed, v2_model_runner,
profile_consumed_accounting >= 0.27, subtracts_cudagraph_estimate >= 0.20, v2_sampler_warmup_pass >= 0.33).
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil

from hkv.model_specs.cache_spec import CacheRole
from hkv.model_specs.indexer_cache import MINIMAX_M3_FAMILIES
from hkv.model_specs.layer_desc import AttentionDesc, RecurrentDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.budget_term import Band, BudgetTerm
from hkv.planner.budget.cudagraph_estimate import CudagraphEstimate, cudagraph_estimate
from hkv.planner.budget.encoder_profile import (
    encoder_budget_tokens,
    encoder_outputs_bytes,
    is_multimodal,
    tokens_per_item,
)
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.budget.indexer_workspace import indexer_workspace_bytes
from hkv.planner.budget.mixer_liveness import gdn_held_elements
from hkv.planner.budget.model_runner import graph_estimate_applies, uses_v2_runner
from hkv.planner.budget.non_torch import LINEAR_ATTENTION_VARIANTS, NonTorchSetup
from hkv.planner.budget.profile_activation import ForwardShape, activation_peak
from hkv.planner.budget.sampler_peak import (
    SamplerPath,
    flashinfer_sampler_supported,
    sampler_paths,
    sampler_profile,
)
from hkv.planner.budget.vision_profile import VisionProfile, pinned_host_bytes, vision_profile
from hkv.planner.plan_config import DEFAULT_MAX_NUM_SEQS, PlanConfig


MIB = 2**20
# The activation and graph terms are point estimates: what they miss on real logs lands in the
# fitted residual band the non-torch term carries (fitted/fit.py, scored out of sample). The one
# spread kept here is structural: the sampler paths an undescribed install may take.
POINT = Band(0.0, 0.0)


def has_state(model: ModelSpec) -> bool:
    return any(isinstance(layer, RecurrentDesc) for layer in model.cache_layers)


def runs_on_v2(model: ModelSpec, cfg: PlanConfig) -> bool:
    return uses_v2_runner(cfg.vllm_rules(), moe=model.num_experts_per_tok > 0, has_state=has_state(model))


def has_linear_attention(model: ModelSpec) -> bool:
    return any(isinstance(layer, RecurrentDesc) and layer.variant in LINEAR_ATTENTION_VARIANTS
               for layer in model.cache_layers)


def activation_dtype_bytes(model: ModelSpec, cfg: PlanConfig) -> int:
    """The dtype activations run in: --dtype, else vLLM's auto on the plan's platform."""
    return cfg.weight_dtype_bytes(model.dtype_bytes)


def forward_shape(model: ModelSpec, cfg: PlanConfig) -> ForwardShape:
    held = 0 if cfg.enforce_eager else gdn_held_elements(model, cfg.tp)
    return ForwardShape(model.hidden_size, model.intermediate_size, activation_dtype_bytes(model, cfg), cfg.tp,
                        num_experts_per_tok=model.num_experts_per_tok, moe_intermediate_size=model.moe_intermediate_size,
                        mixer_held_elements=held)


def model_vision_profile(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> VisionProfile | None:
    """The profile run's dummy images through the model's vision tower; None when it has no described
    tower, the family's item size is unknown, or the towers are not loaded (language_model_only)."""
    if cfg.language_model_only or not is_multimodal(model.architectures):
        return None
    return vision_profile(model.vision_tower, encoder_budget_tokens(model.family, max_num_batched_tokens),
                          tokens_per_item(model.family), activation_dtype_bytes(model, cfg), cfg.tp)


def flashinfer_sampler_device(cfg: PlanConfig) -> bool:
    """Whether vLLM's FlashInfer sampler runs on the plan's device: a CUDA GPU it supports; without a
    GPU named a CUDA data-center GPU is assumed; never on vLLM's CPU platform."""
    if cfg.cpu_engine:
        return False
    return cfg.gpu is None or flashinfer_sampler_supported(get_gpu(cfg.gpu).compute_capability)


def sampler_paths_for(model: ModelSpec, cfg: PlanConfig) -> tuple[SamplerPath, ...]:
    """The dummy sampler's path(s) for this release and install, the point estimate's first."""
    rules = cfg.vllm_rules()
    return sampler_paths(sorts_vocab=rules.sampler_sorts_vocab, flashinfer_by_default=rules.flashinfer_sampler_default,
                         flashinfer_installed=cfg.flashinfer_installed, v2_runner=runs_on_v2(model, cfg),
                         v2_flashinfer_warmup=rules.v2_sampler_warmup_pass and flashinfer_sampler_device(cfg),
                         v2_copies_logits=rules.v2_sampler_copies_logits)


def dsa_workspace_bytes(model: ModelSpec, cfg: PlanConfig) -> int:
    """The DSA indexer's profile workspace (indexer_workspace.py); 0 for a model without one, or a
    release that does not reserve it."""
    keys = [layer for layer in model.cache_layers
            if isinstance(layer, AttentionDesc) and layer.role is CacheRole.INDEXER]
    # MiniMax-M3's index keys go through its own sparse attention, not DSA's sparse_attn_indexer
    if not keys or model.family in MINIMAX_M3_FAMILIES or not cfg.vllm_rules().dsa_profile_workspace:
        return 0
    key_bytes = keys[0].head_dim * (keys[0].fixed_dtype_bytes or 1)
    return indexer_workspace_bytes(cfg.max_model_len or model.max_model_len, key_bytes)


def v2_dense_layer_bytes(model: ModelSpec, cfg: PlanConfig) -> int:
    """hidden x layers (this rank's) x dtype bytes for a dense model (no MoE, no recurrent state) on
    the V2 runner, else 0: one token's hidden state in every layer, the unit of
    BudgetConstants.v2_dense_layer_tokens. The logs of dense models on V2 (0.26 q004: 0.80 GiB above
    the forward and sampler; 0.27.1 r011, 0.31 r008, 0.25.1 q006, 0.29 q015) hold that many tokens'
    hidden states per layer beyond what vLLM's profile code accounts for (a hybrid on V2, 0.29 q012,
    holds none), so the count is fitted and scored out of sample. Every such log ran 2,048 batched
    tokens; no log shows how it grows with max_num_batched_tokens, so it is not scaled by it."""
    if not runs_on_v2(model, cfg) or model.num_experts_per_tok > 0 or has_state(model):
        return 0
    return model.hidden_size * ceil(model.num_hidden_layers / cfg.pp) * activation_dtype_bytes(model, cfg)


def activation_term(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> BudgetTerm:
    """The profile run's peak on the likelier sampler path, banded over every path it may take."""
    shape = forward_shape(model, cfg)
    mns = cfg.max_num_seqs or DEFAULT_MAX_NUM_SEQS
    encoder = 0 if cfg.language_model_only else encoder_outputs_bytes(
        model.architectures, model.family, max_num_batched_tokens, model.hidden_size, shape.dtype_bytes)
    vision = model_vision_profile(model, cfg, max_num_batched_tokens)
    v2_dense = int(cfg.budget_constants.v2_dense_layer_tokens * v2_dense_layer_bytes(model, cfg))
    dsa = dsa_workspace_bytes(model, cfg)
    terms, samplers = [], []
    for path in sampler_paths_for(model, cfg):
        sampler = sampler_profile(max_num_batched_tokens, mns, model.vocab_size, shape.dtype_bytes, path)
        peak = activation_peak(shape, max_num_batched_tokens, sampler.peak_bytes, encoder,
                               pixel_bytes=vision.pixel_bytes() if vision else 0,
                               vision_bytes=vision.transient_bytes() if vision else 0, workspace_bytes=dsa + v2_dense)
        images = f"; vision tower on {vision.items} dummy images, {vision.num_patches} patches" if vision else ""
        if dsa:
            images += f"; DSA indexer workspace {dsa / 2**30:.2f} GiB"
        if v2_dense:
            images += (f"; {cfg.budget_constants.v2_dense_layer_tokens:,.0f} tokens' hidden states per layer the V2 "
                       f"runner's profile holds ({v2_dense / 2**30:.2f} GiB, fitted)")
        samplers.append(f"{path} sampler {sampler.rows} rows x {sampler.vocab_size} x {sampler.bytes_per_element} B")
        note = f"profile run peak: {peak.dominant} dominates ({samplers[-1]}; forward {max_num_batched_tokens} tokens{images})"
        terms.append(POINT.term("activation", peak.bytes, note))
    first = terms[0]
    if len(terms) == 1:
        return first
    # The install nobody described: the band stretches over every path the sampler may take.
    return replace(first, low_bytes=min(t.low_bytes for t in terms), high_bytes=max(t.high_bytes for t in terms),
                   note=f"{first.note}; the band also covers the {'; '.join(samplers[1:])} of an install with "
                        f"FlashInfer (--flashinfer / --no-flashinfer say which)")


def graph_estimate(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> CudagraphEstimate | None:
    """The graphs vLLM's memory profiler would capture for its estimate; None under --enforce-eager."""
    if cfg.enforce_eager:
        return None
    shape = forward_shape(model, cfg)
    return cudagraph_estimate(ceil(model.num_hidden_layers / cfg.pp), cfg.max_num_seqs or DEFAULT_MAX_NUM_SEQS,
                              max_num_batched_tokens, moe=model.num_experts_per_tok > 0,
                              decode_query_len=1 + cfg.speculative_tokens,
                              live_bytes_per_token=shape.kept_bytes(1) + shape.forward_extra_bytes(1))


def graph_estimate_subtracted(model: ModelSpec, cfg: PlanConfig) -> bool:
    """Whether this release and runner take the graph estimate out of the KV budget."""
    return graph_estimate_applies(cfg.vllm_rules(), v2_runner=runs_on_v2(model, cfg), enforce_eager=cfg.enforce_eager)


def cudagraph_term(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> BudgetTerm:
    estimate = graph_estimate(model, cfg, max_num_batched_tokens)
    if estimate is None or not graph_estimate_subtracted(model, cfg):
        return BudgetTerm.exact("cudagraph", 0, "estimate", "not subtracted by this release / runner, or eager")
    note = f"CUDA graph estimate: {estimate.piecewise_graphs} piecewise + {estimate.full_graphs} full graphs"
    return POINT.term("cudagraph", estimate.bytes_with(cfg.budget_constants), note)


def non_torch_setup(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> NonTorchSetup:
    """What decides the non-torch term: without a GPU named, a data-center GPU with NVLink is assumed."""
    gpu = get_gpu(cfg.gpu) if cfg.gpu is not None and cfg.gpu_memory_bytes is None else None
    unified = gpu is not None and gpu.unified_memory
    pinned = 0
    if unified:
        pinned = pinned_host_bytes(model_vision_profile(model, cfg, max_num_batched_tokens), max_num_batched_tokens,
                                   model.hidden_size, activation_dtype_bytes(model, cfg))
    return NonTorchSetup(cfg.tp, consumed_accounting=cfg.vllm_rules().profile_consumed_accounting,
                         nvlink=gpu is None or gpu.nvlink, linear_attention=has_linear_attention(model),
                         unified_memory=unified, pinned_host_bytes=pinned)


def non_torch_term(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> BudgetTerm:
    """The non-torch point estimate, carrying the fitted residual band of the whole overhead."""
    setup = non_torch_setup(model, cfg, max_num_batched_tokens)
    constants = cfg.budget_constants
    link = "" if cfg.tp == 1 else (" over NVLink" if setup.nvlink else " over PCIe (no custom all-reduce)")
    host = f", {setup.pinned_host_bytes / 2**30:.2f} GiB pinned host buffers (unified memory)" if setup.unified_memory else ""
    if constants.calibrated:  # the calibration term carries what remains uncertain
        band = POINT
        source = ""
    elif setup.unified_memory:
        band = Band(0.0, 0.0, abs_low=constants.unified_residual_low_bytes, abs_high=constants.unified_residual_high_bytes)
        source = "; band: what graphs + non-torch missed on real unified-memory start-ups, out of sample"
    else:
        band = Band(0.0, 0.0, abs_low=constants.residual_low_bytes, abs_high=constants.residual_high_bytes)
        source = "; band: what graphs + non-torch missed on real start-ups, out of sample"
    return band.term("non_torch", setup.bytes(constants),
                     f"CUDA context, cuBLAS, TP {cfg.tp} communication{link}{host} (estimate){source}")


def calibration_term(cfg: PlanConfig) -> BudgetTerm:
    """The user's own log's residual (signed: a log that took less than hkv's terms gives it back),
    banded by what a calibration leaves on the same machine (fitted/fit.py calibrated_band)."""
    c = cfg.budget_constants
    return BudgetTerm("calibration", c.calibration_offset_bytes, "log", c.calibration_offset_bytes
                      - c.calibrated_residual_low_bytes, c.calibration_offset_bytes + c.calibrated_residual_high_bytes,
                      c.calibration_note, signed=True)


def profile_terms(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> tuple[BudgetTerm, ...]:
    """The activation, cudagraph and non_torch terms of one rank (in that order), then the
    calibration's when the plan is calibrated on a log."""
    terms = (activation_term(model, cfg, max_num_batched_tokens), cudagraph_term(model, cfg, max_num_batched_tokens),
             non_torch_term(model, cfg, max_num_batched_tokens))
    return (*terms, calibration_term(cfg)) if cfg.budget_constants.calibrated else terms
