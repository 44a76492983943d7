"""`hkv run --model DIR --prompt-file FILE`: generate with the model on hkv's paged KV cache.

parse -> check every input (files, tokenizer, lengths, memory, plan) -> load weights -> generate
-> report. Nothing reaches stdout before every input has been checked.

Exit codes (cli/errors.py): 0 ok, 1 bad input (one stderr line), 2 usage, 3 the run and the plan
disagree (the report shows which check failed; see hkv.runtime.live.run_report for the checks).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hkv.cli.choices import Device, PromptFormat, RunLayout
from hkv.cli.errors import CheckFailedError, flag_of, handles_errors
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_options import SsmDtypeOpt
from hkv.planner.budget.gpu_table import NO_GPU_MAX_NUM_BATCHED_TOKENS
from hkv.planner.plan_config import (
    ALLOW_LONG_ENV, DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_MAX_NUM_SEQS,
    allow_long_max_model_len_from_env,
)
from hkv.planner.sizes import format_bytes, parse_size
from hkv.runtime.live.prompt_file import read_prompt_file
from hkv.runtime.live.run_config import DEFAULT_CPU_KV_MEMORY_BYTES, RunConfig, SamplingConfig

if TYPE_CHECKING:
    from hkv.runtime.live.live_run import RunOutcome
    from hkv.runtime.live.live_setup import RunOptions

_RUN_DEFAULTS = RunConfig()
_SAMPLING_DEFAULTS = SamplingConfig()

ModelOpt = Annotated[str, typer.Option("--model", help="local model directory (config.json + *.safetensors)")]
PromptFileOpt = Annotated[str, typer.Option("--prompt-file", help="plain text (one prompt) or JSONL: "
                                            '{"prompt": "..."} or {"token_ids": [...]} per line')]
PromptFormatOpt = Annotated[PromptFormat, typer.Option(  # type: ignore[valid-type]
    "--prompt-format", help="auto: JSONL when the file's first non-blank character is {, else text")]
MaxNewOpt = Annotated[int, typer.Option("--max-new-tokens", help="tokens to generate per prompt at most")]
TemperatureOpt = Annotated[float, typer.Option("--temperature", help="0 = greedy")]
TopPOpt = Annotated[float, typer.Option("--top-p", help="nucleus sampling mass (with --temperature > 0)")]
SeedOpt = Annotated[int, typer.Option("--seed", help="sampling seed")]
LayoutOpt = Annotated[RunLayout, typer.Option("--layout", help="KV layout")]  # type: ignore[valid-type]
MaxLenOpt = Annotated[int | None, typer.Option(
    "--max-model-len", help=f"longest request, at most the model's positions unless {ALLOW_LONG_ENV}=1 "
                            "[default: the model's]")]
KvMemoryOpt = Annotated[str | None, typer.Option(
    "--kv-memory", help=f"KV cache SIZE [default: {format_bytes(DEFAULT_CPU_KV_MEMORY_BYTES)} on cpu; "
                        "on cuda "
                        "free memory x --gpu-memory-utilization - weights]")]
UtilOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-utilization",
    help=f"cuda: share of free memory for weights + KV [default: {DEFAULT_GPU_MEMORY_UTILIZATION}]")]
MaxSeqsOpt = Annotated[int, typer.Option("--max-num-seqs", help="running requests at most")]
MnbtOpt = Annotated[int | None, typer.Option(
    "--max-num-batched-tokens",
    help=f"tokens per step, chunked prefill beyond [default: {NO_GPU_MAX_NUM_BATCHED_TOKENS}]")]
BlockSizeOpt = Annotated[int, typer.Option("--block-size", help="tokens per KV block")]
DeviceOpt = Annotated[Device, typer.Option(  # type: ignore[valid-type]
    "--device", help="where the model runs")]
FillOpt = Annotated[bool, typer.Option(
    "--fill", help="also measure sustained concurrency: run N copies of the first prompt at once (EOS "
                   "ignored) for N around the plan's prediction, through the real model, and compare")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]


@handles_errors
def run_command(
    model: ModelOpt, prompt_file: PromptFileOpt,
    prompt_format: PromptFormatOpt = PromptFormat("auto"),  # type: ignore[assignment]
    max_new_tokens: MaxNewOpt = _RUN_DEFAULTS.max_new_tokens,
    temperature: TemperatureOpt = _SAMPLING_DEFAULTS.temperature, top_p: TopPOpt = _SAMPLING_DEFAULTS.top_p,
    seed: SeedOpt = _SAMPLING_DEFAULTS.seed,
    layout: LayoutOpt = RunLayout("hkv"),  # type: ignore[assignment]
    max_model_len: MaxLenOpt = None,
    kv_memory: KvMemoryOpt = None, gpu_memory_utilization: UtilOpt = None,
    max_num_seqs: MaxSeqsOpt = DEFAULT_MAX_NUM_SEQS, max_num_batched_tokens: MnbtOpt = None,
    block_size: BlockSizeOpt = DEFAULT_BLOCK_SIZE,
    device: DeviceOpt = Device("cpu"),  # type: ignore[assignment]
    mamba_ssm_dtype: SsmDtypeOpt = None,
    fill_cache: FillOpt = False, output_format: FormatOpt = OutputFormat.human,
) -> None:
    """Generate with a local model whose attention reads and writes hkv's paged KV cache, then
    compare what the cache held with the plan. Exit 3 when they disagree.

    Examples: hkv run --model ./gemma-3-1b-it --prompt-file prompt.txt ; hkv run --model ./m
    --prompt-file prompts.jsonl --format json --fill --kv-memory 64MiB
    """
    # torch and transformers load here, not at import: `hkv plan` must start without them
    from hkv.cli.render_run import RunProgress, render_report, render_timings
    from hkv.runtime.live.live_run import generate
    from hkv.runtime.live.live_setup import (
        RunOptions, check_device, check_prompts_fit, check_state_dtypes, encode_prompts, kv_memory_budget,
        load_runner, open_model, plan_run,
    )
    from hkv.runtime.live.run_report import build_report
    from hkv.runtime.live.sustained_fill import fill

    prompts = read_prompt_file(prompt_file, prompt_format.value)
    sampling = SamplingConfig(temperature, top_p, seed)
    options = RunOptions(
        device=device.value, layout=layout.value,
        kv_memory_bytes=None if kv_memory is None
        else parse_size(kv_memory, option=flag_of("kv_memory_bytes")),
        gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
        allow_long_max_model_len=allow_long_max_model_len_from_env(), block_size=block_size,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        mamba_ssm_dtype="auto" if mamba_ssm_dtype is None else mamba_ssm_dtype.value)
    RunConfig(max_new_tokens=max_new_tokens)  # checks it before anything is loaded
    torch_device = check_device(options.device)
    files = open_model(model)
    prompt_ids = encode_prompts(files, prompts)
    kv_bytes = kv_memory_budget(files, options)
    the_plan = plan_run(files, options, kv_bytes)
    check_prompts_fit(prompt_ids, the_plan, max_new_tokens)
    check_state_dtypes(files, the_plan, options.mamba_ssm_dtype)
    config = RunConfig(max_new_tokens=max_new_tokens, sampling=sampling,
                       max_num_batched_tokens=the_plan.budget.max_num_batched_tokens,
                       max_num_seqs=the_plan.budget.max_num_seqs, eos_token_ids=files.eos_token_ids)
    assumed = _assumed(options, kv_bytes)
    human = output_format is OutputFormat.human
    progress = RunProgress(files.tokenizer, len(prompt_ids), show=human and sys.stderr.isatty(), stream=human)
    try:
        with progress.loading():
            runner = load_runner(files, the_plan, torch_device, options.mamba_ssm_dtype)
        outcome = generate(runner, prompt_ids, config, progress)
        progress.close()
        fill_outcome = fill(runner, prompt_ids[0], config, on_trial=_note_trial) if fill_cache else None
    finally:
        progress.close()
    layout_obj = the_plan.primary.layout
    longest = max(len(p) for p in prompt_ids)
    request_lens = (longest, min(max_new_tokens, layout_obj.max_model_len - longest))
    report = build_report(layout_obj, kv_bytes, runner.kv_cache.num_bytes, request_lens, config, outcome,
                          fill_outcome)
    if human:
        console = stdout_console()
        render_timings(outcome, progress.load_s, console)
        render_report(report, console)
        if assumed:
            note(_assumed_note(assumed, options.device))
    else:
        write_json({
            "schema_version": 1, "model": str(files.path), "model_type": files.spec.model_type,
            "device": str(torch_device), "dtype": str(files.dtype).removeprefix("torch."), "assumed": assumed,
            "generations": _generations(outcome, files.tokenizer),
            "timings": _timings(outcome, progress.load_s), "report": asdict(report),
        })
    if not report.agree:
        failed = [c for c in report.checks if not c.ok]
        raise CheckFailedError("MISMATCH between the plan and the run: " + "; ".join(
            f"{c.name}: predicted {c.predicted}, measured {c.measured}" for c in failed))


def _note_trial(trial: Any) -> None:
    note(f"fill: {trial.num_requests} copies at once: at most {trial.peak_running} running, "
         f"{trial.num_preemptions} preemptions")


def _assumed(options: RunOptions, kv_bytes: int) -> dict[str, Any]:
    """The memory default the run used when the user chose none (said on stderr / in JSON)."""
    if options.kv_memory_bytes is not None:
        return {}
    if options.device == "cpu":
        return {"kv_memory_bytes": kv_bytes}
    if options.gpu_memory_utilization is None:
        return {"gpu_memory_utilization": DEFAULT_GPU_MEMORY_UTILIZATION}
    return {}


def _assumed_note(assumed: dict[str, Any], device: str) -> str:
    (field, value), = assumed.items()  # one memory default per device
    shown = format_bytes(value) if field.endswith("_bytes") else str(value)
    return f"no {flag_of(field)} given: used {shown} (the {device} default)"


def _generations(outcome: RunOutcome, tokenizer: Any | None) -> list[dict[str, Any]]:
    rows = []
    for i, g in enumerate(outcome.generations):
        row: dict[str, Any] = {"index": i, "prompt_tokens": len(g.prompt_token_ids),
                               "token_ids": g.output_token_ids, "finish_reason": g.finish_reason}
        if tokenizer is not None:
            row["text"] = tokenizer.decode(g.output_token_ids, skip_special_tokens=True)
        rows.append(row)
    return rows


def _timings(outcome: RunOutcome, load_s: float) -> dict[str, Any]:
    t = outcome.timings
    return {"load_s": load_s, "num_steps": t.num_steps, "total_s": t.total_s,
            "prefill_tokens": t.prefill_tokens, "prefill_s": t.prefill_s,
            "prefill_tokens_per_s": t.prefill_tokens_per_s, "decode_tokens": t.decode_tokens,
            "decode_s": t.decode_s, "decode_tokens_per_s": t.decode_tokens_per_s}
