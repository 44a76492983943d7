"""Why a vLLM layout has the numbers it has, in sentences: one per fact a user asks about.

Each line is built from the Layout and its Capacity (never from the log), so it explains hkv's
reproduction; the checks beside it say whether that reproduction is the log's.
"""

from __future__ import annotations

from collections import Counter

from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec
from hkv.planner.layout import KVCacheGroup, Layout
from hkv.planner.plan import Plan
from hkv.planner.sizes import format_bytes


def layout_reasons(the_plan: Plan, layout_name: str, band: tuple[int, int],
                   budget_range: tuple[int, int] | None) -> tuple[str, ...]:
    report = the_plan.reports[layout_name]
    layout, cap = report.layout, report.capacity
    length = cap.max_model_len
    lines = [
        _layer_mix(the_plan),
        _grouping(layout),
        _block_size(layout, the_plan.config.block_size),
        _budget(layout, band, budget_range),
        _per_request(layout, length),
        _logged_figures(the_plan, layout_name),
        (f"sustained: {cap.sustained_concurrency:,} requests of {length:,} tokens run at once without a "
         f"preemption under vLLM's admission (the logged {cap.logged_concurrency:.2f}x counts each at its "
         f"worst case); physical limit {cap.physical_limit_concurrency:.2f}x = pool bytes / the bytes one "
         "request really needs"),
    ]
    lines += _alternatives(the_plan, layout_name)
    return tuple(line for line in lines if line)


def gib_text(num_bytes: int) -> str:
    """Bytes as GiB with 4 decimals: the band a logged 0.01 GiB stands for stays visible."""
    return f"{num_bytes / 2**30:,.4f} GiB"


def _layer_mix(the_plan: Plan) -> str:
    mix = ", ".join(f"{n} {kind}" for kind, n in the_plan.model.layer_mix().items())
    return f"{the_plan.model.name}: {the_plan.model.num_hidden_layers} layers ({mix})"


def _grouping(layout: Layout) -> str:
    sizes = Counter((g.kind.value, g.num_layers) for g in layout.groups)
    groups = ", ".join(f"{n} x {size} {kind}" for (kind, size), n in sizes.items())
    slots = max((p.num_slots for p in layout.pools), default=0)
    padding = layout.padding_slots()
    pad = (f"; {padding} slot(s) stay empty in groups with fewer layers (the padding vLLM logs)"
           if padding else "; no slot stays empty")
    return (f"{len(layout.groups)} KV cache groups ({groups}) share {slots} layer slots: one block is one "
            f"page in each slot{pad}")


def _block_size(layout: Layout, asked_block_size: int) -> str:
    attention = [g for g in layout.groups if isinstance(g.spec, AttentionCacheSpec)]
    states = [g for g in layout.groups if isinstance(g.spec, StateCacheSpec)]
    if not attention:
        return ""
    block = max(g.block_size for g in attention)
    page = attention[0].page_size_bytes
    if states and block > asked_block_size:
        state = max(g.spec.state_bytes for g in states if isinstance(g.spec, StateCacheSpec))
        per_token = attention[0].spec.page_size_bytes(1) if isinstance(attention[0].spec, AttentionCacheSpec) else 0
        return (f"block size {block:,} tokens, not {asked_block_size}: one layer's recurrent state is "
                f"{state:,} B and one token of attention {per_token:,} B per layer, so the attention block "
                f"grows until a page ({format_bytes(page)}) holds a state, then rounds to the kernel's block")
    return f"block size {block:,} tokens: a page is {format_bytes(page)} per layer slot"


def _budget(layout: Layout, band: tuple[int, int], budget_range: tuple[int, int] | None) -> str:
    pool = layout.pools[0]
    text = (f"{pool.num_blocks:,} blocks = KV budget // {pool.bytes_per_block:,} B per block "
            f"({format_bytes(pool.bytes_per_block)})")
    if band[0] == band[1]:
        return text + f"; budget {band[0]:,} B (given)"
    span = f"the logged budget stands for {gib_text(band[0])} to {gib_text(band[1])}"
    if budget_range is None:
        return f"{text}; {span}, and no budget in it reproduces every logged number"
    return f"{text}; {span}, of which {budget_range[0]:,} to {budget_range[1]:,} B reproduce the log"


def _per_request(layout: Layout, length: int) -> str:
    t = layout.in_flight_tokens
    shares = Counter((_group_label(g), g.blocks_per_request(length, t)) for g in layout.groups)
    total = sum(layout.blocks_per_request(length))
    shown = " + ".join(f"{blocks:,} {label}" if n == 1 else f"{n} x {blocks:,} {label}"
                       for (label, blocks), n in shares.items())
    text = f"one request of {length:,} tokens may hold {total:,} blocks ({shown})"
    if any(g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED) for g in layout.groups):
        text += (f"; a window or chunk also holds the in-flight allowance T = {t:,} tokens (what may be "
                 "scheduled beyond it before its old blocks are released)")
    return text


def _group_label(group: KVCacheGroup) -> str:
    spec = group.spec
    if group.kind is CacheKind.SLIDING and isinstance(spec, AttentionCacheSpec):
        return f"sliding(W={spec.window_len:,})"
    if group.kind is CacheKind.CHUNKED and isinstance(spec, AttentionCacheSpec):
        return f"chunked(C={spec.chunk_len:,})"
    return group.kind.value


def _logged_figures(the_plan: Plan, layout_name: str) -> str:
    report = the_plan.reports[layout_name]
    cap, layout = report.capacity, report.layout
    rules = the_plan.config.vllm_rules()
    tokens = ("int(concurrency x max_model_len)" if rules.log_format.tokens_from_concurrency
              else "num_blocks // groups x block size")
    return (f"Maximum concurrency {cap.logged_concurrency:.2f}x = {layout.pools[0].num_blocks:,} blocks / "
            f"{cap.blocks_per_request:,} per request (null block included, as vLLM counts); "
            f"KV cache size {cap.kv_cache_tokens:,} tokens = {tokens} (vLLM "
            f"{'.'.join(map(str, rules.version))})")


def _alternatives(the_plan: Plan, layout_name: str) -> list[str]:
    lines: list[str] = []
    if len({g.kind for g in the_plan.reports[layout_name].layout.groups}) < 2 and layout_name == "vllm":
        return _hkv_alternative(the_plan, lines)
    other = "vllm" if layout_name == "vllm-no-hybrid" else "vllm-no-hybrid"
    label = {"vllm": "with the hybrid KV cache manager",
             "vllm-no-hybrid": "with --disable-hybrid-kv-cache-manager"}[other]
    if other in the_plan.reports:
        cap = the_plan.reports[other].capacity
        lines.append(f"{label}: {cap.logged_concurrency:.2f}x logged, {cap.sustained_concurrency:,} sustained")
    elif other in the_plan.skipped:
        lines.append(f"{label}: not possible ({the_plan.skipped[other]})")
    return _hkv_alternative(the_plan, lines)


def _hkv_alternative(the_plan: Plan, lines: list[str]) -> list[str]:
    if "hkv" in the_plan.reports:
        cap = the_plan.reports["hkv"].capacity
        lines.append(f"hkv's layout on the same budget: {cap.logged_concurrency:.2f}x logged, "
                     f"{cap.sustained_concurrency:,} sustained, physical limit "
                     f"{cap.physical_limit_concurrency:.2f}x")
    return lines
