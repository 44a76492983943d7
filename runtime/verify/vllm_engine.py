"""hkv's side of the vLLM driver (vllm_driver.py): find an interpreter with vLLM, start the driver
under it, and talk to it. vLLM cannot be a dependency of hkv (its pins conflict), so it only ever
runs in that subprocess.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from hkv.runtime.errors import VllmUnavailableError
from hkv.runtime.verify.vllm_driver import PROTOCOL_PREFIX

DRIVER = Path(__file__).with_name("vllm_driver.py")
SETUP_HINT = ("give vllm_python, an interpreter that imports vllm, e.g. the venv that "
              "`bash tests/oracle/setup_vllm_env.sh` builds: .venv-vllm/bin/python")
ENGINE_TIMEOUT_S = 1800  # the whole session: start-up (~20-60 s on CPU) plus every run
# VLLM_CPU_KVCACHE_SPACE would override kv_cache_memory_bytes on CPU (platforms/cpu.py).
_DROPPED_ENV = ("VLLM_CPU_KVCACHE_SPACE", "PYTHONPATH", "VIRTUAL_ENV")
_LOG_TAIL_LINES = 30


class VllmEngineError(VllmUnavailableError):
    """vLLM could not be imported, refused the settings or died (exit 1)."""


def resolve_vllm_python(given: str | None) -> str:
    """The interpreter to run vLLM under: `given`, else this one when it can import vllm.
    Raises VllmUnavailableError naming vllm_python when there is none."""
    if given is not None:
        path = Path(given).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise VllmUnavailableError(f"vllm_python {given}: no such executable; {SETUP_HINT}",
                                   fields=("vllm_python",))
        return os.path.abspath(path)  # absolute (vLLM runs with cwd=/), not resolved (a venv's python is a link)
    if importlib.util.find_spec("vllm") is None:
        raise VllmUnavailableError(f"vllm is not importable by this Python ({sys.executable}); {SETUP_HINT}",
                                   fields=("vllm_python",))
    return sys.executable


class VllmEngine:
    """One driver process: `platform` once, `start` once, then `run` any number of times; `close`
    (or the `with` block) ends it. Everything vLLM logs is kept in `log_lines`."""

    def __init__(self, python: str, timeout_s: float = ENGINE_TIMEOUT_S) -> None:
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        env["VLLM_LOGGING_LEVEL"] = "INFO"
        # cwd=/ and -P: neither the caller's folder nor hkv's runtime/verify/ folder lands on vLLM's sys.path.
        self._proc = subprocess.Popen(
            [python, "-P", str(DRIVER)], cwd="/", env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self._timer = threading.Timer(timeout_s, self._proc.kill)
        self._timer.daemon = True
        self._timer.start()
        self.timeout_s = timeout_s
        self.log_lines: list[str] = []
        self.platform: dict[str, Any] = self._expect("platform")

    def __enter__(self) -> VllmEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, llm_args: dict[str, Any]) -> dict[str, Any]:
        """Build vllm.LLM(**llm_args); returns what the engine resolved (the driver's "ready")."""
        self._send({"llm_args": llm_args})
        return self._expect("ready")

    def run(self, num_requests: int, prompt_len: int, output_len: int) -> dict[str, Any]:
        """Generate `num_requests` prompts of `prompt_len` random tokens and `output_len` outputs,
        all submitted together; returns the driver's "ran" event: the preemptions vLLM counted
        meanwhile (`num_preemptions`) and the most requests it ran at once (`max_running`)."""
        self._send({"num_requests": num_requests, "prompt_len": prompt_len, "output_len": output_len})
        return self._expect("ran")

    def close(self) -> None:
        if self._proc.poll() is None:
            try:  # not through _send: a failed write here must not raise (close runs on errors too)
                self._proc.stdin.write(json.dumps({"stop": True}) + "\n")  # type: ignore[union-attr]
                self._proc.stdin.close()  # type: ignore[union-attr]
                self._proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._timer.cancel()

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]
        except OSError as err:
            raise self._died(f"could not write to it ({err})") from None

    def _expect(self, event: str) -> dict[str, Any]:
        """Read log lines until the driver's next protocol line, which must be `event`."""
        for line in self._proc.stdout:  # type: ignore[union-attr]
            if not line.startswith(PROTOCOL_PREFIX):
                self.log_lines.append(line.rstrip("\n"))
                continue
            message = json.loads(line[len(PROTOCOL_PREFIX):])
            if message["event"] == "error":
                at_import = message["stage"] == "import"
                hint = f"; {SETUP_HINT}" if at_import else ""
                raise self._died(f"failed at {message['stage']}: {message['message']}{hint}",
                                 fields=("vllm_python",) if at_import else ())
            assert message.pop("event") == event, f"driver sent another event than {event}"
            return message
        self._proc.wait()
        return_code = self._proc.returncode
        why = f"timed out after {self.timeout_s:.0f} s" if return_code == -9 else f"exited with {return_code}"
        raise self._died(why)

    def _died(self, why: str, fields: tuple[str, ...] = ()) -> VllmEngineError:
        """Ends the driver, prints the tail of vLLM's log on stderr; the error is one line."""
        self.close()
        print("\n".join(["--- last lines of vLLM's log ---", *self.log_lines[-_LOG_TAIL_LINES:]]),
              file=sys.stderr)
        return VllmEngineError(f"vLLM ({self._proc.args[0]}) {why}", fields=fields)
