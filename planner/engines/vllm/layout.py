"""vLLM's hybrid KV cache manager layout, reproduced (v0.32/0.33 `get_kv_cache_groups`).

Steps: optional promotion of local layers to full (HMA disabled), Mamba page alignment (the
attention block grows until one attention page holds a Mamba state), page-size unification,
bucketing by spec, group size = min layer count (max if max < 1.5 min), strided split, and
num_blocks = available // bytes per block of the largest group.
"""

from __future__ import annotations

from math import lcm

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.attention_backend import plan_block_size
from hkv.planner.block_stride import aligned_pool
from hkv.planner.budget.memory_budget import MemoryBudget
from hkv.planner.compressed_attention_layout import has_sliding_mla_window, packed_paged_groups
from hkv.planner.engines.vllm.gdn_checkpoints import gdn_checkpoint_alignment
from hkv.planner.engines.vllm.rules import DEFAULT_VLLM_VERSION, MAMBA_ALL_MODE_FAMILIES, VllmRules
from hkv.planner.errors import LayoutUnavailableError
from hkv.planner.layout import Layout, cdiv
from hkv.planner.paged_layer import (
    PagedLayer,
    attention_page_layers,
    bucket_by_spec,
    owned_cache_layers,
    pp_stage_of,
    split_strided,
    uniform_type,
    unify_page_sizes,
)
from hkv.planner.plan_config import PlanConfig
from hkv.planner.pool_sizing import StateBlocks, size_pool, to_kv_groups
from hkv.planner.step5_backend import check_step5_gpu, check_step5_pages

_MIN_KERNEL_BLOCK = 16  # FlashAttention's MultipleOf(16)
_MLA_MIN_BLOCK = 128


def vllm_group_size(counts: list[int]) -> int:
    """The newest release's group size (see VllmRules.group_size)."""
    return VllmRules.for_version(DEFAULT_VLLM_VERSION).group_size(counts)


def in_flight_tokens(cfg: PlanConfig, max_num_batched_tokens: int) -> int:
    """T: from vLLM 0.26 max_concurrent_batches x mnbt (on CUDA the V2 model runner with async
    scheduling keeps pp + 1 batches in flight); before, one batch."""
    if not cfg.vllm_rules().in_flight_batches:
        return max_num_batched_tokens
    return (cfg.pp + 1) * max_num_batched_tokens


def mamba_state_blocks(cfg: PlanConfig, prefix_caching: bool, gdn_checkpoint: bool = False) -> StateBlocks:
    """State blocks a request holds (MambaSpec.max_memory_usage_bytes / page): mode "none"
    (prefix caching off) 1; align mode 2 live states, + 1 prefill checkpoint for Mamba2 layers from
    vLLM 0.32 (MambaMixer2 sets num_prefill_checkpoint_blocks; Mamba1, lightning, KDA and short-conv
    layers do not) and for GDN layers where `gdn_checkpoint` (vLLM 0.33, gdn_checkpoints.py); both
    + one per speculative token from vLLM 0.15."""
    rules = cfg.vllm_rules()
    spec_blocks = cfg.speculative_tokens if rules.speculative_state_blocks else 0

    def blocks(spec: StateCacheSpec) -> int:
        if not prefix_caching:
            return 1 + spec_blocks
        checkpoint = (rules.mamba2_checkpoint_block and spec.variant == "mamba2") or (
            gdn_checkpoint and spec.variant == "gdn")
        return (3 if checkpoint else 2) + spec_blocks
    return blocks


def vllm_prefix_caching(model: ModelSpec, cfg: PlanConfig) -> bool:
    """Whether vLLM (cfg's release) caches prefixes for `model`: --enable/--no-prefix-caching,
    else the release's default (off for attention-free models; for hybrids, on from 0.26)."""
    kinds = {spec.kind for _, spec in owned_cache_layers(model, cfg.cache_options(model.dtype_bytes))}
    return _prefix_caching(cfg, kinds)


def _prefix_caching(cfg: PlanConfig, kinds: set[CacheKind]) -> bool:
    has_state = CacheKind.RECURRENT in kinds
    return cfg.vllm_rules().prefix_caching(cfg.enable_prefix_caching, has_state=has_state,
                                           attention_free=has_state and kinds == {CacheKind.RECURRENT})


def layout_prefix_caching(name: str, model: ModelSpec, cfg: PlanConfig) -> bool:
    """Prefix caching as the named layout's engine runs it: vLLM's rule for the vllm layouts; hkv's
    own runtime (hkv, partitioned) caches unless --no-prefix-caching."""
    if name.startswith("vllm"):
        return vllm_prefix_caching(model, cfg)
    return cfg.enable_prefix_caching is not False


def align_attention_block(attn_bytes_per_token: int, mamba_page: int, block_size: int,
                          is_mla: bool, kernel_block: int = _MIN_KERNEL_BLOCK, checkpoint_alignment: int = 1) -> int:
    """Attention block size raised so one attention page covers one Mamba state (>= block_size),
    in steps of the backend's smallest kernel block `kernel_block` (CPU_ATTN: 32), and of the
    recurrent layers' prefill checkpoint alignment in align mode (vLLM 0.33's GDN: 64)."""
    k = max(kernel_block, block_size)
    if is_mla:
        k = max(k, _MLA_MIN_BLOCK)
    k = lcm(k, checkpoint_alignment)
    aligned = k * cdiv(mamba_page, k * attn_bytes_per_token)
    aligned = cdiv(aligned, kernel_block) * kernel_block
    return max(block_size, aligned)


def build_vllm_layout(model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget, *,
                      hybrid: bool = True) -> Layout:
    """Raises LayoutUnavailableError where vLLM would refuse (no HMA with recurrent layers)."""
    opts = cfg.cache_options(model.dtype_bytes)
    rules = cfg.vllm_rules()
    entries = owned_cache_layers(model, opts, engine_windows=True)
    _check_stages_own_cache(model, entries, cfg.pp)
    max_len = cfg.max_model_len or model.max_model_len
    name = "vllm" if hybrid else "vllm-no-hybrid"
    notes: list[str] = []
    kinds = {spec.kind for _, spec in entries}
    has_state = CacheKind.RECURRENT in kinds
    if not rules.serves(model.family):
        raise LayoutUnavailableError(f"vLLM {rules.name} has no model class for {model.family}",
                                     fields=("vllm_version",))
    if not hybrid and has_state:
        raise LayoutUnavailableError("vLLM requires the hybrid KV cache manager for recurrent layers")
    if not hybrid and has_sliding_mla_window(model):
        raise LayoutUnavailableError(
            "vLLM 0.32/0.33 fail at start-up without the hybrid KV cache manager when they promote a sliding-window "
            "MLA cache (DeepSeek-V4, dots3) to full attention (replace_as SlidingWindowMLASpec -> MLAAttentionSpec: "
            "unexpected keyword 'bounded_replay'); use the hybrid manager", fields=("layout",))
    if not hybrid and CacheKind.CIRCULAR in kinds:
        raise LayoutUnavailableError(
            "vLLM 0.33 fails at start-up without the hybrid KV cache manager on Step5's CSA tail ring: a "
            "CircularBufferSpec has no full-attention form ('Failed to promote local KV cache specs to one unified "
            "type', kv_cache_planning.py l.814); use the hybrid manager", fields=("layout",))
    prefix_caching = _prefix_caching(cfg, kinds)
    gdn_alignment = gdn_checkpoint_alignment(model, cfg, prefix_caching)
    if has_state and prefix_caching and rules.mamba_all_mode_default and model.family in MAMBA_ALL_MODE_FAMILIES:
        raise LayoutUnavailableError(
            f"vLLM {rules.name} keeps a {model.family} state per block under prefix caching (mamba_cache_mode "
            "'all'), which hkv does not model; plan with --no-prefix-caching or --vllm-version 0.28.0 or later",
            fields=("vllm_version", "enable_prefix_caching"))
    if hybrid and CacheKind.CHUNKED in kinds and (cfg.draft_layers or rules.chunked_disables_hybrid_manager):
        # Chunked local attention + EAGLE never has the hybrid manager (VllmConfig); 0.10.1-0.13
        # also defaulted VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE to 0. Chunked layers are
        # then cached as full attention.
        if not cfg.draft_layers:
            notes.append("There is a latency regression when using chunked local attention with the hybrid KV "
                         "cache manager. Disabling it, by default. To enable it, set the environment "
                         "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1.")
        hybrid = False
    promote = not hybrid and CacheKind.FULL in kinds and bool(kinds & {CacheKind.SLIDING, CacheKind.CHUNKED})
    if promote:
        _check_one_window([s for _, s in entries if isinstance(s, AttentionCacheSpec)])

    block_size = cfg.block_size
    attn_specs = [s for _, s in entries if isinstance(s, AttentionCacheSpec)]
    state_specs = [s for _, s in entries if isinstance(s, StateCacheSpec)]
    state_page: int | None = None
    if state_specs:
        mamba_page = max(s.state_bytes for s in state_specs)
        state_page = mamba_page
        if attn_specs:
            first = attn_specs[0]
            attn_tok = first.bytes_per_token
            block_size = align_attention_block(attn_tok, mamba_page, block_size, first.is_mla,
                                               plan_block_size(model, cfg).kernel_alignment, gdn_alignment or 1)
            if block_size != cfg.block_size:
                notes.append(f"Setting attention block size to {block_size} tokens to ensure that "
                             f"attention page size is >= mamba page size.")
            state_page = block_size * attn_tok
            if state_page != mamba_page:
                notes.append(f"Padding mamba page size by {(state_page / mamba_page - 1) * 100:.2f}% "
                             f"to ensure that mamba page size and attention page size are exactly equal.")

    layers = attention_page_layers(entries, block_size, promote_local=promote)
    check_step5_pages(layers)
    check_step5_gpu(layers, cfg.gpu, cfg.cpu_engine)
    state_block_size = block_size if prefix_caching else max_len
    for layer, spec in entries:
        if isinstance(spec, StateCacheSpec):
            assert state_page is not None
            layers.append(PagedLayer(layer.name, layer.layer_idx, spec, state_block_size, state_page))
    # vLLM registers layers in module order: sort by layer index, attention before mixer.
    order = {layer.name: i for i, (layer, _) in enumerate(entries)}
    layers.sort(key=lambda pl: order[pl.name])

    groups = _group(layers, notes, rules)
    pool = size_pool(0, "shared", groups, budget.available_bytes, model.num_hidden_layers, cfg.pp)
    pool = aligned_pool(pool, groups, budget.available_bytes, model.num_hidden_layers, cfg.pp)  # Step5's strides
    kv_groups = to_kv_groups(groups, 0, mamba_state_blocks(cfg, prefix_caching, gdn_alignment is not None))
    return Layout(name, tuple(kv_groups), (pool,) if kv_groups else (), max_len,
                  in_flight_tokens(cfg, budget.max_num_batched_tokens), budget.available_bytes,
                  tuple(notes), pp_size=cfg.pp)


def _check_one_window(specs: list[AttentionCacheSpec]) -> None:
    """vLLM promotes local layers to full attention that remembers their window; the merged spec
    takes one window (and one chunk), so two lengths (Inkling's 512-token attention windows and its
    4-token conv states) make FullAttentionSpec.merge_window_sizes raise at start-up."""
    for what, lengths in (("sliding windows", {s.window_len for s in specs if s.window_len is not None}),
                          ("local chunks", {s.chunk_len for s in specs if s.chunk_len is not None})):
        if len(lengths) > 1:
            raise LayoutUnavailableError(
                f"vLLM without the hybrid KV cache manager fails on {what} of different lengths "
                f"({', '.join(map(str, sorted(lengths)))} tokens): use the hybrid manager", fields=("layout",))


def _check_stages_own_cache(model: ModelSpec, entries: list, pp: int) -> None:
    """vLLM refuses a pipeline stage whose layers all read another layer's KV (Gemma 3n at
    PP 4): validate_kv_cache_layout finds a stage with no KV cache spec."""
    if pp == 1 or not entries:
        return
    owning = {pp_stage_of(layer.layer_idx, model.num_hidden_layers, pp) for layer, _ in entries}
    if len(owning) < pp:
        missing = sorted(set(range(pp)) - owning)
        raise LayoutUnavailableError(f"vLLM rejects pp {pp}: stage(s) {missing} hold no layer that owns "
                                     f"KV cache (all KV-shared)", fields=("pp",))


def _group(layers: list[PagedLayer], notes: list[str], rules: VllmRules) -> list[list[PagedLayer]]:
    if not layers:
        return []
    packed = packed_paged_groups(layers)  # DeepSeek-V4, dots3: block-outermost packing of mixed pages
    if packed is not None:
        return packed
    first = layers[0]
    if all(layer.bucket_key == first.bucket_key for layer in layers):
        return [layers]
    if uniform_type(layers):
        return [layers]
    buckets = bucket_by_spec(unify_page_sizes(layers))
    group_size = rules.group_size([len(b) for b in buckets])
    groups = []
    for bucket in buckets:
        if len(bucket) % group_size:
            pad = group_size - len(bucket) % group_size
            notes.append(f"Add {pad} padding layers, may waste at most "
                         f"{pad / len(bucket) * 100:.2f}% KV cache memory")
        groups.extend(split_strided(bucket, group_size))
    return groups
