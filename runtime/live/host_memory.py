"""The memory this machine can give a CPU run, read before anything large is allocated."""

from __future__ import annotations

import os
from pathlib import Path

_MEMINFO = Path("/proc/meminfo")


def available_host_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux: free memory plus reclaimable caches); elsewhere the
    physical memory size, which is an upper bound."""
    if _MEMINFO.is_file():
        for line in _MEMINFO.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == "MemAvailable":
                return int(value.split()[0]) * 1024  # the kernel writes kB (= KiB)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
