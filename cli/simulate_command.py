"""`hkv simulate MODEL (--workload SPEC | --trace FILE)`: plan, then replay through the runtime."""

from __future__ import annotations

import sys
from dataclasses import asdict, replace
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hkv.cli.choices import ALL_LAYOUTS, SimulateLayout
from hkv.cli.errors import CheckFailedError, UserError, handles_errors
from hkv.cli.output import OutputFormat, note, stderr_console, stdout_console, write_json
from hkv.cli.plan_options import (
    AvailableOpt, AvgLenOpt, BlockSizeOpt, ChunkOpt, DraftLayersOpt, DtypeOpt, EagerOpt, FlashInferOpt, GpuMemoryOpt, GpuOpt,
    KvDtypeOpt, MaxLenOpt, MaxSeqsOpt, MnbtOpt, NoPrefixOpt, OutputLenOpt, PlanOptions, PpOpt, PrefixOpt,
    QuantOpt, SpecTokensOpt, SsmDtypeOpt, TextOnlyOpt, TpOpt, UtilOpt, VllmLogOpt, VllmVersionOpt, WeightsOpt,
    assumed_note,
)
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.block_fit import check_pools_hold_a_block
from hkv.planner.budget.memory_budget import does_not_fit_error
from hkv.planner.plan import plan
from hkv.planner.plan_config import LAYOUT_NAMES
from hkv.planner.vllm_layout import layout_prefix_caching
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy

ModelArg = Annotated[str, typer.Argument(help="catalog name, HF id, model directory or config.json")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]
WorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", help="synthetic workload, e.g. shared-prefix:n=1000,prefix=2048,prompt=256,output=128")]
TraceOpt = Annotated[str | None, typer.Option("--trace", help="JSONL trace file")]
SimLayoutOpt = Annotated[SimulateLayout, typer.Option(  # type: ignore[valid-type]
    "--layout", help="layout to simulate, or all")]
ProbeOpt = Annotated[bool, typer.Option(
    "--probe-capacity", help="admit max-length requests until one does not fit (the gate), and measure "
                             "sustained concurrency through the real scheduler; compare with the plan "
                             "(exit 3 when they differ)")]
SweepOpt = Annotated[bool, typer.Option(
    "--sweep-split", help="partitioned: try pool splits and report the best for the workload")]
EvictionOpt = Annotated[EvictionPolicy, typer.Option("--eviction", help="eviction policy")]


@handles_errors
def simulate_command(
    model: ModelArg, workload: WorkloadOpt = None, trace: TraceOpt = None,
    layout: SimLayoutOpt = SimulateLayout("hkv"),  # type: ignore[assignment]
    probe_capacity_flag: ProbeOpt = False, sweep_split: SweepOpt = False,
    eviction: EvictionOpt = EvictionPolicy.GROUP_AWARE,
    gpu: GpuOpt = None, gpu_memory: GpuMemoryOpt = None, gpu_memory_utilization: UtilOpt = None,
    available_kv_memory: AvailableOpt = None, tp: TpOpt = None, pp: PpOpt = None,
    dtype: DtypeOpt = None, kv_cache_dtype: KvDtypeOpt = None, mamba_ssm_dtype: SsmDtypeOpt = None,
    block_size: BlockSizeOpt = None, max_model_len: MaxLenOpt = None,
    max_num_batched_tokens: MnbtOpt = None, max_num_seqs: MaxSeqsOpt = None, output_len: OutputLenOpt = None,
    hkv_prefill_chunk_len: ChunkOpt = None, speculative_tokens: SpecTokensOpt = None,
    draft_layers: DraftLayersOpt = None,
    vllm_log: VllmLogOpt = None, vllm_version: VllmVersionOpt = None,
    expected_avg_seq_len: AvgLenOpt = None,
    enforce_eager: EagerOpt = False, quantization: QuantOpt = None, weights_memory: WeightsOpt = None,
    language_model_only: TextOnlyOpt = False, flashinfer: FlashInferOpt = None,
    no_prefix_caching: NoPrefixOpt = False, enable_prefix_caching: PrefixOpt = False,
    output_format: FormatOpt = OutputFormat.human,
) -> None:
    """Replay a workload through the real hybrid KV cache manager and scheduler (no model).

    A model whose weights do not fit the GPU, or a KV budget that holds no block, is an error.

    Examples: hkv simulate gemma-3-27b --gpu h100 --workload shared-prefix:n=2000,prefix=2048,prompt=256,output=64
    --layout all ; hkv simulate gpt-oss-120b --gpu h100 --probe-capacity --layout all
    """
    # The runtime is imported here, not at module level, so `hkv plan` starts without it.
    from hkv.runtime.scheduler.scheduler import SchedulerConfig
    from hkv.runtime.simulation.simulator import SimulationConfig
    from hkv.runtime.simulation.trace_file import read_trace
    from hkv.runtime.simulation.workload_gen import generate_workload
    from hkv.runtime.simulation.workload_spec import parse_workload

    options = PlanOptions.from_args(locals(), layout=None)
    if not probe_capacity_flag and (workload is None) == (trace is None):
        raise UserError("give exactly one of --workload SPEC or --trace FILE (or --probe-capacity)")
    cfg = options.plan_config()
    spec = load_model_spec(model)
    the_plan = plan(spec, cfg)
    if not the_plan.budget.fits:
        raise does_not_fit_error(spec, the_plan.budget)
    names = [n for n in (LAYOUT_NAMES if layout.value == ALL_LAYOUTS else [layout.value])
             if n in the_plan.reports]
    for name in names:
        check_pools_hold_a_block(the_plan.reports[name].layout, the_plan.budget.available_bytes)
    assumed = options.assumed(the_plan.budget)
    if probe_capacity_flag:
        _probe(the_plan, names, output_format, assumed)
        return
    requests = read_trace(trace) if trace else generate_workload(parse_workload(workload or ""))
    too_long = [r for r in requests if r.prompt_len + 1 > the_plan.primary.layout.max_model_len]
    if too_long:
        raise UserError(f"{len(too_long)} request(s) exceed --max-model-len "
                        f"{the_plan.primary.layout.max_model_len:,} (first: {too_long[0].request_id}, "
                        f"{too_long[0].prompt_len:,} prompt tokens); raise --max-model-len")
    sim_cfg = SimulationConfig(
        scheduler=SchedulerConfig(the_plan.budget.max_num_batched_tokens, the_plan.budget.max_num_seqs),
        cache=CacheConfig(enable_caching=cfg.enable_prefix_caching is not False, eviction_policy=eviction))
    if sweep_split:
        _sweep(spec, cfg, requests, sim_cfg, output_format, assumed)
        return
    reports = []
    for name in names:
        caching = replace(sim_cfg.cache, enable_caching=layout_prefix_caching(name, spec, cfg))
        reports.append(_run_one(the_plan.reports[name].layout, requests, replace(sim_cfg, cache=caching),
                                output_format))
        if reports[-1].interrupted:
            break
    if output_format is OutputFormat.json:
        write_json({"schema_version": 1, "model": spec.name, "assumed": assumed,
                    "reports": [asdict(r) for r in reports]})
    else:
        from hkv.cli.render_simulation import render_simulation

        _note_assumed(assumed)
        render_simulation(reports, stdout_console())
    if any(r.interrupted for r in reports):
        raise typer.Exit(130)


def _note_assumed(assumed) -> None:
    """Human output: the defaults the user did not choose, on stderr, once the results are in."""
    line = assumed_note(assumed)
    if line:
        note(line)


def _run_one(layout, requests, sim_cfg, output_format):
    from hkv.runtime.simulation.simulator import Simulator

    sim = Simulator(layout, requests, sim_cfg)
    show = output_format is OutputFormat.human and sys.stderr.isatty()
    if not show:
        return sim.run()
    with Progress(TextColumn(f"{layout.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr_console(), transient=True) as bar:
        task = bar.add_task("simulate", total=len(requests))
        return sim.run(lambda done, total: bar.update(task, completed=done))


def _probe(the_plan, names, output_format, assumed) -> None:
    """Per layout: the gate probe (predicted/measured: requests admitted at their worst case) and
    sustained concurrency (predicted by the planner, measured through the real scheduler with
    vLLM's admission), with the logged and physical-limit figures beside them."""
    from hkv.planner.plan import sustained_setup
    from hkv.runtime.kv_cache.capacity_probe import probe_capacity
    from hkv.runtime.simulation.sustained_probe import measure_sustained

    setup = sustained_setup(the_plan.config, the_plan.budget)
    rows = []
    for name in names:
        report = the_plan.reports[name]
        layout, capacity = report.layout, report.capacity
        measured = probe_capacity(layout, layout.max_model_len)
        sustained = measure_sustained(layout, setup)
        next_trial = sustained.next_trial
        rows.append({"layout": name, "max_model_len": layout.max_model_len,
                     "predicted": layout.max_num_requests(layout.max_model_len), "measured": measured,
                     "max_concurrency": capacity.logged_concurrency,
                     "logged_concurrency": capacity.logged_concurrency,
                     "physical_limit_concurrency": capacity.physical_limit_concurrency,
                     "output_len": capacity.sustained_output_len,
                     "predicted_sustained": capacity.sustained_concurrency,
                     "measured_sustained": sustained.sustained,
                     "preemptions_at_next": None if next_trial is None else next_trial.num_preemptions,
                     "peak_running_at_next": None if next_trial is None else next_trial.peak_running})
    mismatch = [r for r in rows if r["predicted"] != r["measured"]
                or r["predicted_sustained"] != r["measured_sustained"]]
    if output_format is OutputFormat.json:
        write_json({"schema_version": 1, "assumed": assumed, "probe": rows, "match": not mismatch})
    else:
        _note_assumed(assumed)
        table = Table(title="capacity probe: requests of max_model_len at once (reserved: each admitted "
                            "only when its worst-case blocks are free; sustained: run without a preemption)")
        for col in ("layout", "max_model_len", "reserved predicted", "reserved measured", "sustained predicted",
                    "sustained measured", "+1: preemptions / peak running", "logged", "physical limit"):
            table.add_column(col, justify="left" if col == "layout" else "right")
        for r in rows:
            table.add_row(r["layout"], f"{r['max_model_len']:,}", str(r["predicted"]), str(r["measured"]),
                          str(r["predicted_sustained"]), str(r["measured_sustained"]),
                          "-" if r["preemptions_at_next"] is None
                          else f"{r['preemptions_at_next']} / {r['peak_running_at_next']}",
                          f"{r['logged_concurrency']:.2f}x", f"{r['physical_limit_concurrency']:.2f}x")
        stdout_console().print(table)
    if mismatch:
        raise CheckFailedError("MISMATCH between predicted and measured capacity: " + ", ".join(
            f"{r['layout']} reserved predicted {r['predicted']} measured {r['measured']}, sustained predicted "
            f"{r['predicted_sustained']} measured {r['measured_sustained']}" for r in mismatch))


def _sweep(spec, cfg, requests, sim_cfg, output_format, assumed) -> None:
    from hkv.runtime.simulation.split_sweep import best_split, sweep_split

    trials = sweep_split(spec, cfg, requests, sim_cfg)
    best = best_split(trials)
    if output_format is OutputFormat.json:
        write_json({"schema_version": 1, "assumed": assumed, "sweep": [asdict(t) for t in trials],
                    "best_expected_avg_seq_len": best.expected_avg_seq_len})
        return
    from hkv.cli.render_simulation import render_split_sweep

    _note_assumed(assumed)
    render_split_sweep(trials, best, stdout_console())
