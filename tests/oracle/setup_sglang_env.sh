#!/usr/bin/env bash
# Build (or check) the SGLang oracle virtualenv `.venv-sglang` at the repository root.
#
#   bash tests/oracle/setup_sglang_env.sh          # idempotent; ~2 min from scratch, ~5 s when done
#   bash tests/oracle/setup_sglang_env.sh --force  # re-run every install step
#
# It holds SGLang 0.5.23's Python sources and only what its sizing modules (server_args,
# configs/model_config, mem_cache/kv_cache_configurator, model_executor/pool_configurator) import;
# tests/oracle/sglang_side/sglang_harness.py calls that code on a CPU-only machine. Order matters:
#   1. torch==2.13.0 first: it resolves to the local CPU wheel. Any other torch request lets pip
#      pull a multi-GB CUDA build, so every later step installs under a torch==2.13.0 constraint
#      or with --no-deps.
#   2. sglang==0.5.23 --no-deps (its own requirements name torch 2.14.1 and the CUDA kernels).
#   3. transformers==5.19.0 (SGLang's pin: it knows every catalog model type SGLang serves).
#   4. The pure-Python packages the sizing modules import at module level.
#   5. --no-deps: triton (sglang.srt.utils.common imports it; ~0.9 GB of the ~2.4 GB total),
#      torchvision 0.28 (imported by configs/; its C++ ops do not load beside torch+cpu, the harness
#      says how it copes) and apache-tvm-ffi (imported by the all-reduce wrappers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.venv-sglang"
PY="$VENV/bin/python"
HARNESS="$ROOT/tests/oracle/sglang_side/sglang_harness.py"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1
START_S=$SECONDS

fail() {
    echo "setup_sglang_env: $1" >&2
    exit 1
}

# -P and cwd=/: keep the repository root (its kernels/ folder) off sys.path.
check() {
    (cd / && "$PY" -P -c "$1") >/dev/null 2>&1
}
ready() {
    [[ -x "$PY" ]] && (cd / && "$PY" -P "$HARNESS" --self-check) >/dev/null 2>&1
}
step() {
    local name=$1
    shift
    local t0=$SECONDS log="$VENV/pip-step.log"
    echo "installing $name"
    if ! "$@" >"$log" 2>&1; then
        tail -5 "$log" >&2
        fail "pip failed installing $name (log: $log)"
    fi
    echo "  $name: $((SECONDS - t0)) s"
}

if [[ $FORCE == 0 ]] && ready; then
    echo "sglang oracle env ready: $VENV (sglang $("$PY" -P -c 'import importlib.metadata as m; print(m.version("sglang"))' 2>/dev/null), checked in $((SECONDS - START_S)) s)"
    exit 0
fi

if [[ ! -x "$PY" ]]; then
    echo "creating $VENV"
    python3 -m venv "$VENV" || fail "python3 -m venv $VENV failed"
fi
PIP=("$PY" -m pip install -q)
CONSTRAINT="$VENV/torch-constraint.txt"
echo "torch==2.13.0" >"$CONSTRAINT"

if [[ $FORCE == 1 ]] || ! check "import torch; assert torch.__version__.startswith('2.13.0')"; then
    step "torch==2.13.0 (local CPU wheel)" "${PIP[@]}" torch==2.13.0
fi
check "import torch; assert torch.__version__ == '2.13.0+cpu'" \
    || fail "torch is not 2.13.0+cpu in $VENV (a CUDA build crept in? rm -rf $VENV and rerun)"

if [[ $FORCE == 1 ]] || ! check "import importlib.metadata as m; assert m.version('sglang') == '0.5.23'"; then
    step "sglang==0.5.23 (--no-deps)" "${PIP[@]}" --no-deps sglang==0.5.23
fi

if [[ $FORCE == 1 ]] || ! check "import importlib.metadata as m; assert m.version('transformers') == '5.19.0'"; then
    step "transformers==5.19.0" "${PIP[@]}" -c "$CONSTRAINT" transformers==5.19.0
fi

# What the sizing modules import at module level (found by importing them until nothing was missing).
PURE=(orjson psutil pybase64 requests pillow starlette msgspec pyzmq IPython aiohttp dill
      sentencepiece==0.2.1 compressed-tensors==0.18.0 gguf)
if [[ $FORCE == 1 ]] || ! check "import orjson, psutil, pybase64, requests, PIL, starlette, msgspec, zmq, IPython, aiohttp, dill, sentencepiece, compressed_tensors, gguf"; then
    step "pure-Python imports" "${PIP[@]}" -c "$CONSTRAINT" "${PURE[@]}"
fi
if [[ $FORCE == 1 ]] || ! check "import importlib.metadata as m; m.version('triton'); m.version('torchvision'); m.version('apache-tvm-ffi')"; then
    step "triton, torchvision, apache-tvm-ffi (--no-deps)" "${PIP[@]}" --no-deps triton==3.8.0 torchvision==0.28.0 apache-tvm-ffi==0.1.11
fi

check "import torch; assert torch.__version__ == '2.13.0+cpu'" \
    || fail "a later step replaced torch 2.13.0+cpu; rm -rf $VENV and rerun"
if ! ready; then
    echo "setup_sglang_env: the harness's self-check still fails; its last lines:" >&2
    (cd / && "$PY" -P "$HARNESS" --self-check 2>&1 | tail -3) >&2 || true
    exit 1
fi
echo "sglang oracle env ready: $VENV ($(du -sh "$VENV" | cut -f1), $((SECONDS - START_S)) s)"
