"""SGLang 0.5.23's own pool sizing, called on a CPU-only machine (run INSIDE `.venv-sglang`).

    .venv-sglang/bin/python -P tests/oracle/sglang_side/sglang_harness.py < cases.json > results.jsonl
    .venv-sglang/bin/python -P tests/oracle/sglang_side/sglang_harness.py --self-check

Input (stdin): {"cases": [case, ...]}, each case
    {"id": str, "config_dir": a folder holding config.json, "gpu_name": str, "gpu_total_bytes": int,
     "free_before_load_bytes": int, "free_after_weights_bytes": int, "tp": int,
     "context_length": int | null, "server_args": {ServerArgs field: value, ...}}
Output (stdout): one JSON object per case, in order: the case's inputs plus the keys of hkv's
`SglangPools.to_json()` (mem_fraction_static, available_bytes, max_total_num_tokens, swa_tokens,
max_mamba_cache_size, max_running_requests, context_len, page_size), a few resolved arguments
(`resolved`), and `kv_budget_bytes` (what `_profile_available_bytes` hands the KV pools, after the
state pool). A case SGLang rejects carries `error` ("ExceptionType: message") instead.

The path is SGLang's, start to end: `ServerArgs(...)` -> `publish(role="scheduler")` (which runs
`resolve_once`: every resolution hook, `handle_gpu_memory_settings`' mem_fraction_static from the
card's memory and the model overrides) -> `ModelConfig.from_server_args` -> the runner's own
helpers for the layer split, KV dtype and sliding window -> `KVCacheConfigurator` ->
`_resolve_memory_pool_config` (`_profile_available_bytes`, `_handle_max_mamba_cache`,
`create_memory_pool_configurator(...).calculate_pool_sizes`, `resolve_max_num_reqs`). The harness
computes nothing itself. `available_bytes` is the rest before the state pool:
`_profile_available_bytes`' `available - free_before x (1 - mem_fraction_static)` (SGLang's float
GiB, x 2^30, truncated as SGLang truncates its own result).

Fakes, each because this machine has no GPU, and why none changes the arithmetic:

1. torch.cuda's queries (`is_available`, `device_count`, `current_device`, `set_device`,
   `empty_cache`, `get_device_name`, `get_device_capability`, `get_device_properties`,
   `mem_get_info`) and `torch.version.cuda` answer as one card of the case's name and memory
   would. They are what SGLang reads the card through: `get_device_memory_capacity` (no nvidia-smi
   here, so SGLang's own fallback `torch.cuda.mem_get_info()[1] // 2^20`, nvidia-smi's
   memory.total on a real card) and `get_available_gpu_memory` (`mem_get_info()[0] / 2^30`). The
   case says what free memory the card has before the weights load and after; SGLang measures it.
2. The fakes go in only after SGLang's modules are imported on the real CPU-only torch, then
   SGLang's cached platform probes (`is_cuda`, `is_cuda_alike`, `current_platform`) are reset so
   the run sees CUDA. Importing with CUDA faked would need the CUDA kernel packages (sgl_kernel)
   at import. The sizing modules' import-time flags (`_is_hip`, `_is_npu`, `_is_cpu`) are False on
   CUDA too. One CUDA-only import-time registration is redone by hand:
   `QUANTIZATION_METHODS["mxfp4"] = Mxfp4Config`, which srt/layers/quantization/__init__.py does
   under `is_cuda()` (gpt-oss's checkpoints are mxfp4; the quantization method never enters the
   KV sizing).
3. torchvision's two meta-kernel registrations (`torchvision::nms`, `torchvision::qnms`) get a
   schema defined first: the PyPI torchvision is CUDA-linked, its C++ ops cannot load beside
   torch+cpu, and its import fails on registering a fake kernel for an op that does not exist.
   SGLang imports torchvision only for image preprocessing.
4. No weights are loaded, so the runner's `model` is a stand-in with no attributes: the runner's
   `resolve_layer_indices` then owns layers [0, num_hidden_layers) (no PP stage split, as at
   pp_size 1), `configure_kv_cache_dtype` sees no checkpoint KV scales, and
   `resolve_sliding_window_size` falls back to `model_config.sliding_window_size` (or the
   attention chunk) instead of a model class's `get_attention_sliding_window_size` (some return
   window - 1). The window only decides SGLang's "SWA pool cannot hold one request" error, and
   the request-capped SWA pool of `--disable-radix-cache --max-running-requests` (not exercised).
5. TP > 1: the single process plays rank 0. SGLang takes the MIN of every rank's free memory
   (`get_available_gpu_memory(distributed=True)`: an all_reduce of a float32 tensor over the
   WORLD group's cpu_group). Every rank of a case has the same free memory, so the harness's
   WORLD group is a real one-rank gloo group: the collective and its float32 rounding run as
   SGLang wrote them, and the MIN of equal values is the value.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import json
import logging
import os
import pkgutil
import sys
import traceback
import types
from dataclasses import dataclass
from typing import Any

import torch

GIB = 1 << 30
RESULT_KEYS = ("mem_fraction_static", "available_bytes", "max_total_num_tokens", "swa_tokens",
               "max_mamba_cache_size", "max_running_requests", "context_len", "page_size")


def define_torchvision_op_schemas() -> None:
    """Fake 3 (module docstring): let the CUDA-linked torchvision import beside torch+cpu. Call it
    first in any script that imports SGLang modules in .venv-sglang (configs/ imports torchvision)."""
    for op in ("nms", "qnms"):
        torch.library.define(f"torchvision::{op}",
                             "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


def import_sglang() -> None:
    """Import every module the sizing path reaches, on the real CPU-only torch (fake 2)."""
    define_torchvision_op_schemas()
    from sglang.srt import arg_groups

    # The resolution pipeline imports its hooks lazily; import them all now, before CUDA is faked.
    for mod in pkgutil.walk_packages(arg_groups.__path__, "sglang.srt.arg_groups."):
        importlib.import_module(mod.name)
    for name in ("sglang.srt.server_args", "sglang.srt.configs.model_config",
                 "sglang.srt.mem_cache.kv_cache_configurator",
                 "sglang.srt.model_executor.pool_configurator",
                 "sglang.srt.model_executor.model_runner_components.layer_setup",
                 "sglang.srt.model_executor.model_runner_components.load_model_utils",
                 "sglang.srt.model_executor.model_runner_components.kv_pool_runtime",
                 "sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state",
                 "sglang.srt.mem_cache.kv_cache_dtype"):
        importlib.import_module(name)
    from sglang.srt.layers.quantization import QUANTIZATION_METHODS
    from sglang.srt.layers.quantization.mxfp4 import Mxfp4Config

    # srt/layers/quantization/__init__.py registers it under is_cuda(); see fake 2.
    QUANTIZATION_METHODS.setdefault("mxfp4", Mxfp4Config)


def served_architectures() -> set[str]:
    """The architectures SGLang's model registry holds: the names every srt/models/ module binds to
    `EntryClass` (what `import_model_classes` collects), read from the sources without importing
    them (most need the CUDA kernels)."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.origin is not None
    names: set[str] = set()
    for path in (Path(spec.origin).parent / "srt" / "models").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
                value = node.value
                for item in value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]:
                    if isinstance(item, ast.Name):
                        names.add(item.id)
                    elif isinstance(item, ast.Attribute):
                        names.add(item.attr)
    return names


@dataclass
class FakeCard:
    """Fake 1: what torch.cuda reports for the case's card. `free_bytes` changes between the
    measurement before the weights load and the profile after them."""

    name: str
    total_bytes: int
    free_bytes: int
    capability: tuple[int, int] = (9, 0)

    def install(self) -> None:
        props = types.SimpleNamespace(name=self.name, total_memory=self.total_bytes,
                                      major=self.capability[0], minor=self.capability[1],
                                      is_integrated=False, multi_processor_count=132)
        cuda = torch.cuda
        cuda.is_available = lambda: True
        cuda.device_count = lambda: 1
        cuda.current_device = lambda: 0
        cuda.set_device = lambda *a, **k: None
        cuda.empty_cache = lambda: None
        cuda.get_device_name = lambda *a, **k: self.name
        cuda.get_device_capability = lambda *a, **k: self.capability
        cuda.get_device_properties = lambda *a, **k: props
        cuda.mem_get_info = lambda *a, **k: (self.free_bytes, self.total_bytes)
        torch.version.cuda = "12.9"
        from sglang.srt.utils import common

        common.is_cuda.cache_clear()
        common.is_cuda_alike.cache_clear()
        # The architecture probes behind get_platform().is_sm90 / is_sm100 / is_blackwell were cached
        # False at import on CPU torch; model overrides read them (MiniMax-M3: fa3 + page 128 on Hopper).
        for probe in ("is_sm80_supported", "is_sm90_supported", "is_sm100_supported", "is_sm100_or_sm110_supported",
                      "is_sm110_supported", "is_sm120_supported", "is_blackwell_supported",
                      "is_ampere_with_cuda_12_3", "is_hopper_with_cuda_12_3"):
            getattr(common, probe).cache_clear()
        from sglang.srt import platforms

        platforms._current_platform = None  # re-detected: CudaSRTPlatform


def _one_rank_world() -> None:
    """Fake 5's WORLD group: gloo, one rank, in-process store."""
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("gloo", store=torch.distributed.HashStore(), rank=0, world_size=1)


def _spy_configurator_class() -> type:
    """KVCacheConfigurator, recording the rest before the state pool and the KV budget; the
    parent's methods run unchanged."""
    from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator

    class RecordingConfigurator(KVCacheConfigurator):
        def _handle_max_mamba_cache(self, total_rest_memory):
            self.__dict__["rest_before_state_gib"] = total_rest_memory
            return super()._handle_max_mamba_cache(total_rest_memory)

        def _profile_available_bytes(self, pre_model_load_memory: int) -> int:
            kv_budget = super()._profile_available_bytes(pre_model_load_memory)
            self.__dict__["kv_budget_bytes"] = kv_budget
            return kv_budget

    return RecordingConfigurator


def run_case(case: dict[str, Any], card: FakeCard) -> dict[str, Any]:
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.configs.model_config import AttentionArch, ModelConfig
    from sglang.srt.mem_cache import kv_cache_dtype
    from sglang.srt.model_executor.model_runner_components.kv_pool_runtime import (
        is_post_capture_kv_active,
    )
    from sglang.srt.model_executor.model_runner_components.layer_setup import resolve_layer_indices
    from sglang.srt.model_executor.model_runner_components.load_model_utils import (
        resolve_sliding_window_size,
    )
    from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
        resolve_spec_aux_hidden_state_config,
    )
    from sglang.srt.runtime_context import (
        SpawnRanks,
        get_model,
        get_parallel,
        get_schedule,
        get_spec,
        publish,
    )
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    from sglang.srt.utils.common import get_available_gpu_memory

    card.free_bytes = case["free_before_load_bytes"]
    kwargs = dict(case.get("server_args") or {})
    kwargs["tp_size"] = case.get("tp", 1)
    if case.get("context_length") is not None:
        kwargs["context_length"] = case["context_length"]
    server_args = ServerArgs(model_path=case["config_dir"], **kwargs)
    publish(server_args, role="scheduler", ranks=SpawnRanks(world_rank=0, gpu_id=0))
    # Fake 5: the WORLD group is a one-rank gloo group (cpu_group None: the default group).
    get_parallel().override_permanently(world_group=types.SimpleNamespace(cpu_group=None, world_size=1))
    model_config = ModelConfig.from_server_args(server_args)
    # bootstrap.measure_pre_model_load_memory: the MIN over the WORLD group when it has several ranks.
    pre_model_load_gib = get_available_gpu_memory(
        "cuda", 0, distributed=get_parallel().launch_world_size > 1, cpu_group=None)

    model = types.SimpleNamespace()  # fake 4
    spec_algorithm = SpeculativeAlgorithm.from_string(get_spec().speculative_algorithm)
    kv_cache_dtype_str, kv_dtype = kv_cache_dtype.configure_kv_cache_dtype(
        server_args_kv_cache_dtype=get_model().kv_cache_dtype, model=model,
        model_dtype=model_config.dtype, is_draft_worker=False,
        is_dflash=spec_algorithm.is_dflash_family(), speculative_draft_attention_backend=None,
        speculative_draft_kv_cache_dtype=get_spec().speculative_draft_kv_cache_dtype)
    kvc = _spy_configurator_class()(
        device="cuda", gpu_id=0, attn_dp_size=get_parallel().attn_dp_size, pp_size=1, pp_group=None,
        model=model, model_config=model_config, server_args=server_args, kv_cache_dtype=kv_dtype,
        kv_cache_dtype_str=kv_cache_dtype_str if kv_cache_dtype_str is not None else get_model().kv_cache_dtype,
        model_dtype=model_config.dtype, page_size=get_schedule().page_size,
        sliding_window_size=resolve_sliding_window_size(model, model_config),
        spec_algorithm=spec_algorithm, is_draft_worker=False,
        post_capture_kv_active=is_post_capture_kv_active(
            server_args=server_args, is_draft_worker=False, spec_algorithm=spec_algorithm,
            token_to_kv_pool_allocator=None),
        spec_aux_config=resolve_spec_aux_hidden_state_config(
            server_args=server_args, model_config=model_config, spec_algorithm=spec_algorithm,
            is_draft_worker=False),
        is_hybrid_swa=model_config.is_hybrid_swa, is_hybrid_swa_compress=model_config.is_hybrid_swa_compress,
        use_mla_backend=model_config.attention_arch == AttentionArch.MLA,
        layer_info=resolve_layer_indices(model=model, model_config=model_config, is_draft_worker=False),
        forward_stream=None, req_to_token_pool=None, token_to_kv_pool_allocator=None,
        memory_pool_config=None)

    card.free_bytes = case["free_after_weights_bytes"]
    config = kvc._resolve_memory_pool_config(pre_model_load_gib)
    recorded = kvc.__dict__
    has_state = kvc.mambaish_config is not None
    schedule = get_schedule()
    rest_gib = recorded.get("rest_before_state_gib")
    return {
        "mem_fraction_static": config.mem_fraction_static,
        "available_bytes": int(rest_gib * GIB) if has_state else recorded["kv_budget_bytes"],
        "max_total_num_tokens": config.max_total_num_tokens,
        "swa_tokens": config.swa_max_total_num_tokens if kvc.is_hybrid_swa else None,
        "max_mamba_cache_size": schedule.max_mamba_cache_size if has_state else None,
        "max_running_requests": config.max_running_requests,
        "context_len": model_config.context_len,
        "page_size": schedule.page_size,
        "kv_budget_bytes": recorded["kv_budget_bytes"],
        "resolved": {
            "gpu_memory_mib": card.total_bytes // (1 << 20),
            "chunked_prefill_size": schedule.chunked_prefill_size,
            "cuda_graph_max_bs": resolving_view(server_args).cuda_graph_config.decode.max_bs,
            "kv_cache_dtype": str(kv_dtype),
            "is_hybrid_swa": bool(kvc.is_hybrid_swa),
            "sliding_window_size": kvc.sliding_window_size,
            "architecture": model_config.hf_config.architectures[0],
        },
    }


def _one(case: dict[str, Any], card: FakeCard) -> dict[str, Any]:
    card.name = case["gpu_name"]
    card.total_bytes = case["gpu_total_bytes"]
    # SGLang's argument hooks write process-wide settings into os.environ (--mamba-ssm-dtype sets
    # SGLANG_MAMBA_SSM_DTYPE, serving_hook.py l.440); every case starts from the environment it found.
    environment = dict(os.environ)
    try:
        # SGLang logs and warns on stdout/stderr; keep stdout for the JSON lines.
        with contextlib.redirect_stdout(io.StringIO()):
            result = run_case(case, card)
    except Exception as err:  # noqa: BLE001 -- SGLang's own refusal, any type: reported per case, the batch goes on
        last = traceback.extract_tb(err.__traceback__)[-1]
        result = {"error": f"{type(err).__name__}: {err}".splitlines()[0][:500],
                  "where": f"{last.filename.split('site-packages/')[-1]}:{last.lineno}"}
    finally:
        os.environ.clear()
        os.environ.update(environment)
    return {**case, **result}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-check", action="store_true",
                        help="import SGLang's sizing modules and exit 0 when they import")
    parser.add_argument("--served-architectures", action="store_true",
                        help="print, as a JSON list, every EntryClass name of SGLang's srt/models/")
    opts = parser.parse_args(argv)
    if opts.served_architectures:
        print(json.dumps(sorted(served_architectures())))
        return 0
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    import warnings

    warnings.filterwarnings("ignore")
    with contextlib.redirect_stdout(sys.stderr):
        import_sglang()
    if opts.self_check:
        print("sglang sizing modules import")
        return 0
    cases = json.load(sys.stdin)["cases"]
    # _profile_available_bytes calls gc.collect() (0.6 s a case over SGLang's imported modules);
    # freezing what exists now leaves it only the objects each case makes.
    gc.freeze()
    card = FakeCard(name="", total_bytes=0, free_bytes=0)
    card.install()
    _one_rank_world()
    for case in cases:
        print(json.dumps(_one(case, card)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
