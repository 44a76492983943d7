"""The fitted constants of the blind budget, as one frozen value that a plan carries.

Every field is measured on real start-up logs by fitted/fit.py; `fitted_on` names the records each came
from. A plan takes `SHIPPED` (the fit on every shared start-up) unless it is given another value:
the blind-budget benchmark passes a re-fit without the scored source, so its out-of-sample error
never sees the record it scores.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class GraphBytes:
    """The CUDA graph estimate per decoder layer: the first capture's bytes, and each further graph
    in tokens' worth of the forward's live set (cudagraph_estimate.py has the formula)."""

    first_capture_bytes: int
    per_graph_tokens: float


@dataclass(frozen=True)
class BudgetConstants:
    """Bytes per rank. The residual band bounds what the point estimate of graphs + non-torch
    misses (activation errors included): real = predicted - residual_low .. predicted + residual_high."""

    context_bytes: int  # CUDA context + cuBLAS outside torch, TP 1, up to 0.26's accounting
    consumed_context_bytes: int  # the same under 0.27's "consumed memory" (persistent torch buffers too)
    comm_nvlink_bytes_per_tp_doubling: int  # NCCL + custom all-reduce, cards with NVLink / P2P
    comm_pcie_bytes_per_tp_doubling: int  # NCCL alone: custom all-reduce is off without P2P
    linear_attention_bytes: int  # gated-delta-net / KDA Triton kernels' workspaces
    unified_memory_bytes: int  # the host's share of a unified-memory device's free-memory drop
    graph: GraphBytes
    residual_low_bytes: int  # discrete GPUs
    residual_high_bytes: int
    # Unified memory (GB10): the host's own use comes out of the same pool, so its residuals are apart.
    unified_residual_low_bytes: int = 0
    unified_residual_high_bytes: int = 0
    # Tokens' hidden states per decoder layer that the profile peak of a dense model on vLLM's V2
    # runner holds beyond its forward and sampler (hidden x layers x dtype bytes each): seen on
    # every dense V2 log, not found in vLLM's code, so fitted (profile.v2_dense_layer_bytes).
    v2_dense_layer_tokens: float = 0.0
    # After calibrating on a user's own log: the same-machine residual band (fitted on shared records
    # from one source, machine and release: calibrated on one, scored on the others).
    calibrated_residual_low_bytes: int = 0
    calibrated_residual_high_bytes: int = 0
    fitted_on: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (field, record ids) for each fitted field
    # Set by a calibration (fitted/calibration.py), never by the fit: the user's own log's residual
    # (signed bytes, added to non-torch), the scale of its logged graph estimate, and what to say.
    calibration_offset_bytes: int = 0
    calibration_graph_scale: float = 1.0
    calibration_note: str = ""

    def records_of(self, name: str) -> tuple[str, ...]:
        """The record ids `name` was fitted on (empty: no record had the feature; its fallback applies)."""
        return dict(self.fitted_on).get(name, ())

    def value_names(self) -> tuple[str, ...]:
        """The fitted fields (not the provenance, not a calibration's)."""
        return tuple(f.name for f in fields(self) if f.name != "fitted_on" and not f.name.startswith("calibration_"))

    @property
    def calibrated(self) -> bool:
        return bool(self.calibration_note)


# The fit on every shared start-up (fitted/fit.py); values in bytes.
# BEGIN FIT (benchmarks/bench_blind_budget.py --refit writes this block)
SHIPPED = BudgetConstants(
    context_bytes=139586437,
    consumed_context_bytes=139585570,
    comm_nvlink_bytes_per_tp_doubling=440234147,
    comm_pcie_bytes_per_tp_doubling=34914190,
    linear_attention_bytes=46170900,
    unified_memory_bytes=352159871,
    graph=GraphBytes(10177645, 1.8767),
    residual_low_bytes=961768351,
    residual_high_bytes=880347941,
    unified_residual_low_bytes=889559651,
    unified_residual_high_bytes=1251881132,
    v2_dense_layer_tokens=2417.8,
    calibrated_residual_low_bytes=188894150,
    calibrated_residual_high_bytes=188894150,
    fitted_on=(
        ('graph', ('r001_qwen35_9b_l40s', 'r003_qwen36_27b_nvfp4_spark', 'r009_glm52_nvfp4_tp4ep_v026', 'r014_qwen36_35b_nvfp4_spark_v020', 'r017_dsv4_flash_2xspark_tp2_v021')),
        ('v2_dense_layer_tokens', ('r008_llama31_8b_a100_v031', 'r011_qwen25_05b_4090_wsl_v0271', 'q004', 'q006', 'q015')),
        ('context_bytes', ('r018_llmd_gptoss20b_h100', 'r022_llmd_llama31_8b_h100', 'r023_llmd_qwen3_06b_h100', 'r024_llmd_qwen3_32b_tp1_h100', 'r026_llmd_mistral_small32_h100', 'r031_qwen3_8b_fp8_24g_debug', 'r052_vllm24577_qwen3_06b_a100_flashinfer', 'r053_myoceane_gemma4_26b_a4b_a100_eager', 'q004', 'q006', 'q010', 'q013', 'q020')),
        ('consumed_context_bytes', ('r008_llama31_8b_a100_v031', 'r011_qwen25_05b_4090_wsl_v0271', 'q015')),
        ('comm_nvlink_bytes_per_tp_doubling', ('r009_glm52_nvfp4_tp4ep_v026', 'r020_llmd_llama33_70b_fp8_tp2_h100', 'r025_llmd_qwen3_32b_tp2_h100')),
        ('comm_pcie_bytes_per_tp_doubling', ('r049_vllm51590_gptoss120b_tp8_pro4500_v028', 'q001', 'q002')),
        ('linear_attention_bytes', ('r001_qwen35_9b_l40s', 'r010_qwen3next_80b_2xh200_v0102', 'q012')),
        ('unified_memory_bytes', ('r003_qwen36_27b_nvfp4_spark', 'r014_qwen36_35b_nvfp4_spark_v020', 'r015_nemotron3_nano_30b_spark_v0202', 'r017_dsv4_flash_2xspark_tp2_v021', 'q003', 'q029')),
        ('residual_low_bytes', ('r018_llmd_gptoss20b_h100', 'r020_llmd_llama33_70b_fp8_tp2_h100', 'r022_llmd_llama31_8b_h100', 'r023_llmd_qwen3_06b_h100', 'r024_llmd_qwen3_32b_tp1_h100', 'r025_llmd_qwen3_32b_tp2_h100', 'r026_llmd_mistral_small32_h100', 'q001', 'q002', 'q004', 'q006', 'q010', 'q012', 'q013', 'q015', 'q020', 'r001_qwen35_9b_l40s', 'r008_llama31_8b_a100_v031', 'r009_glm52_nvfp4_tp4ep_v026', 'r010_qwen3next_80b_2xh200_v0102', 'r011_qwen25_05b_4090_wsl_v0271', 'r031_qwen3_8b_fp8_24g_debug', 'r049_vllm51590_gptoss120b_tp8_pro4500_v028', 'r052_vllm24577_qwen3_06b_a100_flashinfer', 'r053_myoceane_gemma4_26b_a4b_a100_eager')),
        ('residual_high_bytes', ('r018_llmd_gptoss20b_h100', 'r020_llmd_llama33_70b_fp8_tp2_h100', 'r022_llmd_llama31_8b_h100', 'r023_llmd_qwen3_06b_h100', 'r024_llmd_qwen3_32b_tp1_h100', 'r025_llmd_qwen3_32b_tp2_h100', 'r026_llmd_mistral_small32_h100', 'q001', 'q002', 'q004', 'q006', 'q010', 'q012', 'q013', 'q015', 'q020', 'r001_qwen35_9b_l40s', 'r008_llama31_8b_a100_v031', 'r009_glm52_nvfp4_tp4ep_v026', 'r010_qwen3next_80b_2xh200_v0102', 'r011_qwen25_05b_4090_wsl_v0271', 'r031_qwen3_8b_fp8_24g_debug', 'r049_vllm51590_gptoss120b_tp8_pro4500_v028', 'r052_vllm24577_qwen3_06b_a100_flashinfer', 'r053_myoceane_gemma4_26b_a4b_a100_eager')),
        ('unified_residual_low_bytes', ('q003', 'r003_qwen36_27b_nvfp4_spark', 'q029', 'r014_qwen36_35b_nvfp4_spark_v020', 'r015_nemotron3_nano_30b_spark_v0202', 'r017_dsv4_flash_2xspark_tp2_v021')),
        ('unified_residual_high_bytes', ('q003', 'r003_qwen36_27b_nvfp4_spark', 'q029', 'r014_qwen36_35b_nvfp4_spark_v020', 'r015_nemotron3_nano_30b_spark_v0202', 'r017_dsv4_flash_2xspark_tp2_v021')),
        ('calibrated_residual_low_bytes', ('r003_qwen36_27b_nvfp4_spark', 'q029', 'r018_llmd_gptoss20b_h100', 'r020_llmd_llama33_70b_fp8_tp2_h100', 'r022_llmd_llama31_8b_h100', 'r023_llmd_qwen3_06b_h100', 'r024_llmd_qwen3_32b_tp1_h100', 'r025_llmd_qwen3_32b_tp2_h100', 'r026_llmd_mistral_small32_h100')),
        ('calibrated_residual_high_bytes', ('r003_qwen36_27b_nvfp4_spark', 'q029', 'r018_llmd_gptoss20b_h100', 'r020_llmd_llama33_70b_fp8_tp2_h100', 'r022_llmd_llama31_8b_h100', 'r023_llmd_qwen3_06b_h100', 'r024_llmd_qwen3_32b_tp1_h100', 'r025_llmd_qwen3_32b_tp2_h100', 'r026_llmd_mistral_small32_h100')),
    ),
)
# END FIT
