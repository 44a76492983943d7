"""The choices of `hkv plan --emit`: the engines hkv writes a start command for.

vllm: `vllm serve` (vllm/serve_command.py); sglang: SGLang's launch command
(sglang/launch_command.py). Named here, apart from those builders, so that the CLI can offer the
choices without importing them (a cold `hkv plan` only builds a command when --emit asks).
"""

from __future__ import annotations

SERVE_TARGETS = ("vllm",)  # built by vllm/serve_command.py
LAUNCH_TARGETS = ("sglang",)  # built by sglang/launch_command.py
