"""StateView: the cache object a transformers recurrent mixer sees during one of hkv's calls.

transformers' mixers (Mamba1/2, gated delta net, short conv, lightning attention) touch their
cache only through a few methods: `get_conv_state` / `get_recurrent_state` (None: start from
zero), `update_conv_state` / `update_recurrent_state`, `is_recording_past`, and MiniMax's
`get_linear_cache` / `set_linear_cache`. A StateView answers them for a batch of requests whose
states live in hkv's pools: `load` copies the states out of their live blocks, the mixer reads
and updates the copies (in place for one-token steps, by `update_*` for longer ones), and
`store` writes them back. Nothing else is kept between calls: the pool is the only state.

Conv state: hkv stores the kernel-1 inputs a step needs, as the plan counts them
((kernel-1, conv_dim), vLLM's shape); transformers works on [batch, conv_dim, kernel] windows
whose oldest column it never reads, so `load` puts a zero column in front and `store` drops it.
"""

from __future__ import annotations

from typing import Any

import torch

from hkv.runtime.live.paged_kv_cache import LayerStates


class StateView:
    """States of a batch of requests for one layer (mutated by the mixer; see module docstring).

    `blocks` [batch] int64: each request's live state block. `has_past`: the requests start
    after token 0, so the mixer continues their states (all or none of a batch).
    """

    def __init__(self, layer_idx: int, states: LayerStates, blocks: torch.Tensor, has_past: bool) -> None:
        self.layer_idx = layer_idx
        self.states = states
        self.blocks = blocks
        self.has_past = has_past
        conv, ssm = states.conv, states.ssm
        self.conv: torch.Tensor | None = None  # [batch, conv_dim, kernel]
        self.ssm: torch.Tensor | None = None  # [batch, *ssm shape]
        if conv is not None:
            kept_len, conv_dim = conv.shape[1:]
            self.conv = torch.zeros(len(blocks), conv_dim, kept_len + 1, dtype=conv.dtype, device=conv.device)
            if has_past:
                self.conv[:, :, 1:] = conv[blocks].transpose(1, 2)
        if ssm is not None:
            self.ssm = ssm[blocks] if has_past else torch.zeros((len(blocks), *ssm.shape[1:]), dtype=ssm.dtype,
                                                                 device=ssm.device)

    def store(self) -> None:
        """Write the (updated) states back into the requests' live blocks."""
        conv, ssm = self.states.conv, self.states.ssm
        if conv is not None and self.conv is not None:
            conv[self.blocks] = self.conv[:, :, 1:].transpose(1, 2).to(conv.dtype)
        if ssm is not None and self.ssm is not None:
            ssm[self.blocks] = self.ssm.to(ssm.dtype)

    # --- transformers' linear-attention cache interface -------------------------------------

    def get_conv_state(self, layer_idx: int, state_idx: int = 0) -> torch.Tensor | None:
        return self.conv if self.has_past else None

    def get_recurrent_state(self, layer_idx: int, state_idx: int = 0) -> torch.Tensor | None:
        return self.ssm if self.has_past else None

    def update_conv_state(self, conv_states: torch.Tensor, layer_idx: int, state_idx: int = 0,
                          **kwargs: Any) -> torch.Tensor:
        """conv_states [batch, conv_dim, T] -> the inputs the causal conv needs: the kept
        window then the T new columns (zero-padded to the kernel when there is no past)."""
        assert self.conv is not None, f"layer {self.layer_idx}: a conv update on a state without conv"
        kernel_len = self.conv.shape[-1]
        if self.has_past:
            full = torch.cat([self.conv, conv_states.to(self.conv.dtype)], dim=-1)
        else:
            full = torch.nn.functional.pad(conv_states, (max(0, kernel_len - conv_states.shape[-1]), 0))
        self.conv = full[..., -kernel_len:].clone()
        return full

    def update_recurrent_state(self, recurrent_states: torch.Tensor, layer_idx: int | None = None,
                               state_idx: int = 0, **kwargs: Any) -> torch.Tensor:
        assert self.ssm is not None, f"layer {self.layer_idx}: a recurrent update on a conv-only state"
        self.ssm = recurrent_states
        return recurrent_states

    def is_recording_past(self, layer_idx: int) -> bool:
        return False

    def has_previous_state(self, layer_idx: int | None = None, state_idx: int | None = None) -> bool:
        return self.has_past

    def get_linear_cache(self, layer_idx: int) -> torch.Tensor | None:  # MiniMax
        return self.get_recurrent_state(layer_idx)

    def set_linear_cache(self, layer_idx: int, state: torch.Tensor) -> None:
        self.update_recurrent_state(state, layer_idx)
