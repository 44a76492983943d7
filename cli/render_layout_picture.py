"""A picture of one logical block of a Layout, per pool, and of what one request holds of the pool.

vLLM's layer-outer pools (planner/layout.py): a block is one page in each of the pool's
`num_slots` shared tensors (slots), and the j-th layer of a group uses slot j. So a block reads as
a grid, slots as columns and groups as rows, each cell the layer (index) whose page it is; a group
with fewer layers than slots leaves its last cells empty, which is vLLM's padding:

    pool 0 (shared): 15,364 blocks, 18.75 GiB
    one block 1.25 MiB: 10 slots, page 128.00 KiB
    slot        0  1  2  3  4  5  6  7  8  9
    g0 sliding  0  7 14 21 28 36 43 50 57  ·  +1 pad
    ...
    g5 sliding  6 13 20 27 34 42 49 56  ·  ·  +2 pad
    g6 full     5 11 17 23 29 35 41 47 53 59
    padding: 8 of 70 cells (11.4%) hold no layer

Wide pools keep their first and last slots (an ellipsis column between) and many groups their
first and last rows (an ellipsis row naming what it hides); the per-row "+N pad" and the footer
count every padding cell, hidden ones included.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from hkv.cli.render_pool_bar import KIND_GLYPHS, pool_bar
from hkv.planner.layout import KVCacheGroup, Layout, Pool
from hkv.planner.capacity.request_footprint import pool_footprints
from hkv.planner.sizes import format_bytes, format_gib

PAD_CELL = "·"
HIDDEN_CELL = "…"
CELLS_WIDTH_CHARS = 48  # slot columns of a row, separators included, before the middle ones are elided
TAIL_SLOTS = 2  # slots kept right of the ellipsis column
MAX_ROWS = 12  # groups a pool draws in full; beyond, the first HEAD_ROWS and last TAIL_ROWS
HEAD_ROWS, TAIL_ROWS = 6, 4


def layout_picture(layout: Layout) -> Panel:
    """The picture of `layout`: per pool its header, the block grid, the padding footer and the
    bar of one request of `layout.max_model_len` tokens. Pure: reads the Layout only."""
    footprints = {f.pool_id: f for f in pool_footprints(layout, layout.max_model_len)}
    indexed = list(enumerate(layout.groups))  # the group's index in the layout, as the groups table shows
    sections: list[Text] = []
    for pool in layout.pools:
        if sections:
            sections.append(Text())
        members = [(i, g) for i, g in indexed if g.pool_id == pool.pool_id]
        sections += _pool_header(layout, pool, members) + _grid(pool, members)
        sections += [_padding_footer(pool, members), *pool_bar(footprints[pool.pool_id], layout.max_model_len)]
    if not layout.pools:
        sections.append(Text("no pools: nothing to cache", style="dim"))
    return Panel.fit(Group(*sections), title=f"{layout.name}: one block per pool", title_align="left")


def _pool_header(layout: Layout, pool: Pool, members: list[tuple[int, KVCacheGroup]]) -> list[Text]:
    """Two lines: the pool's size, then its block's bytes, slots and page (every page size, when
    the groups' differ; pipeline stages size blocks for the tightest one's layers)."""
    pages = "/".join(format_bytes(p) for p in sorted({g.page_size_bytes for _i, g in members})) or "-"
    stage = f" (pp {layout.pp_size}: the tightest stage's)" if layout.pp_size > 1 else ""
    return [Text.assemble((f"pool {pool.pool_id} ({pool.kind})", "bold"),
                          f": {pool.num_blocks:,} blocks, {format_gib(pool.num_bytes)}"),
            Text(f"one block {format_bytes(pool.bytes_per_block)}{stage}: {pool.num_slots} slots, "
                 f"page {pages}")]


def _grid(pool: Pool, members: list[tuple[int, KVCacheGroup]]) -> list[Text]:
    """The slot header line and one line per group (an ellipsis line for hidden groups)."""
    cell_chars = len(str(max([pool.num_slots - 1, *(layer for _i, g in members for layer in g.layer_ids)])))
    slots = _shown_slots(pool.num_slots, cell_chars)
    labels = {i: f"g{i} {g.kind.value}" for i, g in members}
    label_chars = max(map(len, labels.values()), default=0)
    header = Text("slot".ljust(label_chars), style="dim")
    for slot in slots:
        header.append(" " + (HIDDEN_CELL if slot is None else str(slot)).rjust(cell_chars), style="dim")
    if len(members) > MAX_ROWS:
        head, hidden, tail = members[:HEAD_ROWS], members[HEAD_ROWS:-TAIL_ROWS], members[-TAIL_ROWS:]
    else:
        head, hidden, tail = members, [], []

    def row(i: int, g: KVCacheGroup) -> Text:
        return _group_row(g, pool, slots, labels[i].ljust(label_chars), cell_chars)

    return [header, *(row(i, g) for i, g in head), *([_hidden_row(hidden, pool)] if hidden else []),
            *(row(i, g) for i, g in tail)]


def _shown_slots(num_slots: int, cell_chars: int) -> list[int | None]:
    """Slot indices to draw, None for the ellipsis column standing for the elided middle ones."""
    max_columns = max(TAIL_SLOTS + 2, CELLS_WIDTH_CHARS // (cell_chars + 1))
    if num_slots <= max_columns:
        return list(range(num_slots))
    head = max_columns - 1 - TAIL_SLOTS
    return [*range(head), None, *range(num_slots - TAIL_SLOTS, num_slots)]


def _group_row(group: KVCacheGroup, pool: Pool, slots: list[int | None], label: str,
               cell_chars: int) -> Text:
    """One text span per drawn cell (the SVG export keeps each as its own element): the layer in
    that slot, PAD_CELL for a slot the group leaves empty, HIDDEN_CELL in the ellipsis column."""
    style = KIND_GLYPHS[group.kind][1]
    row = Text()
    row.append(label, style=f"bold {style}")  # a span, not the Text's base style, which cells would inherit
    for slot in slots:
        if slot is None:
            cell, cell_style = HIDDEN_CELL, "dim"
        elif slot < group.num_layers:
            cell, cell_style = str(group.layer_ids[slot]), style
        else:
            cell, cell_style = PAD_CELL, "dim red"
        row.append(" " * (cell_chars + 1 - len(cell)))
        row.append(cell, style=cell_style)
    padding = _padding_cells(group, pool)
    if padding:
        row.append(f"  +{padding} pad", style="red")
    return row


def _hidden_row(hidden: list[tuple[int, KVCacheGroup]], pool: Pool) -> Text:
    kinds = Counter(g.kind.value for _i, g in hidden)
    padding = sum(_padding_cells(g, pool) for _i, g in hidden)
    return Text(f"⋮ g{hidden[0][0]}-g{hidden[-1][0]} not drawn: "
                + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
                + f" ({sum(g.num_layers for _i, g in hidden)} layers, +{padding} pad)", style="dim")


def _padding_footer(pool: Pool, members: list[tuple[int, KVCacheGroup]]) -> Text:
    padding = sum(_padding_cells(g, pool) for _i, g in members)
    cells = pool.num_slots * len(members)
    share = f" ({padding / cells:.1%})" if cells else ""
    return Text(f"padding: {padding} of {cells} cells{share} hold no layer",
                style="red" if padding else "dim")


def _padding_cells(group: KVCacheGroup, pool: Pool) -> int:
    return max(0, pool.num_slots - group.num_layers)
