"""`hkv plan`'s layout pictures and `--svg FILE`, read back from the SVG rich exports.

Expected numbers are derived by hand (vllm layout of Gemma-3-27B) or from the Layout's groups and
pools the library plans (hkv layout), never from the drawing code.
"""

import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from rich.text import Text
from typer.testing import CliRunner

from hkv.cli.main import app
from hkv.cli.render_pool_bar import pool_bar
from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.planner.capacity.request_footprint import PoolFootprint

runner = CliRunner()
SVG_NS = "{http://www.w3.org/2000/svg}"
PAD, HIDDEN = "·", "…"


def run(*args, env=None):
    return runner.invoke(app, list(args), env=env)


@dataclass
class DrawnPool:
    slots: list[str] = field(default_factory=list)  # the slot header's columns
    rows: dict[int, tuple[str, list[str], int]] = field(default_factory=dict)  # group -> (kind, cells, +pad)
    hidden: range = range(0)  # groups of the ellipsis row
    padding: tuple[int, int] | None = None  # footer: (padding cells, cells)


def svg_lines(path):
    """The SVG's text elements, one list per line (by y), left to right, without panel borders."""
    lines = defaultdict(list)
    for element in ET.parse(path).getroot().iter(SVG_NS + "text"):
        text = (element.text or "").replace("\xa0", " ").strip()
        if text and text not in ("│", "╭─", "─╮"):
            lines[float(element.get("y"))].append((float(element.get("x")), text))
    return [[text for _x, text in sorted(lines[y])] for y in sorted(lines)]


def drawn_pictures(path):
    """layout name -> its pools as drawn: each group row's cells are the text elements after its label."""
    pictures: dict[str, list[DrawnPool]] = {}
    pools: list[DrawnPool] = []
    for line in svg_lines(path):
        if title := re.match(r"(\S+): one block per pool", line[0]):
            pools = pictures.setdefault(title.group(1), [])
        elif line[0].startswith("pool ") and pictures:
            pools.append(DrawnPool())
        elif line[0] == "slot" and pools:
            pools[-1].slots = line[1:]
        elif label := re.fullmatch(r"g(\d+) (\w+)", line[0]):
            pad = line[-1] if line[-1].endswith(" pad") else "+0 pad"
            cells = line[1:-1] if line[-1].endswith(" pad") else line[1:]
            pools[-1].rows[int(label.group(1))] = (label.group(2), cells, int(pad[1:-4]))
        elif hidden := re.match(r"⋮ g(\d+)-g(\d+) not drawn", line[0]):
            pools[-1].hidden = range(int(hidden.group(1)), int(hidden.group(2)) + 1)
        elif footer := re.fullmatch(r"padding: (\d+) of (\d+) cells.*", line[0]):
            pools[-1].padding = (int(footer.group(1)), int(footer.group(2)))
    return pictures


@pytest.fixture(scope="module")
def gemma_svg(tmp_path_factory):
    path = tmp_path_factory.mktemp("svg") / "plan.svg"
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--svg", str(path))
    assert result.exit_code == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def gemma_layouts():
    reports = plan(load_model_spec("gemma-3-27b"), PlanConfig(gpu="h100")).reports
    return {name: report.layout for name, report in reports.items()}


def test_svg_parses_and_draws_one_text_element_per_group_slot(gemma_svg, gemma_layouts):
    pictures = drawn_pictures(gemma_svg)
    assert set(pictures) == set(gemma_layouts) == {"hkv", "vllm", "vllm-no-hybrid", "partitioned"}
    for name, pools in pictures.items():
        assert len(pools) == len(gemma_layouts[name].pools), name
        for pool in pools:
            assert pool.rows and pool.padding is not None, name
            for kind, cells, _pad in pool.rows.values():
                assert len(cells) == len(pool.slots), (name, kind, cells)


def test_vllm_picture_of_gemma_3_27b(gemma_svg):
    # By hand: 62 layers, every 6th (i % 6 == 5) full: 10 full + 52 sliding. vLLM's group size is the
    # smaller count, 10 (52 >= 1.5 x 10), so 10 slots; the sliding layers split into cdiv(52, 10) = 6
    # groups by stride (sliding[i::6]): 52 = 6 x 8 + 4 gives 9,9,9,9,8,8 layers, 6 x 10 - 52 = 8 padding
    # cells (1,1,1,1,2,2); the full group fills its 10. 7 groups x 10 slots = 70 cells.
    [pool] = drawn_pictures(gemma_svg)["vllm"]
    assert pool.slots == [str(s) for s in range(10)]
    assert [kind for kind, _c, _p in pool.rows.values()] == ["sliding"] * 6 + ["full"]
    assert [cells.count(PAD) for _k, cells, _p in pool.rows.values()] == [1, 1, 1, 1, 2, 2, 0]
    assert [pad for _k, _c, pad in pool.rows.values()] == [1, 1, 1, 1, 2, 2, 0]
    assert pool.padding == (8, 70) and not pool.hidden
    sliding = [i for i in range(62) if i % 6 != 5]  # sliding[k] = k + k // 5
    for g, (_kind, cells, _pad) in enumerate(list(pool.rows.values())[:6]):
        assert cells == [str(layer) for layer in sliding[g::6]] + [PAD] * (10 - len(sliding[g::6]))
    assert pool.rows[6][1] == [str(layer) for layer in range(5, 62, 6)]


def test_hkv_picture_matches_the_layouts_groups(gemma_svg, gemma_layouts):
    layout = gemma_layouts["hkv"]
    pictures = drawn_pictures(gemma_svg)["hkv"]
    for pool, drawn in zip(layout.pools, pictures):
        groups = {i: g for i, g in enumerate(layout.groups) if g.pool_id == pool.pool_id}
        assert drawn.slots == [str(s) for s in range(pool.num_slots)]  # 5 slots: drawn in full
        assert sorted([*drawn.rows, *drawn.hidden]) == sorted(groups)  # every group drawn or counted
        for i, (kind, cells, pad) in drawn.rows.items():
            g = groups[i]
            assert kind == g.kind.value and pad == pool.num_slots - g.num_layers
            assert cells == [str(layer) for layer in g.layer_ids] + [PAD] * (pool.num_slots - g.num_layers)
        padding = sum(pool.num_slots - g.num_layers for g in groups.values())
        assert drawn.padding == (padding, pool.num_slots * len(groups))
    assert sum(p.padding[0] for p in pictures) == layout.padding_slots() < 8  # fewer than vllm's 8


def test_wide_pools_elide_middle_slots_in_every_row(gemma_svg, gemma_layouts):
    # vllm-no-hybrid: one group of all 62 layers, layer j in slot j: too wide to draw every slot
    [pool] = drawn_pictures(gemma_svg)["vllm-no-hybrid"]
    assert HIDDEN in pool.slots and pool.slots[-2:] == ["60", "61"] and len(pool.slots) < 62
    [(kind, cells, pad)] = pool.rows.values()
    assert kind == "full" and pad == 0 and cells == pool.slots  # layer j sits in slot j
    assert pool.padding == (0, 62)


def test_bar_legend_shares_of_the_vllm_pool(gemma_layouts):
    # One 131,072-token request holds cdiv(131072, 16) = 8,192 blocks of the full group, all 10 slots used.
    layout = gemma_layouts["vllm"]
    [pool] = layout.pools
    result = run("plan", "gemma-3-27b", "--gpu", "h100", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    section = result.stdout.split("vllm: one block per pool")[1].split("╰")[0]
    assert f"█ full {8192 / pool.num_blocks:.1%}" in section
    sliding = [g for g in layout.groups if g.kind is CacheKind.SLIDING]
    blocks = [g.blocks_per_request(131_072, layout.in_flight_tokens) for g in sliding]
    padding = sum(n * (10 - g.num_layers) for n, g in zip(blocks, sliding)) / 10
    assert f"▒ padding {padding / pool.num_blocks:.1%}" in section


def test_bar_keeps_a_small_padding_share_visible():
    # 100-byte pool: full 50 -> 20 of 40 chars, padding 1 -> 0.4 rounds up to 1, free 49 -> 19
    _headline, bar, legend = pool_bar(PoolFootprint(0, 100, ((CacheKind.FULL, 50),), 1), 1_000)
    assert isinstance(bar, Text) and bar.plain == "█" * 20 + "▒" + "░" * 19
    assert legend.plain == "█ full 50.0%  ▒ padding 1.0%  ░ free 49.0%"


def test_svg_with_json_keeps_json_on_stdout(tmp_path):
    path = tmp_path / "plan.svg"
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--format", "json", "--svg", str(path))
    assert result.exit_code == 0, result.stderr
    assert set(json.loads(result.stdout)["layouts"]) == {"hkv", "vllm", "vllm-no-hybrid", "partitioned"}
    assert set(drawn_pictures(path)) == {"hkv", "vllm", "vllm-no-hybrid", "partitioned"}


@pytest.mark.parametrize("where, extra, fragment", [
    ("missing/plan.svg", [], "does not exist"),
    (".", [], "is a directory"),
    ("plan.svg", ["--tp", "1,2"], "does not combine with --emit"),
    ("plan.svg", ["--emit", "vllm"], "does not combine with --emit"),
])
def test_bad_svg_path_is_one_line_and_exit_1(tmp_path, where, extra, fragment):
    path = tmp_path / where
    result = run("plan", "gemma-3-27b", "--gpu", "h100", "--svg", str(path), *extra)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hkv: error: --svg ") and fragment in lines[0], lines
    assert result.stdout == "" and not (tmp_path / "plan.svg").exists()


def test_help_shows_the_svg_default():
    help_text = " ".join(run("plan", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert "--svg FILE" in help_text and "[default: none, no SVG]" in help_text
