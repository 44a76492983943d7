"""What vLLM 0.33 checks of a Step5 plan at start-up, refused up front (model_specs/step5_layers.py).

- The sparse layers run on STEP5_DSA, which needs SM90, SM100 or SM103 (models/step5/nvidia/model.py
  l.1025-1031: NotImplementedError "Step5 DSA requires SM90, SM100 or SM103"); a GPU of another
  compute capability, or vLLM's CPU platform, cannot serve the model (no GPU named: not checked).
- A block holds whole 8-token regions (sparse_summary_cache.py l.145-146).
- One K/V page holds the tail ring's 7 + k rows of 1,024 B, whole rows (csa_tail_ring.py l.169-175).
"""

from __future__ import annotations

from hkv.model_specs.family_specs import is_circular_buffer_spec, is_sparse_kv_spec, is_summary_spec
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.errors import InvalidInputError, LayoutUnavailableError
from hkv.planner.paged_layer import PagedLayer

STEP5_DSA_CAPABILITIES = ((9, 0), (10, 0), (10, 3))


def check_step5_gpu(layers: list[PagedLayer], gpu: str | None, cpu_engine: bool) -> None:
    """Raises LayoutUnavailableError where vLLM cannot run Step5's DSA layers: on `gpu` (a GPU table
    name) of another compute capability, or on its CPU platform (no device capability at all)."""
    if not any(is_sparse_kv_spec(layer.spec) for layer in layers) or (gpu is None and not cpu_engine):
        return
    capability = None if cpu_engine or gpu is None else get_gpu(gpu).compute_capability
    if capability not in STEP5_DSA_CAPABILITIES:
        where = "vLLM's CPU platform" if cpu_engine else (
            f"{gpu} ({'not CUDA' if capability is None else f'sm{capability[0]}{capability[1]}'})")
        raise LayoutUnavailableError(f"vLLM 0.33 runs Step5's sparse layers on STEP5_DSA, which needs SM90, SM100 "
                                     f"or SM103, not {where}", fields=("gpu",))


def check_step5_pages(layers: list[PagedLayer]) -> None:
    """Raises InvalidInputError where vLLM 0.33 refuses Step5's pages at this block size."""
    for layer in layers:
        spec = layer.spec
        if is_summary_spec(spec):
            from hkv.model_specs.step5_layers import REGION_LEN  # loaded: spec is one of its classes
            if layer.block_size % REGION_LEN:
                raise InvalidInputError(f"block_size {layer.block_size}: Step5's KV blocks must hold whole "
                                        f"{REGION_LEN}-token regions; pass a multiple of {REGION_LEN}",
                                        fields=("block_size",))
        if is_circular_buffer_spec(spec):
            page = layer.page_size_bytes
            if page % spec.row_bytes or spec.capacity_rows(layer.block_size) < spec.required_rows:
                raise InvalidInputError(
                    f"block_size {layer.block_size}: Step5's CSA tail ring needs {spec.required_rows} rows of "
                    f"{spec.row_bytes:,} B in one {page:,}-byte KV page of {layer.name}; pass a larger block_size",
                    fields=("block_size",))
