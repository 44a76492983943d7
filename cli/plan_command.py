"""`hkv plan MODEL`: parse -> planner.plan -> render."""

from __future__ import annotations

from typing import Annotated

import typer

from hkv.cli.calibration_options import CalibrateOpt, CalibrationOpt, calibrated
from hkv.cli.engine_options import (
    EngineOpt, MemFractionOpt, SglangVersionOpt, gpu_assumed, parse_engines, refuse_sglang_options_for_vllm,
    sglang_server_args, uses_engines, version_notes,
)
from hkv.cli.errors import handles_errors, user_message
from hkv.cli.list_options import GpuListOpt, TpListOpt, first_gpu, first_tp, is_sweep
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_options import (
    AvailableOpt, AvgLenOpt, BlockSizeOpt, ChunkOpt, ConcurrencyOpt, DraftLayersOpt, DtypeOpt, EagerOpt,
    EmitOpt, FlashInferOpt, GpuMemoryOpt, KvDtypeOpt, LayoutOpt, MaxLenOpt, MaxSeqsOpt, MnbtOpt,
    NoPrefixOpt, OutputLenOpt, PlanOptions, PpOpt, PrefixOpt, QuantOpt, SpecTokensOpt, SsmDtypeOpt,
    TextOnlyOpt, UtilOpt, VllmLogOpt, VllmVersionOpt, WeightsOpt, assumed_note,
)
from hkv.cli.plan_svg import SvgOpt, checked_svg_path
from hkv.cli.render_startup import note_refusals
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.memory_budget import fit_warning
from hkv.planner.plan import plan
from hkv.planner.plan_json import plan_to_dict
from hkv.planner.startup.vllm_verdict import vllm_startup

# Above: what one vLLM plan needs. The other paths (engines side by side, a sweep, --emit, the
# human tables, --svg) import their writers where they branch off, so that the common
# `hkv plan MODEL --format json` loads neither SGLang's planner nor rich (issue 34: cold start).

ModelArg = Annotated[str, typer.Argument(
    help="catalog name (gemma-3-27b), HF id, model directory or config.json")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]


@handles_errors
def plan_command(
    model: ModelArg,
    gpu: GpuListOpt = None, gpu_memory: GpuMemoryOpt = None, gpu_memory_utilization: UtilOpt = None,
    available_kv_memory: AvailableOpt = None, tp: TpListOpt = None, pp: PpOpt = None,
    dtype: DtypeOpt = None, kv_cache_dtype: KvDtypeOpt = None, mamba_ssm_dtype: SsmDtypeOpt = None,
    block_size: BlockSizeOpt = None, max_model_len: MaxLenOpt = None,
    max_num_batched_tokens: MnbtOpt = None, max_num_seqs: MaxSeqsOpt = None, output_len: OutputLenOpt = None,
    hkv_prefill_chunk_len: ChunkOpt = None, speculative_tokens: SpecTokensOpt = None,
    draft_layers: DraftLayersOpt = None,
    vllm_log: VllmLogOpt = None, vllm_version: VllmVersionOpt = None,
    expected_avg_seq_len: AvgLenOpt = None,
    enforce_eager: EagerOpt = False, quantization: QuantOpt = None, weights_memory: WeightsOpt = None,
    language_model_only: TextOnlyOpt = False, flashinfer: FlashInferOpt = None,
    concurrency: ConcurrencyOpt = None, no_prefix_caching: NoPrefixOpt = False,
    enable_prefix_caching: PrefixOpt = False,
    layout: LayoutOpt = None, emit: EmitOpt = None, output_format: FormatOpt = OutputFormat.human,
    svg: SvgOpt = None, engine: EngineOpt = None, sglang_version: SglangVersionOpt = None,
    mem_fraction_static: MemFractionOpt = None, calibration: CalibrationOpt = None, calibrate: CalibrateOpt = None,
) -> None:
    """Derive KV cache groups, pages and pool sizes for every layout and predict capacity.

    A model that does not fit the GPU is said so on stderr (exit 0: the plan shows why).

    Examples: hkv plan gemma-3-27b --gpu h100 ; hkv plan gpt-oss-120b --gpu h200 --max-model-len 32768
    --format json ; hkv plan ./my-model --available-kv-memory 20GiB --layout vllm ;
    hkv plan gemma-3-27b --gpu h100,h200,b200 --tp 1,2,4 ; hkv plan gemma-3-27b --gpu h100 --emit vllm ;
    hkv plan gpt-oss-120b --gpu h100 --engine vllm,sglang --max-model-len 32768 ;
    hkv plan qwen3-next-80b-a3b --gpu h200 --tp 2 --emit sglang ;
    hkv plan qwen3-8b --gpu h100 --calibrate my-vllm-startup.log
    """
    engines = parse_engines(engine)
    svg_path = checked_svg_path(svg, sweep=is_sweep(gpu, tp), emit=emit is not None)
    options = PlanOptions.from_args(locals(), gpu=first_gpu(gpu), tp=first_tp(tp))
    cfg = calibrated(options.plan_config(), calibration, calibrate)
    for line in version_notes(vllm_version, sglang_version):
        note(line)
    spec = load_model_spec(model)
    if spec.source_note:  # the Hub could not be asked: say what the plan rests on instead
        note(spec.source_note)
    if uses_engines(engines, emit):
        from hkv.cli.plan_engines import write_engine_plans

        args = sglang_server_args(cfg, sglang_version, mem_fraction_static, max_num_seqs)
        write_engine_plans(spec, cfg, engines, args, emit, gpu_assumed(options.gpu, gpu_memory), output_format,
                           sweep=is_sweep(gpu, tp), svg=svg is not None)
        return
    refuse_sglang_options_for_vllm(sglang_version, mem_fraction_static,
                                   "add --engine vllm,sglang (or sglang) or --emit sglang")
    if is_sweep(gpu, tp):
        from hkv.cli.plan_sweep import write_sweep

        write_sweep(spec, cfg, gpu, tp, options, emit, output_format)
        return
    result = plan(spec, cfg)
    assumed = options.assumed(result.budget)
    if emit is not None:
        from hkv.cli.plan_emit import write_serve

        write_serve(result, emit, output_format, assumed)
        return
    warning = fit_warning(spec, result.budget)
    if warning is not None:
        note(user_message(warning))
    elif result.primary.capacity.max_num_requests == 0:
        cap = result.primary.capacity
        note(f"one request of {cap.max_model_len:,} tokens does not fit the {cfg.primary_layout} layout; "
             f"the longest that fits is {cap.max_context_len:,} tokens (--max-model-len)")
    startup = vllm_startup(result)
    note_refusals((startup,))
    if output_format is OutputFormat.json:
        write_json({**plan_to_dict(result), "assumed": assumed})
    else:
        from hkv.cli.render_plan import render_plan

        line = assumed_note(assumed)
        if line:
            note(line)
        render_plan(result, stdout_console(), startup)
    if svg_path is not None:
        from hkv.cli.plan_svg import save_svg

        save_svg(result, svg_path)
