"""`hkv explain-log FILE|-`: read a vLLM or SGLang start-up log (the engine is told from its lines),
re-plan with exactly its inputs, check each number it printed against hkv's reproduction, and
explain them.

The memory terms and anomalies inform; they never change the exit code. Exit codes: 0 every
logged number reproduced; 1 bad input (one stderr line: an unreadable file, a
log with no line hkv reads, no budget line and no --available-kv-memory, an unknown model); 3 some
logged number cannot be reproduced (the checks show which).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from hkv.cli.engine_options import (
    MemFractionOpt,
    SglangVersionOpt,
    refuse_sglang_options_for_vllm,
    sglang_given,
    version_notes,
)
from hkv.cli.errors import CheckFailedError, UserError, handles_errors
from hkv.cli.log_file import read_log_text
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_options import (
    AvailableOpt,
    BlockSizeOpt,
    DtypeOpt,
    GpuOpt,
    KvDtypeOpt,
    MaxLenOpt,
    MaxSeqsOpt,
    MnbtOpt,
    NoPrefixOpt,
    PlanOptions,
    PpOpt,
    PrefixOpt,
    SpecTokensOpt,
    SsmDtypeOpt,
    TpOpt,
    VllmLogOpt,
    VllmVersionOpt,
)
from hkv.cli.render_log_explanation import explanation_to_dict, render_explanation
from hkv.cli.render_sglang_log_explanation import render_sglang_explanation, sglang_explanation_to_dict
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.engines.log_engine import SGLANG, detect_log_engine
from hkv.planner.engines.sglang.log import read_sglang_log
from hkv.planner.engines.sglang.log_explanation import explain_sglang_log
from hkv.planner.engines.vllm.log import read_vllm_log
from hkv.planner.engines.vllm.log_explanation import explain_log

LogArg = Annotated[str, typer.Argument(help="vLLM or SGLang start-up log file (or a paste of some of its lines); "
                                            "- reads standard input")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="catalog name, HF id, model directory or config.json [default: the log's model]")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]

# PlanOptions field -> PlanConfig field, where the names differ.
_CONFIG_FIELD = {"available_kv_memory": "available_kv_memory_bytes", "layout": "primary_layout"}


@handles_errors
def explain_log_command(
    log_file: LogArg, model: ModelOpt = None, gpu: GpuOpt = None, available_kv_memory: AvailableOpt = None,
    tp: TpOpt = None, pp: PpOpt = None, dtype: DtypeOpt = None, kv_cache_dtype: KvDtypeOpt = None,
    mamba_ssm_dtype: SsmDtypeOpt = None, block_size: BlockSizeOpt = None, max_model_len: MaxLenOpt = None,
    max_num_batched_tokens: MnbtOpt = None, max_num_seqs: MaxSeqsOpt = None,
    speculative_tokens: SpecTokensOpt = None, vllm_log: VllmLogOpt = None, vllm_version: VllmVersionOpt = None,
    no_prefix_caching: NoPrefixOpt = False, enable_prefix_caching: PrefixOpt = False,
    mem_fraction_static: MemFractionOpt = None, sglang_version: SglangVersionOpt = None,
    output_format: FormatOpt = OutputFormat.human,
) -> None:
    """Explain a vLLM start-up log: each KV cache number it printed next to hkv's reproduction
    (✓ or the difference); the memory budget term by term (weights, activation peak, non-torch,
    CUDA graph estimate, requested, available: logged next to hkv's blind budget, its source and
    band), whether the log's own arithmetic adds up, and anomalies (LoRA, a KV connector, memory
    in use at start-up, unified memory); then why: groups and padding, block size, budget, blocks
    per request, sustained concurrency and physical limit, and what the other layouts would give. Options fill
    in what the log lacks and override what it says. Exit 3 when a logged number cannot be
    reproduced. Each option's default is what the log says, then the default shown.

    An SGLang log (told from its lines) is checked pool by pool: its full and sliding-window
    pools, state slots and max_running_requests re-sized with its server_args at the budget its
    "Load weight begin/end" free memory leaves (or --available-kv-memory as that budget, or the
    budget its full pool pins); --tp, --max-model-len, --max-num-seqs, --kv-cache-dtype,
    --mem-fraction-static and --sglang-version override its server_args.

    Examples: hkv explain-log vllm.log ; docker logs vllm 2>&1 | hkv explain-log - --format json ;
    hkv explain-log pasted.txt --model llama-4-scout-17b-16e-instruct --max-num-batched-tokens 8192 ;
    hkv explain-log sglang.log --model gpt-oss-120b
    """
    options = PlanOptions.from_args(locals())
    cfg = options.plan_config()  # parses and validates what was given
    for line in version_notes(vllm_version, sglang_version):
        note(line)
    given = _given_fields(options, cfg)
    lines = read_log_text(log_file).splitlines()
    if detect_log_engine(lines) == SGLANG:
        _explain_sglang(lines, model, given, sglang_given(given, sglang_version, mem_fraction_static),
                        output_format)
        return
    refuse_sglang_options_for_vllm(sglang_version, mem_fraction_static, "this is a vLLM log")
    log = read_vllm_log(lines)
    model_name = model or log.args.get("model")
    if not model_name:
        raise UserError("the log names no model (no 'non-default args' or engine config line): pass --model")
    spec = load_model_spec(str(model_name))
    explanation = explain_log(log, spec, given)
    if explanation.version_note is not None:
        note(explanation.version_note)
    if output_format is OutputFormat.json:
        write_json(explanation_to_dict(explanation))
    else:
        render_explanation(explanation, stdout_console())
    if not explanation.ok:
        failed = [c.name for c in explanation.checks if not c.ok]
        raise CheckFailedError(f"{len(failed)} logged number(s) not reproduced: {', '.join(failed)}")


def _explain_sglang(lines: list[str], model: str | None, given: dict[str, Any], sglang_args: dict[str, Any],
                    output_format: OutputFormat) -> None:
    log = read_sglang_log(lines)
    model_name = model or log.model_path
    if not model_name:
        raise UserError("the log names no model (no 'server_args=' line): pass --model")
    spec = load_model_spec(model_name)
    explanation = explain_sglang_log(log, spec, sglang_args, given.get("available_kv_memory_bytes"))
    if output_format is OutputFormat.json:
        write_json(sglang_explanation_to_dict(explanation, spec))
    else:
        render_sglang_explanation(explanation, spec, stdout_console())
    if not explanation.ok:
        failed = [c.name for c in explanation.checks if not c.ok]
        raise CheckFailedError(f"{len(failed)} logged number(s) not reproduced: {', '.join(failed)}")


def _given_fields(options: PlanOptions, cfg: Any) -> dict[str, Any]:
    """The PlanConfig fields the user set on the command line (parsed values from `cfg`)."""
    given = {}
    for name, value in vars(options).items():
        if value is None or value is False:
            continue
        field = _CONFIG_FIELD.get(name, name)
        if name in ("no_prefix_caching", "enable_prefix_caching"):
            field = "enable_prefix_caching"
        given[field] = getattr(cfg, field)
    return given
