"""What a gated-delta-net layer keeps alive through the MLP of vLLM's compiled profile forward.

vLLM compiles the decoder piecewise, split at the attention-like custom ops; the generated code
drops a piece's inputs only after the piece returns, so every tensor made before the op and read
after it is alive through the whole next piece, the MLP included (compilation/backends.py
split_graph, compilation/codegen.py; read in 0.23.0 and 0.32). In the profile run the GDN op
itself returns at once (no attention metadata: `_forward_core` warms its kernels on 64 tokens
and returns), so its chunk workspaces never appear at max_num_batched_tokens; what does appear
is, per token and rank, in the model dtype:

- Qwen3.5 / Qwen3.6 layout (`in_proj_qkvz` not interleaved): z is a view of the projection's
  output, so the whole projection (2 x key_dim + 2 x value_dim) / TP, the zeroed core output
  value_dim / TP and the decoder's attention-output buffer (hidden) are held;
- Qwen3-Next's interleaved layout copies q, k, v and z apart: z and the core output
  (2 x value_dim / TP) and the attention-output buffer (hidden).

Under --enforce-eager nothing is compiled and Python frees those tensors as usual: 0.
Source notes: docs/notes_gdn_prefill_workspace.md.
"""

from __future__ import annotations

from hkv.model_specs.layer_desc import RecurrentDesc
from hkv.model_specs.model_spec import ModelSpec

INTERLEAVED_QKVZ_FAMILIES = frozenset({"qwen3_next"})


def gdn_held_elements(model: ModelSpec, tp: int) -> int:
    """Elements per token one GDN layer's compiled piece keeps through the MLP; 0 without GDN."""
    layer = next((d for d in model.cache_layers if isinstance(d, RecurrentDesc) and d.variant == "gdn"), None)
    if layer is None:
        return 0
    key_head_dim, value_head_dim = layer.ssm_dims
    value_dim = layer.ssm_heads * value_head_dim
    key_dim = (layer.conv_dim - value_dim) // 2
    if model.family in INTERLEAVED_QKVZ_FAMILIES:
        return model.hidden_size + 2 * value_dim // tp
    return model.hidden_size + (2 * key_dim + 3 * value_dim) // tp
