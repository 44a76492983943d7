"""Shared fixtures for model_specs tests: tiny hand-written configs and a checkpoint writer."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest


@pytest.fixture
def tiny_llama() -> dict:
    """A 2-layer Llama config small enough to count by hand (see test_resolve_paths)."""
    return {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
        "vocab_size": 256, "max_position_embeddings": 512, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """Write a fake .safetensors file (header + zero bytes); returns the data bytes it holds."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1}
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        nbytes = sizes[dtype]
        for d in shape:
            nbytes *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return offset


@pytest.fixture
def safetensors_writer():
    return write_safetensors
