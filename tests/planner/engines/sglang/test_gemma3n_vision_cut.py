"""Gemma 3n served multimodal by SGLang 0.5.23: the mem_fraction_static cut for its vision tower.

transformers builds Gemma3nVisionConfig (timm MobileNet-v5) with hidden_size 2048 and no
num_hidden_layers, so SGLang's adjust_mem_fraction_for_vlm (arg_groups/memory_hook.py) reads a
24 x 2048 tower: complexity 24 x 2048^2 / (24 x 1024^2) = 4, factor max(0.8, 1 - 0.1 x 3) = 0.8,
times the base reduction 0.95 = 0.76. On an H100 (nvidia-smi 81,559 MiB) the unreduced default is
0.835 (a multimodal model outside SGLang's breakable-graph allow-list loses the prefill graph's
reserve; the text-only Gemma3nForCausalLM keeps it: 0.83), so SGLang uses 0.835 x 0.76 = 0.6346 --
the figure SGLang's own code resolved for this config (oracle harness, H100 at 55 and 80 % free).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.engines.sglang.mem_fraction import default_mem_fraction_static
from hkv.planner.engines.sglang.server_args import SglangServerArgs

CATALOG = Path(__file__).resolve().parents[4] / "model_specs" / "catalog" / "gemma-3n-e4b.json"
H100_SMI_BYTES = 81559 << 20


def _config(architecture: str) -> dict[str, object]:
    config = {k: v for k, v in json.loads(CATALOG.read_text()).items() if not k.startswith("_")}
    return {**config, "architectures": [architecture], "model_type": "gemma3n"}


@pytest.mark.parametrize(("architecture", "fraction"), [
    ("Gemma3nForConditionalGeneration", 0.6346),  # 0.835 x 0.95 x 0.8
    ("Gemma3nForCausalLM", 0.83),  # served as a language model: no cut, prefill graph kept
])
def test_gemma3n_vision_cut(architecture: str, fraction: float) -> None:
    spec = from_hf_config(_config(architecture), "gemma-3n-e4b")
    assert default_mem_fraction_static(H100_SMI_BYTES, SglangServerArgs(), spec) == pytest.approx(fraction, abs=1e-9)
