"""Logged memory-profile figures of real vLLM start-ups, with the inputs hkv's profile formulas take.

Copied by hand from shared/data/vllm_memory_logs/records.jsonl (the record id names each row; the
figure is the one its `lines` print) and the models' public config.json files
(tests/data/vllm_startups/configs, model_specs/catalog). Defaults the logs do not print are
vLLM's for the GPU class (EngineArgs.get_batch_defaults: >= 70 GiB cards but A100: 8,192 batched
tokens and 1,024 sequences for the API server, 16,384 for the LLM class; smaller cards 2,048 and
256). Shared by the residual tests and the report script.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hkv.planner.budget.cudagraph_estimate import CudagraphEstimate, cudagraph_estimate
from hkv.planner.budget.encoder_profile import encoder_outputs_bytes
from hkv.planner.budget.model_runner import graph_estimate_applies, uses_v2_runner
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.non_torch import NonTorchSetup
from hkv.planner.budget.profile import forward_shape
from hkv.planner.plan_config import PlanConfig
from hkv.planner.budget.profile_activation import ForwardShape, activation_peak
from hkv.planner.budget.sampler_peak import SamplerPath, sampler_paths, sampler_profile
from hkv.planner.engines.vllm.rules import VllmRules

GIB = 2**30
CONFIGS = Path(__file__).resolve().parents[2] / "data" / "vllm_startups" / "configs"
MM = ("XForConditionalGeneration",)  # a multimodal class name, for encoder_outputs_bytes


@dataclass(frozen=True)
class ActivationRecord:
    """A logged peak activation. `logged_gib` is the printed figure; from 0.27 it includes the
    CUDA graph estimate (`estimate_gib` when the log printed it, else hkv's own estimate is added)."""

    record_id: str
    version: str
    vocab: int
    hidden: int
    intermediate: int
    tp: int
    mnbt: int
    mns: int
    logged_gib: float
    experts_per_tok: int = 0
    moe_intermediate: int = 0
    dtype_bytes: int = 2
    family: str = ""  # multimodal family (encoder budget), "" for text-only classes
    architectures: tuple[str, ...] = ()
    has_state: bool = False  # recurrent layers (the V2 runner takes them from 0.32)
    layers: int = 0  # for hkv's graph estimate where the log printed none
    estimate_gib: float | None = None
    flashinfer_installed: bool | None = None  # where the record names the install (image, backend)

    def rules(self) -> VllmRules:
        return VllmRules.for_version(self.version)

    def v2_runner(self) -> bool:
        return uses_v2_runner(self.rules(), moe=self.experts_per_tok > 0, has_state=self.has_state)

    def sampler_paths(self) -> tuple[SamplerPath, ...]:
        rules = self.rules()
        return sampler_paths(sorts_vocab=rules.sampler_sorts_vocab, flashinfer_by_default=rules.flashinfer_sampler_default,
                             flashinfer_installed=self.flashinfer_installed, v2_runner=self.v2_runner(), v2_copies_logits=rules.v2_sampler_copies_logits)

    def predicted_bytes(self, path: SamplerPath | None = None) -> int:
        """hkv's activation on `path` (default: the likelier one)."""
        shape = ForwardShape(self.hidden, self.intermediate, self.dtype_bytes, self.tp, self.experts_per_tok,
                             self.moe_intermediate)
        sampler = sampler_profile(self.mnbt, self.mns, self.vocab, self.dtype_bytes, path or self.sampler_paths()[0])
        encoder = encoder_outputs_bytes(self.architectures, self.family, self.mnbt, self.hidden, self.dtype_bytes)
        return activation_peak(shape, self.mnbt, sampler.peak_bytes, encoder).bytes

    def graph_estimate(self) -> CudagraphEstimate:
        return cudagraph_estimate(self.layers, self.mns, self.mnbt, moe=self.experts_per_tok > 0)

    def comparable_logged_bytes(self) -> int:
        """The logged figure less the graph estimate it includes, where the log printed that estimate."""
        includes = self.rules().profile_consumed_accounting
        subtract = self.estimate_gib if includes and self.estimate_gib is not None else 0.0
        return int((self.logged_gib - subtract) * GIB)

    def comparable_predicted_bytes(self) -> int:
        """hkv's activation, plus hkv's graph estimate where the logged figure includes one hkv
        cannot take out (0.27+ logs that print no estimate)."""
        rules = self.rules()
        includes = (rules.profile_consumed_accounting and self.estimate_gib is None
                    and graph_estimate_applies(rules, v2_runner=self.v2_runner(), enforce_eager=False))
        return self.predicted_bytes() + (self.graph_estimate().bytes if includes else 0)


ACTIVATION_RECORDS = (
    # 0.10-0.16: the sampler sorts max_num_seqs x vocab (38 B per element at bf16)
    ActivationRecord("r010_qwen3next_80b_2xh200_v0102", "0.10.2", 151936, 2048, 5120, 2, 8192, 1024, 5.58,
                     experts_per_tok=10, moe_intermediate=512, has_state=True),
    ActivationRecord("r018_llmd_gptoss20b_h100", "0.11.0", 201088, 2880, 2880, 1, 8192, 1024, 7.38,
                     experts_per_tok=4, moe_intermediate=2880),
    # r019 printed 7.38 GiB copied from the 20b row (its notes); its own figures give
    # requested 71.26 - weights 64.38 - non-torch 0.13 - available 3.33 = 3.42 GiB
    ActivationRecord("r019_llmd_gptoss120b_h100", "0.11.0", 201088, 2880, 2880, 1, 8192, 1024,
                     round(71.26 - 64.38 - 0.13 - 3.33, 2), experts_per_tok=4, moe_intermediate=2880),
    ActivationRecord("r020_llmd_llama33_70b_fp8_tp2_h100", "0.11.0", 128256, 8192, 28672, 2, 8192, 1024, 4.84),
    ActivationRecord("r021_llmd_llama33_70b_fp8_tp1_h100_negative", "0.11.0", 128256, 8192, 28672, 1, 8192, 1024,
                     4.84),
    ActivationRecord("r022_llmd_llama31_8b_h100", "0.11.0", 128256, 4096, 14336, 1, 8192, 1024, 4.76),
    ActivationRecord("r023_llmd_qwen3_06b_h100", "0.11.0", 151936, 1024, 3072, 1, 8192, 1024, 5.56),
    ActivationRecord("r024_llmd_qwen3_32b_tp1_h100", "0.11.0", 151936, 5120, 25600, 1, 8192, 1024, 5.64),
    ActivationRecord("r025_llmd_qwen3_32b_tp2_h100", "0.11.0", 151936, 5120, 25600, 2, 8192, 1024, 5.64),
    # r026 ran the vllm/vllm-openai:v0.11.0 image (its source names it), which ships FlashInfer
    ActivationRecord("r026_llmd_mistral_small32_h100", "0.11.0", 131072, 5120, 32768, 1, 8192, 1024, 2.12,
                     family="mistral3", architectures=MM, flashinfer_installed=True),
    ActivationRecord("r031_qwen3_8b_fp8_24g_debug", "0.10.2", 151936, 4096, 12288, 1, 2048, 256, 1.40),
    ActivationRecord("r048_vllm21489_gemma3_4b_b200_bench", "0.10.0", 262208, 2560, 10240, 1, 16384, 1024, 9.96,
                     family="gemma3", architectures=MM),
    # 0.17+: top-k/top-p in place (14 B per element)
    # r027, r016, r035 carry no vision tower (vision_profile.py): r027's AWQ repack is not named and
    # the Qwen3.8 configs are not public. With Qwen3.5-4B's public tower and 16,384-token images
    # r027 would be 1.69 GiB against 1.01 logged (the author's image=0 run puts the whole
    # multimodal profile under ~0.5 GiB, so its checkpoint's largest image is likely smaller);
    # with Qwen3.6-27B's tower r016 would be 1.88 (logged 1.84) and r035 (TP 2) 1.31 (logged 1.46).
    ActivationRecord("r027_qwen35_4b_awq_5090_v0180", "0.18.0", 248320, 2560, 9216, 1, 2048, 256, 1.01,
                     family="qwen3_5_text", architectures=MM, has_state=True),
    ActivationRecord("r009_glm52_nvfp4_tp4ep_v026", "0.26.0", 154880, 6144, 12288, 4, 8192, 1024, 6.31,
                     experts_per_tok=8, moe_intermediate=2048),
    ActivationRecord("r012_lfm25_12b_sm90_16g_v026", "0.26.0", 65536, 2048, 8192, 1, 1024, 256, 0.26,
                     has_state=True),
    # 0.27+: the printed activation includes the graph estimate
    ActivationRecord("r016_qwen38_27b_768k_gb10_v0271", "0.27.1", 248320, 5120, 17408, 1, 2048, 256, 3.78,
                     family="qwen3_5_text", architectures=MM, has_state=True, layers=64, estimate_gib=1.94),
    ActivationRecord("r035_club1087_2x5090_qwen38_fp8_breakdown", "0.27.1", 248320, 5120, 17408, 2, 2048, 256, 1.59,
                     family="qwen3_5_text", architectures=MM, has_state=True, layers=64, estimate_gib=0.13),
    ActivationRecord("r008_llama31_8b_a100_v031", "0.31.0", 128256, 4096, 14336, 1, 2048, 256, 1.44, layers=32),
    ActivationRecord("r011_qwen25_05b_4090_wsl_v0271", "0.27.1", 151936, 896, 4864, 1, 2048, 256, 0.25, layers=24),
)
# Logged activations left out: r043-r046 (GLM-5.3-Flash and Qwen3.8-Flash-Next
# configs are not public), r047 (model not named), r051 (the V0 engine, 0.7.2).


@dataclass(frozen=True)
class EstimateRecord:
    """A logged "Estimated CUDA graph memory" and the graph counts its "Profiling CUDA graph
    memory" line printed (or vLLM's default sizes where it printed none)."""

    record_id: str
    layers: int
    piecewise: int
    full: int
    moe: bool
    logged_gib: float
    config: str = ""  # the model: tests/data/vllm_startups/configs/<config>.json or a catalog name
    tp: int = 1

    def live_bytes_per_token(self) -> int:
        """The forward's live set per token on one rank, as hkv's graph estimate reads it."""
        path = CONFIGS / f"{self.config}.json"
        model = load_model_spec(str(path) if path.exists() else self.config)
        shape = forward_shape(model, PlanConfig(tp=self.tp))
        return shape.kept_bytes(1) + shape.forward_extra_bytes(1)

    def predicted_bytes(self) -> int:
        return CudagraphEstimate(self.layers, self.piecewise, self.full, self.moe, self.live_bytes_per_token()).bytes


ESTIMATE_RECORDS = (
    EstimateRecord("r001_qwen35_9b_l40s", 32, 51, 35, False, 0.78, config="qwen3.5-9b", tp=1),
    EstimateRecord("r002_qwen25_7b_v022", 28, 35, 19, False, 0.37, config="qwen2.5-7b-instruct", tp=1),
    EstimateRecord("r003_qwen36_27b_nvfp4_spark", 64, 5, 4, False, 0.61, config="nvidia-qwen3.6-27b-nvfp4", tp=1),
    EstimateRecord("r005_qwen35_4b_v022_gmu05", 32, 51, 35, False, 0.64, config="qwen3.5-4b", tp=1),  # counts: default sizes, max 512
    EstimateRecord("r012_lfm25_12b_sm90_16g_v026", 16, 76, 60, False, 0.58, config="lfm2.5-1.2b-instruct", tp=1),
    EstimateRecord("r050_gpustack251_qwen36_27b_awq_mtp_tp2_v0271", 64, 16, 0, False, 0.36, config="nvidia-qwen3.6-27b-nvfp4", tp=2),
    EstimateRecord("r006_qwen36_35b_nvfp4_wsl_v020", 40, 1, 1, True, 0.36, config="redhatai-qwen3.6-35b-a3b-nvfp4", tp=1),
    EstimateRecord("r014_qwen36_35b_nvfp4_spark_v020", 40, 1, 1, True, 0.43, config="redhatai-qwen3.6-35b-a3b-nvfp4", tp=1),
    EstimateRecord("r007_qwen36_35b_nvfp4_wsl_v0192_negative", 40, 11, 7, True, 1.21, config="redhatai-qwen3.6-35b-a3b-nvfp4", tp=1),
    EstimateRecord("r009_glm52_nvfp4_tp4ep_v026", 78, 51, 51, True, 4.99, config="nvidia-glm-5.2-nvfp4", tp=4),
    EstimateRecord("r017_dsv4_flash_2xspark_tp2_v021", 43, 5, 3, True, 0.55, config="deepseek-v4-flash", tp=2),
    # r015 printed no estimate line, but "--gpu-memory-utilization=0.8000 is equivalent to 0.7924
    # without CUDA graph memory profiling": (0.8 - 0.7924) x 119.63 GiB = 0.91 GiB (+-0.01 from the
    # rounding); counts not printed, vLLM's defaults for max_num_seqs 8 (sizes 1-16, FULL up to 8)
    EstimateRecord("r015_nemotron3_nano_30b_spark_v0202", 52, 5, 4, True, round((0.8 - 0.7924) * 119.63, 2), config="nemotron-3-nano-30b-a3b", tp=1),
)
# Left out: r004 (MiniMax-M3 converted locally, layer count unknown), r013 (DFlash drafter's
# graphs, counts not printed), r016 / r035 / r046 (counts not printed and the models' configs not
# public).


@dataclass(frozen=True)
class NonTorchRecord:
    """A logged non-torch figure: "non-torch memory" up to 0.26, "consumed - weights" from 0.27."""

    record_id: str
    version: str
    tp: int
    logged_gib: float
    linear_attention: bool = False
    compute_capability: tuple[int, int] | None = None

    def predicted_bytes(self) -> int:
        """hkv's shipped point: NVLink on the data-center cards (H100, H200, B200, A100), unified memory on GB10
        (its pinned buffers left out: these logs' models are text-only or not described)."""
        setup = NonTorchSetup(self.tp, consumed_accounting=VllmRules.for_version(self.version).profile_consumed_accounting,
                              nvlink=self.compute_capability in (H100, B200, A100),
                              linear_attention=self.linear_attention, unified_memory=self.compute_capability == GB10)
        return setup.bytes()


H100, H200, B200, SM120, GB10, A100, ADA = (9, 0), (9, 0), (10, 0), (12, 0), (12, 1), (8, 0), (8, 9)
NON_TORCH_RECORDS = (
    NonTorchRecord("r018_llmd_gptoss20b_h100", "0.11.0", 1, 0.13, compute_capability=H100),
    NonTorchRecord("r019_llmd_gptoss120b_h100", "0.11.0", 1, 0.13, compute_capability=H100),
    NonTorchRecord("r021_llmd_llama33_70b_fp8_tp1_h100_negative", "0.11.0", 1, 0.14, compute_capability=H100),
    NonTorchRecord("r022_llmd_llama31_8b_h100", "0.11.0", 1, 0.13, compute_capability=H100),
    NonTorchRecord("r023_llmd_qwen3_06b_h100", "0.11.0", 1, 0.13, compute_capability=H100),
    NonTorchRecord("r024_llmd_qwen3_32b_tp1_h100", "0.11.0", 1, 0.14, compute_capability=H100),
    NonTorchRecord("r026_llmd_mistral_small32_h100", "0.11.0", 1, 0.14, compute_capability=H100),
    NonTorchRecord("r020_llmd_llama33_70b_fp8_tp2_h100", "0.11.0", 2, 0.55, compute_capability=H100),
    NonTorchRecord("r025_llmd_qwen3_32b_tp2_h100", "0.11.0", 2, 0.54, compute_capability=H100),
    NonTorchRecord("r031_qwen3_8b_fp8_24g_debug", "0.10.2", 1, 0.02),
    NonTorchRecord("r048_vllm21489_gemma3_4b_b200_bench", "0.10.0", 1, 0.07, compute_capability=B200),
    NonTorchRecord("r010_qwen3next_80b_2xh200_v0102", "0.10.2", 2, 1.38, True, H200),
    NonTorchRecord("r012_lfm25_12b_sm90_16g_v026", "0.26.0", 1, 0.16, compute_capability=H100),
    NonTorchRecord("r009_glm52_nvfp4_tp4ep_v026", "0.26.0", 4, 0.95, compute_capability=B200),
    NonTorchRecord("r027_qwen35_4b_awq_5090_v0180", "0.18.0", 1, 3.81, True, SM120),
    # 0.27+: consumed - weights (the weights line of the same log)
    NonTorchRecord("r008_llama31_8b_a100_v031", "0.31.0", 1, round(15.26 - 15.0, 2), compute_capability=A100),
    NonTorchRecord("r011_qwen25_05b_4090_wsl_v0271", "0.27.1", 1, round(1.49 - 0.93, 2), compute_capability=ADA),
    NonTorchRecord("r016_qwen38_27b_768k_gb10_v0271", "0.27.1", 1, round(55.99 - 51.35, 2), True, GB10),
    NonTorchRecord("r043_glm53_flash_8xh200_tp8", "0.32.0", 8, round(39.98 - 38.24, 2), True, H200),
)
# Left out: r035 (weights not logged), r044 / r045 / r046 (weights from the authors' summaries,
# not from the log lines), r051 (V0).
