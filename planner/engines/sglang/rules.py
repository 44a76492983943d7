"""SGLang's pool-sizing rules, release by release (the `--sglang-version` the `sglang` engine follows).

Each field is one rule that changed; `for_sglang_version` says where. The boundaries were read from
the released wheels' source (sglang 0.5.10 to 0.5.23: srt/model_executor/model_runner_kv_cache_mixin.py
and pool_configurator.py up to 0.5.17, srt/mem_cache/kv_cache_configurator.py after):

| rule                                                  | before                     | from    |
|-------------------------------------------------------|----------------------------|---------|
| hybrid SWA: full = rest // (F n_full + r S n_swa)     | T = rest // (F n_full + S n_swa), | 0.5.11 (2026-04) |
|                                                       | full = T (F n_full + S n_swa) / (F n_full + r S n_swa) |  |
| SGLang refuses a sliding pool <= window + page             | no check                   | 0.5.16  |
| --disable-radix-cache --max-running-requests: sliding pool sized for the requests | by the ratio | 0.5.22 |
| requested --max-running-requests capped by tokens // 2 | capped by the 2,048-4,096 estimate | 0.5.14 |
| hybrid recurrent "auto" radix strategy: the extra buffer (5 slots a request) where supported | no_buffer (3) | 0.5.14 |
| Mamba pool: one padding slot charged, K = (budget - slot) // slot | K = budget // slot | 0.5.17 |
| multimodal: SGLANG_VLM_CACHE_SIZE_MB (100 MiB) out of the rest | not reserved       | 0.5.18 |
| --kv-cache-dtype auto: fp8 for compressed-tensors' static FP8 kv_cache_scheme (checkpoint_kv_dtype.py) | model dtype (ModelOpt and fp8 checkpoints: fp8 in every release) | 0.5.19 |
| default mem_fraction_static modeled (memory_hook.py)   | changed in most releases: pass --mem-fraction-static | 0.5.23 |

The default mem_fraction_static moved from server_args.py (piecewise CUDA graph tokens, a 4-6 GiB
speculative reserve, 2,048-token MLA capture) to arg_groups/memory_hook.py in 0.5.19 and its tiers
and caps changed again up to 0.5.23; hkv models 0.5.23's only and asks older releases for the value.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.engines.release_version import EngineReleases, ReleaseReading, format_version, read_release
from hkv.planner.engines.sglang.server_args import DEFAULT_SGLANG_VERSION

# Every SGLang release hkv models (PyPI; 0.5.10.post1 and the other post releases fold in), oldest
# first: a dev build follows the newest one before its number (planner/engines/release_version.py).
RELEASES: tuple[tuple[int, int, int], ...] = tuple((0, 5, patch) for patch in range(10, 24))
OLDEST_MODELED = RELEASES[0]
NEWEST_MODELED = RELEASES[-1]
HISTORY = EngineReleases(engine="SGLang", field="sglang_version", releases=RELEASES, dev_example="0.5.22.dev5+g1a2b3c4")
SWA_RATIO_CELL_FROM = (0, 5, 11)
REQUESTED_RUNNING_TOKEN_CAP_FROM = (0, 5, 14)
SWA_ADMISSION_FLOOR_FROM = (0, 5, 16)
SWA_REQUEST_CAP_POOL_FROM = (0, 5, 22)
MAMBA_AUTO_EXTRA_BUFFER_FROM = (0, 5, 14)
MAMBA_PADDING_SLOT_FROM = (0, 5, 17)
MULTIMODAL_RESERVATION_FROM = (0, 5, 18)
DEFAULT_MEM_FRACTION_MODELED_FROM = (0, 5, 23)
COMPRESSED_TENSORS_KV_AUTO_FROM = (0, 5, 19)


def read_sglang_version(text: str) -> ReleaseReading:
    """The release an SGLang version string follows ("v0.5.21" -> 0.5.21, "0.5.22.dev5+g1a2b3c4" ->
    0.5.21, a dev build; the rules are release_version.py's); InvalidInputError for other text, a
    source build (0.0.0.dev1+g5f55db35e) or a release hkv does not model."""
    return read_release(text, HISTORY)


def parse_sglang_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of the release "0.5.23", "v0.5.15.post1" or "0.5.22.dev5" follows."""
    return read_sglang_version(text).release


@dataclass(frozen=True)
class SglangRules:
    """The sizing rules of one SGLang release."""

    version: tuple[int, int, int]
    swa_ratio_cell: bool  # hybrid SWA: full tokens = rest // (F n_full + r S n_swa) (else the re-split)
    swa_admission_floor: bool  # a sliding pool that cannot hold window + page is refused
    swa_request_cap_pool: bool  # SWARequestCapPoolConfigurator exists
    requested_running_token_cap: bool  # --max-running-requests capped by tokens // 2 (else by the estimate)
    mamba_auto_extra_buffer: bool  # "auto" resolves to the extra buffer where supported (else no_buffer)
    mamba_padding_slot: bool  # the state pool's padding slot is charged (K = (budget - slot) // slot)
    multimodal_reservation: bool  # SGLANG_VLM_CACHE_SIZE_MB comes out of the rest for multimodal models
    default_mem_fraction_modeled: bool  # hkv reproduces this release's default mem_fraction_static
    compressed_tensors_kv_auto: bool  # "auto" KV is fp8 for compressed-tensors' static FP8 kv_cache_scheme

    @property
    def version_text(self) -> str:
        return format_version(self.version)


def for_sglang_version(text: str = DEFAULT_SGLANG_VERSION) -> SglangRules:
    version = parse_sglang_version(text)
    return SglangRules(
        version=version,
        swa_ratio_cell=version >= SWA_RATIO_CELL_FROM,
        swa_admission_floor=version >= SWA_ADMISSION_FLOOR_FROM,
        swa_request_cap_pool=version >= SWA_REQUEST_CAP_POOL_FROM,
        requested_running_token_cap=version >= REQUESTED_RUNNING_TOKEN_CAP_FROM,
        mamba_auto_extra_buffer=version >= MAMBA_AUTO_EXTRA_BUFFER_FROM,
        mamba_padding_slot=version >= MAMBA_PADDING_SLOT_FROM,
        multimodal_reservation=version >= MULTIMODAL_RESERVATION_FROM,
        default_mem_fraction_modeled=version >= DEFAULT_MEM_FRACTION_MODELED_FROM,
        compressed_tensors_kv_auto=version >= COMPRESSED_TENSORS_KV_AUTO_FROM,
    )
