"""`hkv simulate MODEL (--workload SPEC | --trace FILE)`: plan, then replay through the runtime.

With several layouts (`--layout all`) each layout replays the workload in turn. A layout that
cannot hold a request (the runtime's OutOfBlocksError or RequestTooLongError) or that the
planner leaves without a block becomes a failure row naming the layout and why; the others'
results are still shown. Exit codes: 0 when at least one layout finished (failures are in the
output and on stderr), 1 when none did (one line naming each layout's reason), 130 after Ctrl-C
(one line, then the partial report of every layout run so far).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from enum import Enum
from typing import Annotated

import typer
from hkv.cli.choices import ALL_LAYOUTS, SimulateLayout
from hkv.cli.engine_options import version_notes
from hkv.cli.errors import CheckFailedError, UserError, handles_errors, user_message
from hkv.cli.output import OutputFormat, note, stdout_console, write_json
from hkv.cli.plan_options import (
    AvailableOpt,
    AvgLenOpt,
    BlockSizeOpt,
    ChunkOpt,
    DraftLayersOpt,
    DtypeOpt,
    EagerOpt,
    FlashInferOpt,
    GpuMemoryOpt,
    GpuOpt,
    KvDtypeOpt,
    MaxLenOpt,
    MaxSeqsOpt,
    MnbtOpt,
    NoPrefixOpt,
    OutputLenOpt,
    PlanOptions,
    PpOpt,
    PrefixOpt,
    QuantOpt,
    SpecTokensOpt,
    SsmDtypeOpt,
    TextOnlyOpt,
    TpOpt,
    UtilOpt,
    VllmLogOpt,
    VllmVersionOpt,
    WeightsOpt,
    assumed_note,
)
from hkv.cli.render_simulation_failures import LayoutFailure
from hkv.cli.simulation_progress import simulation_progress
from hkv.cli.simulation_svg import checked_simulation_svg_path, save_simulation_svg
from hkv.cli.trace_notes import too_long_note, trace_notes
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.block_fit import check_pools_hold_a_block
from hkv.planner.budget.memory_budget import does_not_fit_error
from hkv.planner.engines.vllm.layout import layout_prefix_caching
from hkv.planner.errors import DoesNotFitError
from hkv.planner.plan import plan
from hkv.planner.plan_config import LAYOUT_NAMES
from hkv.runtime.errors import OutOfBlocksError, RequestTooLongError
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.simulation.traces.mooncake_reader import MOONCAKE_BLOCK_SIZE
from hkv.runtime.simulation.traces.trace_format import TRACE_FORMAT_NAMES
from rich.table import Table

ModelArg = Annotated[str, typer.Argument(help="catalog name, HF id, model directory or config.json")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="human or json")]
WorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", help="synthetic workload, e.g. shared-prefix:n=1000,prefix=2048,prompt=256,output=128")]
TraceOpt = Annotated[str | None, typer.Option(
    "--trace", help="trace file: Mooncake JSONL, Azure LLM inference CSV, BurstGPT CSV or hkv JSONL "
                    "(told by content)")]
TraceFormatChoice = Enum("TraceFormatChoice", {n: n for n in TRACE_FORMAT_NAMES}, type=str)  # type: ignore[misc]
TraceFormatOpt = Annotated[TraceFormatChoice | None, typer.Option(  # type: ignore[valid-type]
    "--trace-format", help="the trace's format, when its content does not tell [default: by content]")]
TraceLimitOpt = Annotated[int | None, typer.Option(
    "--trace-limit", help="replay the first N requests of the trace (of the window, with --trace-window)")]
TraceWindowOpt = Annotated[str | None, typer.Option(
    "--trace-window", help="replay the requests arriving START:END seconds after the trace's first "
                           "(either side may be empty: 600:, :3600); they arrive START earlier")]
TraceBlockOpt = Annotated[int, typer.Option(
    "--trace-block-size", help="tokens per Mooncake hash id", min=1)]
SimLayoutOpt = Annotated[SimulateLayout, typer.Option(  # type: ignore[valid-type]
    "--layout", help="layout to simulate, or all")]
ProbeOpt = Annotated[bool, typer.Option(
    "--probe-capacity", help="admit max-length requests until one does not fit (the gate), and measure "
                             "sustained concurrency through the real scheduler; compare with the plan "
                             "(exit 3 when they differ)")]
SweepOpt = Annotated[bool, typer.Option(
    "--sweep-split", help="partitioned: try pool splits and report the best for the workload")]
class EvictionChoice(str, Enum):
    """--eviction: a policy, or `auto` (runtime/kv_cache/default_eviction.py: LRU for a layout
    with recurrent groups, group-aware otherwise, as measured on the Mooncake trace)."""

    AUTO = "auto"
    LRU = EvictionPolicy.LRU.value
    GROUP_AWARE = EvictionPolicy.GROUP_AWARE.value


EvictionOpt = Annotated[EvictionChoice, typer.Option(
    "--eviction", help="eviction policy; auto: lru for layouts with recurrent state, group_aware otherwise "
                       "(what won on the Mooncake trace)")]
SimSvgOpt = Annotated[str | None, typer.Option(
    "--svg", metavar="FILE", help="also draw the time series (running, waiting, KV use, hit rate; a line per "
                                  "layout) as an SVG picture [default: none]")]


@handles_errors
def simulate_command(
    model: ModelArg, workload: WorkloadOpt = None, trace: TraceOpt = None,
    trace_format: TraceFormatOpt = None, trace_limit: TraceLimitOpt = None,  # type: ignore[valid-type]
    trace_window: TraceWindowOpt = None, trace_block_size: TraceBlockOpt = MOONCAKE_BLOCK_SIZE,
    layout: SimLayoutOpt = SimulateLayout("hkv"),  # type: ignore[assignment]
    probe_capacity_flag: ProbeOpt = False, sweep_split: SweepOpt = False,
    eviction: EvictionOpt = EvictionChoice.AUTO,
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
    svg: SimSvgOpt = None, output_format: FormatOpt = OutputFormat.human,
) -> None:
    """Replay a workload through the real hybrid KV cache manager and scheduler (no model).

    A model whose weights do not fit the GPU, or a KV budget that holds no block, is an error.

    Requests longer than --max-model-len allows are skipped and counted, as vLLM rejects them. With
    --layout all, a layout that cannot hold a request is a row saying so; exit 0 when at least
    one layout finished, 1 when none did.

    Examples: hkv simulate gemma-3-27b --gpu h100 --workload shared-prefix:n=2000,prefix=2048,prompt=256,output=64
    --layout all ; hkv simulate qwen3-next-80b-a3b --gpu h100 --tp 4 --trace mooncake_conversation_trace.jsonl
    --trace-limit 500 --layout all ; hkv simulate gpt-oss-120b --gpu h100 --probe-capacity --layout all
    """
    # The runtime is imported here, not at module level, so `hkv plan` starts without it.
    from hkv.runtime.kv_cache.default_eviction import default_eviction_policy
    from hkv.runtime.scheduler.scheduler import SchedulerConfig
    from hkv.runtime.simulation.metrics.plan_step_cost import step_cost_for_plan
    from hkv.runtime.simulation.simulator import SimulationConfig

    options = PlanOptions.from_args(locals(), layout=None)
    if not probe_capacity_flag and (workload is None) == (trace is None):
        raise UserError("give exactly one of --workload SPEC or --trace FILE (or --probe-capacity)")
    if trace is None and (trace_format, trace_limit, trace_window) != (None, None, None):
        raise UserError("--trace-format, --trace-limit and --trace-window apply to --trace FILE only")
    svg_path = checked_simulation_svg_path(svg, probe=probe_capacity_flag, sweep_split=sweep_split)
    cfg = options.plan_config()
    for line in version_notes(vllm_version):
        note(line)
    spec = load_model_spec(model)
    the_plan = plan(spec, cfg)
    if not the_plan.budget.fits:
        raise does_not_fit_error(spec, the_plan.budget)
    names = [n for n in (LAYOUT_NAMES if layout.value == ALL_LAYOUTS else [layout.value])
             if n in the_plan.reports]
    assumed = options.assumed(the_plan.budget)
    if probe_capacity_flag:
        for name in names:
            check_pools_hold_a_block(the_plan.reports[name].layout, the_plan.budget.available_bytes)
        _probe(the_plan, names, output_format, assumed)
        return
    max_model_len = the_plan.primary.layout.max_model_len
    requests, trace_summary, too_long = _workload(workload, trace, max_model_len, TraceArgs(
        None if trace_format is None else trace_format.value, trace_limit, trace_window, trace_block_size))
    if trace_summary is not None:  # before the run: what is replayed, and what is skipped
        too_long = trace_summary.too_long
    for line in trace_notes(trace_summary) if trace_summary is not None else [too_long_note(too_long)]:
        if line:
            note(line)
    cfg, the_plan, sized_note = _sized_for_workload(spec, cfg, the_plan, requests, max_model_len, sweep_split)
    step_cost, fixed_why = step_cost_for_plan(the_plan)  # None: the fixed step model, for the reason given
    if step_cost is None:
        note(f"step times from the fixed model, not the roofline estimate: {fixed_why}")
    sim_cfg = SimulationConfig(
        scheduler=SchedulerConfig(the_plan.budget.max_num_batched_tokens, the_plan.budget.max_num_seqs),
        cache=CacheConfig(enable_caching=cfg.enable_prefix_caching is not False,
                          eviction_policy=default_eviction_policy(the_plan.primary.layout)
                          if eviction is EvictionChoice.AUTO else EvictionPolicy(eviction.value)),
        step_cost=step_cost)
    if sweep_split:
        _sweep(spec, cfg, requests, sim_cfg, output_format, assumed)
        return
    reports, failures, interrupted = _run_layouts(names, the_plan, spec, cfg, requests, sim_cfg)
    if not reports and not interrupted:
        raise UserError(_none_finished(failures))
    if sized_note and reports:
        note(sized_note)
    for f in failures:
        note(f"layout {f.layout} could not replay the workload: {f.reason}")
    if interrupted:
        note(f"interrupted: partial results of the {len(reports)} layout(s) run so far")
    if output_format is OutputFormat.json:
        write_json({"schema_version": 1, "model": spec.name, "assumed": assumed,
                    "reports": [asdict(r) for r in reports], "failed": [asdict(f) for f in failures],
                    "interrupted": interrupted,
                    "trace": None if trace_summary is None else asdict(trace_summary),
                    "expected_avg_seq_len": cfg.expected_avg_seq_len,
                    "skipped_too_long": None if too_long is None else asdict(too_long)})
    else:
        from hkv.cli.render_simulation import render_simulation
        from hkv.cli.render_simulation_failures import render_simulation_failures

        _note_assumed(assumed)
        console = stdout_console()
        if reports:
            render_simulation(reports, console)
        render_simulation_failures(failures, console)
    if svg_path is not None and reports:
        save_simulation_svg(reports, svg_path, f"hkv simulate {spec.name}: time series")
    if interrupted:
        raise typer.Exit(130)


def _sized_for_workload(spec, cfg, the_plan, requests, max_model_len, sweep_split):
    """(cfg, plan) with the split pools sized for the replayed workload's mean request length
    (planner/capacity/workload_lengths.py), unless --expected-avg-seq-len (or its env var) set it or the
    split is being swept, and the note to print with the results (None: not sized). The vllm
    layouts do not depend on it."""
    from hkv.planner.capacity.workload_lengths import sized_for_workload

    if cfg.expected_avg_seq_len is not None or sweep_split:
        return cfg, the_plan, None
    if not any(len(r.layout.pools) > 1 for r in the_plan.reports.values()):
        return cfg, the_plan, None  # no layout splits its budget: nothing to size
    pairs = requests.lengths() if hasattr(requests, "lengths") else ((r.prompt_len, r.output_len) for r in requests)
    sized = sized_for_workload(cfg, pairs, max_model_len)
    line = (f"split pools (hkv, partitioned) sized for this workload's mean request of "
            f"{sized.expected_avg_seq_len:,} tokens (--expected-avg-seq-len sets another)")
    return sized, plan(spec, sized), line


@dataclass(frozen=True)
class TraceArgs:
    """The --trace-* options, as given."""

    format: str | None
    limit: int | None
    window: str | None
    block_size: int


def _workload(workload, trace, max_model_len, trace_args: TraceArgs):
    """(requests, the trace's summary or None, the too-long skips of a synthetic workload or None).
    A trace streams from its file (TraceSource); requests too long are skipped, and counted."""
    from hkv.runtime.simulation.traces.too_long import drop_too_long
    from hkv.runtime.simulation.traces.trace_options import TraceOptions
    from hkv.runtime.simulation.traces.trace_source import TraceSource
    from hkv.runtime.simulation.traces.trace_window import TraceWindow
    from hkv.runtime.simulation.workload_gen import generate_workload
    from hkv.runtime.simulation.workload_spec import parse_workload

    if trace is not None:
        window = TraceWindow.parse(trace_args.window, trace_args.limit)
        source = TraceSource(trace, TraceOptions(trace_args.format, trace_args.block_size, window, max_model_len))
        return source, source.summary, None
    requests, too_long = drop_too_long(generate_workload(parse_workload(workload or "")), max_model_len)
    if not requests:
        raise UserError(f"all {too_long.num_skipped:,} request(s) exceed --max-model-len {max_model_len:,} "
                        f"(first: {too_long.first_request_id}, {too_long.first_prompt_len:,} prompt tokens); "
                        f"raise --max-model-len")
    return requests, None, too_long


def _run_layouts(names, the_plan, spec, cfg, requests, sim_cfg):
    """Each layout replays the workload in turn: (reports, failures, interrupted). Ctrl-C stops
    the run and keeps the reports of every layout run so far (the last one's partial)."""
    reports, failures = [], []
    try:
        for name in names:
            layout = the_plan.reports[name].layout
            try:
                check_pools_hold_a_block(layout, the_plan.budget.available_bytes)
            except DoesNotFitError as err:
                failures.append(LayoutFailure(name, user_message(err), 0))
                continue
            caching = replace(sim_cfg.cache, enable_caching=layout_prefix_caching(name, spec, cfg))
            outcome = _run_one(layout, requests, replace(sim_cfg, cache=caching))
            if isinstance(outcome, LayoutFailure):
                failures.append(outcome)
                continue
            reports.append(outcome)
            if outcome.interrupted:
                return reports, failures, True
    except KeyboardInterrupt:  # between two layouts' runs (Simulator.run catches its own)
        return reports, failures, True
    return reports, failures, False


def _none_finished(failures: list[LayoutFailure]) -> str:
    """The one line when no layout could replay the workload."""
    if len(failures) == 1:
        return f"{failures[0].layout} layout: {failures[0].reason}"
    return "no layout could replay the workload: " + "; ".join(f"{f.layout}: {f.reason}" for f in failures)


def _note_assumed(assumed) -> None:
    """Human output: the defaults the user did not choose, on stderr, once the results are in."""
    line = assumed_note(assumed)
    if line:
        note(line)


def _run_one(layout, requests, sim_cfg):
    """The layout's report (interrupted=True after Ctrl-C), or a LayoutFailure when it cannot hold
    a request; progress on stderr meanwhile."""
    from hkv.runtime.simulation.simulator import Simulator

    sim = Simulator(layout, requests, sim_cfg)
    total = len(requests) if hasattr(requests, "__len__") else None
    try:
        with simulation_progress(layout.name, lambda: sim.now_s, total) as progress:
            return sim.run(progress)
    except (OutOfBlocksError, RequestTooLongError) as err:
        return LayoutFailure(layout.name, user_message(err), sim.report().num_finished)


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
