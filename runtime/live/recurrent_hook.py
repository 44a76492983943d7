"""Recurrent mixers on hkv's state pool: transformers computes, hkv owns the memory.

Each recurrent mixer module (Mamba1/2, gated / Kimi delta net, short conv, lightning attention) gets
its `forward` wrapped. The wrapper reads the step in progress from a `StepSlot` the ModelRunner
fills (Jamba's decoder layer passes its mixer no extra keywords, so `hkv_step=` cannot reach it)
and calls the module's own forward per request, with a `StateView` over that request's live
state block as the cache:

- requests that continue by exactly one token are batched into one call ([batch, 1, hidden]):
  the mixers' decode path is batched and updates each row's state on its own;
- every other request gets its own call over its packed rows ([1, T, hidden]), so states never
  leak between requests without needing sequence boundaries (seq_idx / cu_seqlens) that not
  every mixer's torch path takes;
- mixers whose multi-token path starts from a zero state whatever the cache holds (Jamba's
  selective scan takes no initial state) continue a chunk one token at a time.

Which classes are recurrent mixers, and how they take their cache, is the MIXERS table.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from hkv.runtime.live.paged_kv_cache import LayerStates, UnsupportedLayoutError
from hkv.runtime.live.state_view import StateView


@dataclass(frozen=True)
class MixerKind:
    # the keyword the module's forward takes its cache by, newest name first: transformers 5.24
    # renamed cache_params / past_key_values to `cache` (the old names still map onto it, but a
    # caller's `cache=None` then wins over them)
    cache_args: tuple[str, ...]
    continues_chunks: bool  # its multi-token path starts from the cached state


_MAMBA = MixerKind(("cache", "cache_params"), continues_chunks=True)
_PAST = MixerKind(("cache", "past_key_values"), continues_chunks=True)
# transformers 5 recurrent mixer classes, by class name.
MIXERS: dict[str, MixerKind] = {
    "BambaMixer": _MAMBA,
    "GraniteMoeHybridMambaLayer": _MAMBA,
    "NemotronHMamba2Mixer": _MAMBA,
    "FalconH1Mixer": _MAMBA,
    "JambaMambaMixer": MixerKind(("cache", "cache_params"), continues_chunks=False),
    "Qwen3NextGatedDeltaNet": _MAMBA,
    "Qwen3_5GatedDeltaNet": _MAMBA,
    "Qwen3_5MoeGatedDeltaNet": _MAMBA,
    "KimiLinearDeltaAttention": _MAMBA,  # gated delta net with per-channel decay: GDN's cache calls
    "BailingHybridDeltaAttention": _MAMBA,  # Ling / Ring hybrids: Kimi delta attention
    "MiniMaxLightningAttention": _PAST,
    "Lfm2ShortConv": _PAST,
    "Lfm2MoeShortConv": _PAST,
}


@dataclass(frozen=True)
class StateStep:
    """The recurrent side of one packed forward (see PagedStep for the attention side)."""

    row_starts: tuple[int, ...]  # [num_seqs + 1]: request i owns packed rows [starts[i], starts[i+1])
    has_past: tuple[bool, ...]  # per request: its step starts after token 0
    live_blocks: Mapping[int, torch.Tensor]  # recurrent group id -> [num_seqs] int64 live state block
    decode_seqs: tuple[int, ...]  # requests continuing by one token, batched into one call
    decode_rows: torch.Tensor  # [len(decode_seqs)] int64: their packed rows


class StepSlot:
    """The StateStep of the forward in progress: ModelRunner.execute sets it around the forward."""

    def __init__(self) -> None:
        self.step: StateStep | None = None


def recurrent_mixers(model: torch.nn.Module) -> dict[int, tuple[torch.nn.Module, MixerKind]]:
    """The model's recurrent mixer modules (MIXERS) by layer index."""
    found: dict[int, tuple[torch.nn.Module, MixerKind]] = {}
    for module in model.modules():
        kind = MIXERS.get(type(module).__name__)
        if kind is not None:
            found[int(module.layer_idx)] = (module, kind)  # type: ignore[arg-type]
    return found


def bind_mixer(module: torch.nn.Module, kind: MixerKind, states: LayerStates, slot: StepSlot) -> None:
    """Replace `module.forward` by the per-request wrapper (module docstring); idempotent per module."""
    original = getattr(module, "_hkv_original_forward", module.forward)
    module._hkv_original_forward = original  # type: ignore[assignment]
    named = {p.name for p in inspect.signature(original).parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    layer_idx = int(module.layer_idx)  # type: ignore[arg-type]
    cache_arg = next((name for name in kind.cache_args if name in named), None)
    if cache_arg is None:
        raise UnsupportedLayoutError(f"layer {layer_idx}: {type(module).__name__}.forward takes its cache by "
                                     f"none of {', '.join(kind.cache_args)}; this transformers release is not "
                                     "supported by hkv run")
    # every name the cache goes by is hkv's to fill, not the caller's
    passed = named - {"hidden_states", "attention_mask", *kind.cache_args}

    def forward(hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        step = slot.step
        if step is None:
            raise RuntimeError(f"layer {layer_idx}: recurrent mixer called outside hkv's ModelRunner")
        if args:
            raise RuntimeError(f"layer {layer_idx}: unexpected positional arguments to the mixer")
        extra = {k: v for k, v in kwargs.items() if k in passed}

        def call(x: torch.Tensor, view: StateView) -> tuple[torch.Tensor, bool]:
            out = original(x, **{cache_arg: view}, attention_mask=None, **extra)
            view.store()
            return (out[0], True) if isinstance(out, tuple) else (out, False)

        out, as_tuple = run_layer(hidden_states, step, layer_idx, states, kind, call)
        return (out, None) if as_tuple else out

    module.forward = forward  # type: ignore[method-assign]


def run_layer(hidden_states: torch.Tensor, step: StateStep, layer_idx: int, states: LayerStates,
              kind: MixerKind, call: Callable[[torch.Tensor, StateView], tuple[torch.Tensor, bool]],
              ) -> tuple[torch.Tensor, bool]:
    """hidden_states [1, num_tokens, hidden] -> the mixer's output over the same packed rows."""
    blocks = step.live_blocks[states.group_id]
    starts = step.row_starts
    pieces: list[torch.Tensor | None] = [None] * (len(starts) - 1)
    as_tuple = False
    if step.decode_seqs:
        rows = hidden_states[0].index_select(0, step.decode_rows)[:, None]  # [batch, 1, hidden]
        seqs = torch.tensor(step.decode_seqs, device=blocks.device)
        out, as_tuple = call(rows, StateView(layer_idx, states, blocks.index_select(0, seqs), True))
        for j, i in enumerate(step.decode_seqs):
            pieces[i] = out[j]
    for i in range(len(pieces)):
        if pieces[i] is not None:
            continue
        x = hidden_states[:, starts[i]:starts[i + 1]]
        block = blocks[i:i + 1]
        if step.has_past[i] and not kind.continues_chunks and x.shape[1] > 1:
            outs = []
            for t in range(x.shape[1]):
                y, as_tuple = call(x[:, t:t + 1], StateView(layer_idx, states, block, True))
                outs.append(y[0])
            pieces[i] = torch.cat(outs)
        else:
            y, as_tuple = call(x, StateView(layer_idx, states, block, step.has_past[i]))
            pieces[i] = y[0]
    return torch.cat(pieces)[None], as_tuple  # type: ignore[arg-type]


def copy_states(states: Mapping[int, LayerStates], copies: list[tuple[int, int, int]]) -> None:
    """Apply (group id, source block, destination block) copies to every layer of each group;
    all sources are read before any destination is written."""
    by_group: dict[int, tuple[list[int], list[int]]] = {}
    for group_id, source, destination in copies:
        sources, destinations = by_group.setdefault(group_id, ([], []))
        sources.append(source)
        destinations.append(destination)
    for layer in states.values():
        pair = by_group.get(layer.group_id)
        if pair is None:
            continue
        device = layer.tensors[0].device
        src = torch.tensor(pair[0], device=device)
        dst = torch.tensor(pair[1], device=device)
        for tensor in layer.tensors:
            tensor[dst] = tensor[src]
