"""`hkv verify --model DIR`: plan the model with hkv's `vllm` layout, start the real vLLM engine on it
with the plan's settings, and compare what vLLM logs and does with what hkv predicts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hkv.cli.choices import PlanLayout
from hkv.cli.errors import CheckFailedError, UserError, handles_errors, user_message
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_options import (
    AvailableOpt, BlockSizeOpt, DtypeOpt, GpuMemoryOpt, GpuOpt, KvDtypeOpt, MaxLenOpt, MaxSeqsOpt, MnbtOpt,
    NoPrefixOpt, OutputLenOpt, PlanOptions, PpOpt, SsmDtypeOpt, TpOpt, UtilOpt,
)
from hkv.cli.render_verify import render_verify, verify_to_dict
from hkv.runtime.verify.sustained_search import search_sustained
from hkv.runtime.verify.hkv_expectation import expect_sustained
from hkv.runtime.verify.verify_checks import verify_checks
from hkv.runtime.verify.vllm_engine import VllmEngine, resolve_vllm_python
from hkv.runtime.verify.vllm_engine_args import engine_settings, platform_plan_config
from hkv.runtime.verify.vllm_startup_log import parse_startup_log
from hkv.model_specs.model_spec import ModelSpec
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.budget.memory_budget import compute_memory_budget, does_not_fit_error
from hkv.planner.plan import plan

ModelOpt = Annotated[str, typer.Option(
    "--model", help="model directory (or HF id) vLLM can load; hkv reads its config.json")]
VllmPythonOpt = Annotated[str | None, typer.Option(
    "--vllm-python", help="Python interpreter that imports vllm [default: this one, if it can]")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]


@handles_errors
def verify_command(
    model: ModelOpt, vllm_python: VllmPythonOpt = None,
    gpu: GpuOpt = None, gpu_memory: GpuMemoryOpt = None, gpu_memory_utilization: UtilOpt = None,
    available_kv_memory: AvailableOpt = None, tp: TpOpt = None, pp: PpOpt = None,
    dtype: DtypeOpt = None, kv_cache_dtype: KvDtypeOpt = None, mamba_ssm_dtype: SsmDtypeOpt = None,
    block_size: BlockSizeOpt = None, max_model_len: MaxLenOpt = None,
    max_num_batched_tokens: MnbtOpt = None, max_num_seqs: MaxSeqsOpt = None, output_len: OutputLenOpt = None,
    no_prefix_caching: NoPrefixOpt = False, output_format: FormatOpt = OutputFormat.human,
) -> None:
    """Check hkv's `vllm` layout against the real vLLM engine: its logged capacity line, num_blocks,
    block size, padding messages, in-flight tokens, and the sustained concurrency it really reaches
    (N max-length requests with zero preemptions). Exit 3 when any of them disagrees.

    vLLM runs in a subprocess under --vllm-python. Its KV cache gets exactly the plan's budget
    (kv_cache_memory_bytes); on a machine without the planned GPU give --available-kv-memory.

    Examples: hkv verify --model ./tiny-gemma3 --available-kv-memory 64MiB --max-model-len 2048
    --vllm-python .venv-vllm/bin/python ; hkv verify --model ./Llama-4-Scout --gpu h100 --tp 8
    """
    options = PlanOptions.from_args(locals(), layout=PlanLayout("vllm"))
    cfg = options.plan_config()
    python = resolve_vllm_python(vllm_python)
    spec = load_model_spec(model)
    # What vLLM is told comes from the budget; what hkv predicts comes from plan(): a planner that
    # gets its figures wrong is then caught, not handed to the engine.
    budget = compute_memory_budget(spec, cfg)
    if not budget.fits:
        raise UserError(user_message(does_not_fit_error(spec, budget)))
    note(f"starting vLLM under {python} (start-up takes a while)")
    with VllmEngine(python) as engine:
        # the block size (and backends) of the platform vLLM runs on: on CPU, CPU_ATTN's
        cfg = platform_plan_config(spec, cfg, engine.platform["device_type"])
        report = plan(spec, cfg).primary
        max_len = report.layout.max_model_len
        output_len = report.capacity.sustained_output_len  # the planner's split of a max-length request
        settings = engine_settings(_vllm_model_ref(model, spec), spec.dtype_bytes, cfg, budget, max_len,
                                   engine.platform["device_type"])
        ready = engine.start(settings.llm_args)
        startup = parse_startup_log(engine.log_lines)

        runs: list[dict[str, int]] = []

        def runs_clean(num_requests: int) -> bool:
            ran = engine.run(num_requests, max_len - output_len, output_len)
            runs.append({k: ran[k] for k in ("num_requests", "num_preemptions", "max_running")})
            note(f"{num_requests} requests of {max_len:,} tokens: at most {ran['max_running']} running at once, "
                 f"{ran['num_preemptions']} preemptions")
            return ran["num_preemptions"] == 0 and ran["max_running"] == num_requests

        # hkv's figures under the step budget vLLM really has (on CPU twice the plan's)
        hkv = expect_sustained(report.layout, ready["max_num_batched_tokens"], budget.max_num_seqs, output_len)
        search = search_sustained(runs_clean, hkv.predicted, budget.max_num_seqs)
    request_lens = (max_len - output_len, output_len)
    after = next((r["num_preemptions"] for r in runs if r["num_requests"] == search.sustained + 1), None)
    checks = verify_checks(report, settings, ready, startup, search, request_lens, hkv, after)
    doc = verify_to_dict(model, engine.platform, settings, ready, request_lens, runs, checks)
    if output_format is OutputFormat.json:
        write_json(doc)
    else:
        render_verify(doc, stdout_console())
    failed = [c for c in checks if c.ok is False]
    if failed:
        raise CheckFailedError("MISMATCH between hkv's plan and vLLM: " + "; ".join(
            f"{c.name} predicted {c.predicted} measured {c.measured}" for c in failed))


def _vllm_model_ref(model: str, spec: ModelSpec) -> str:
    """What vLLM loads: an absolute folder for a local model (vLLM runs with cwd=/), else the HF id."""
    path = Path(model).expanduser()
    if path.is_file():
        path = path.parent  # a config.json: its folder
    if path.is_dir():
        return str(path.resolve())
    return spec.model_id
