"""Which engine printed a start-up log: vLLM or SGLang, told by the lines each one alone prints.

Pure: no I/O. `hkv explain-log` reads the log with the detected engine's reader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

VLLM, SGLANG = "vllm", "sglang"
LOG_ENGINES = (VLLM, SGLANG)

# Phrases only one engine prints (format strings of vLLM 0.10-0.33 and SGLang 0.4-0.5.23).
_MARKERS = {
    VLLM: re.compile(r"vLLM|Available KV cache memory|KV cache size: [\d,]+ tokens|Maximum concurrency for|"
                     r"non-default args:|Model loading took|EngineCore"),
    SGLANG: re.compile(r"sglang|server_args=|max_total_num_tokens=|KV Cache is allocated\.|Use sliding window memory "
                       r"pool|SWAKVPool|Mamba Cache is allocated|Load weight (?:begin|end)\.|by the mamba state cache"),
}


def detect_log_engine(lines: Iterable[str]) -> str:
    """The engine whose marker lines outnumber the other's; vLLM on a tie (no marker at all included:
    vLLM's reader then says what it expected)."""
    counts = dict.fromkeys(LOG_ENGINES, 0)
    for line in lines:
        for engine, marker in _MARKERS.items():
            if marker.search(line):
                counts[engine] += 1
    return SGLANG if counts[SGLANG] > counts[VLLM] else VLLM
