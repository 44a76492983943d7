"""ModelRunner: runs scheduler steps through a transformers causal LM on hkv's paged KV cache.

One step is one forward of shape [1, num_tokens]: the scheduled tokens of every request packed
one request after the other, each with its own position. The attention hook (attention_hook.py)
gets the step's context as the `hkv_step=` keyword: per-request query offsets and context
lengths, and per KV cache group the block tables and slot mappings. Logits are computed only
for the last token of each request that emits a token this step.

Recurrent layers (Mamba, gated delta net, short conv, lightning attention) run transformers'
own mixers per request on states in the layout's pages (recurrent_hook.py); the runner applies
the step's state copies (a new live block, a restored checkpoint) before the forward.

    runner = ModelRunner(model, layout)                 # allocates the pools, binds the layers
    runner.reset()                                      # before a new scheduler's first step
    step = runner.execute(scheduler_output)             # StepOutput: request ids + logits
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import torch

from hkv.kernels import resolve_backend
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID
from hkv.planner.layout import Layout
from hkv.runtime.live.attention_hook import LayerBinding, PagedStep, register_paged_attention
from hkv.runtime.live.mla_attention_hook import bind_latent_attention
from hkv.runtime.live.tensor_block_tables import StepRows, TensorBlockTables
from hkv.runtime.live.paged_kv_cache import PagedKVCache, UnsupportedLayoutError
from hkv.runtime.live.recurrent_hook import StateStep, StepSlot, bind_mixer, copy_states, recurrent_mixers
from hkv.runtime.scheduler.scheduler_output import SchedulerOutput


class _StepInputs(NamedTuple):
    """What `_prepare` builds for one step."""

    step: PagedStep
    token_ids: torch.Tensor  # [num_tokens] int64, on the device
    emit_rows: torch.Tensor  # [num_emitting] int64: the packed rows whose logits are kept
    rows: StepRows  # the requests' rows in the runner's tables
    starts: np.ndarray  # [num_seqs + 1] int64 on the host: each request's first packed row


class StepOutput(NamedTuple):
    request_ids: tuple[str, ...]  # the requests that emit a token, in batch order
    logits: torch.Tensor  # [len(request_ids), vocab_size] float32


def attention_modules(model: torch.nn.Module) -> dict[int, torch.nn.Module]:
    """The language model's attention modules by layer index (modules with layer_idx and scaling
    that are not recurrent mixers)."""
    text_config = model.config.get_text_config()
    mixers = {id(module) for module, _ in recurrent_mixers(model).values()}
    found: dict[int, torch.nn.Module] = {}
    for module in model.modules():
        if (hasattr(module, "layer_idx") and hasattr(module, "scaling") and id(module) not in mixers
                and getattr(module, "config", text_config) is text_config):
            found[int(module.layer_idx)] = module
    return found


def layer_chunk_size(module: torch.nn.Module) -> int | None:
    """Llama 4's chunked-local layers: transformers passes no chunk, the config names them."""
    config = module.config  # type: ignore[attr-defined]
    layer_types = getattr(config, "layer_types", None)
    if layer_types and layer_types[module.layer_idx] == "chunked_attention":  # type: ignore[attr-defined]
        return int(config.attention_chunk_size)
    return None


class ModelRunner:
    """Owns the model, the paged KV pools of `layout` and the runner-side block tables.

    `kv_shared_with` maps a KV-shared layer (Gemma 3n) to the layer whose pages it reads; those
    layers are absent from the layout's groups. Raises UnsupportedLayoutError when the layout
    and the model's attention layers do not fit together.
    """

    def __init__(self, model: torch.nn.Module, layout: Layout,
                 kv_shared_with: Mapping[int, int] | None = None,
                 state_dtypes: tuple[torch.dtype, ...] = ()) -> None:
        self.model = model
        self.layout = layout
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.kv_cache = PagedKVCache(layout, self.dtype, self.device, state_dtypes)
        self.bindings = self._bind_layers(dict(kv_shared_with or {}))
        self.state_slot = StepSlot()
        self._bind_mixers()
        model.set_attn_implementation(register_paged_attention())
        self.tables = TensorBlockTables(tuple(g.block_size for g in layout.groups))
        self.recurrent_groups = tuple(g for g, group in enumerate(layout.groups)
                                      if group.kind is CacheKind.RECURRENT)
        self.num_steps = 0
        # per group: state blocks copied (a new live block, a restored checkpoint), and of those the
        # checkpoints restored for a prefix hit (cumulative over the runner's life)
        self.state_copies = [0] * len(layout.groups)
        self.state_restores = [0] * len(layout.groups)

    def _bind_layers(self, shared: dict[int, int]) -> dict[int, LayerBinding]:
        modules = attention_modules(self.model)
        bindings: dict[int, LayerBinding] = {}
        for layer_idx, module in sorted(modules.items()):
            owner = shared.get(layer_idx, layer_idx)
            caches = self.kv_cache.layers.get(owner)
            if caches is None:
                raise UnsupportedLayoutError(f"attention layer {layer_idx} has no KV cache group in the "
                                             "layout")
            group = self.layout.groups[caches.group_id]
            chunk = layer_chunk_size(module)
            spec = group.spec
            assert isinstance(spec, AttentionCacheSpec)  # PagedKVCache allocated it
            if group.kind is CacheKind.CHUNKED and chunk != spec.chunk_len:
                raise UnsupportedLayoutError(
                    f"layer {layer_idx}: chunk {chunk} but its group keeps chunks of {spec.chunk_len}")
            if group.kind is CacheKind.SLIDING and chunk is not None:
                raise UnsupportedLayoutError(f"layer {layer_idx}: chunked layer in a sliding-window group")
            window = spec.window_len if group.kind is CacheKind.SLIDING else None
            if spec.is_mla:  # else a latent module's per-head K/V are paged as they come (MiniCPM3)
                bind_latent_attention(module)
            bindings[layer_idx] = LayerBinding(
                layer_idx, caches.group_id, caches.region, caches.key_cache, caches.value_cache,
                chunk_size=chunk, kept_window=window, stores=layer_idx not in shared, is_mla=spec.is_mla)
        unused = set(self.kv_cache.layers) - set(modules)
        if unused:
            raise UnsupportedLayoutError(f"the layout has cache layers {sorted(unused)} the model does not "
                                         "have")
        return bindings

    def _bind_mixers(self) -> None:
        mixers = recurrent_mixers(self.model)
        states = self.kv_cache.states
        unknown = sorted(set(states) - set(mixers))
        if unknown:
            raise UnsupportedLayoutError(f"layers {unknown} keep recurrent state but hold no mixer hkv run "
                                         "knows (see recurrent_hook.MIXERS)")
        unplanned = sorted(set(mixers) - set(states))
        if unplanned:
            raise UnsupportedLayoutError(f"recurrent layers {unplanned} have no state group in the layout")
        for layer_idx, (module, kind) in mixers.items():
            bind_mixer(module, kind, states[layer_idx], self.state_slot)

    def reset(self) -> None:
        """Forget every block table (a new scheduler starts)."""
        self.tables = TensorBlockTables(tuple(g.block_size for g in self.layout.groups))

    def execute(self, output: SchedulerOutput) -> StepOutput:
        """Run one scheduled step: store the new K/V, return the logits of the emitting requests."""
        self.tables.apply(output)
        entries = output.scheduled
        if not entries:
            return StepOutput((), torch.empty(0, 0))
        inputs = self._prepare(output)
        with torch.inference_mode():
            if self.recurrent_groups:
                self.state_slot.step = self._prepare_states(output, inputs)
            try:
                out = self.model(
                    input_ids=inputs.token_ids[None], position_ids=inputs.step.positions[None], use_cache=False,
                    logits_to_keep=inputs.emit_rows, hkv_step=inputs.step,
                )
            finally:
                self.state_slot.step = None
        self.num_steps += 1
        emitting = tuple(e.request_id for e in entries if e.emits_token)
        return StepOutput(emitting, out.logits[0].float())

    def _prepare(self, output: SchedulerOutput) -> _StepInputs:
        """The step's inputs as tensors, with no Python int per token: token ids copied from the
        requests' int64 arrays, positions and slot mappings computed from per-request starts
        and the tables' rows. The arithmetic is numpy on the CPU (a few dozen entries per step,
        where a torch op's dispatch would cost more than the work); each result becomes a
        tensor sharing its memory, moved to the device once."""
        entries = output.scheduled
        num_seqs = len(entries)
        tokens = array("q")
        for e in entries:
            tokens.extend(e.token_ids)
        token_ids = torch.frombuffer(tokens, dtype=torch.int64).clone()
        counts = np.fromiter((e.num_tokens for e in entries), dtype=np.int64, count=num_seqs)
        first_pos = np.fromiter((e.positions.start for e in entries), dtype=np.int64, count=num_seqs)
        starts = np.zeros(num_seqs + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        max_query_len = int(counts.max())
        if max_query_len == 1:  # decodes only: token i is request i
            seq_of_token = np.arange(num_seqs)
            positions = first_pos
        else:
            seq_of_token = np.repeat(np.arange(num_seqs), counts)  # [num_tokens]
            positions = np.arange(len(tokens)) + np.repeat(first_pos - starts[:-1], counts)
        emits = np.fromiter((e.emits_token for e in entries), dtype=bool, count=num_seqs)
        emit_rows = starts[1:] - 1 if emits.all() else (starts[1:] - 1)[emits]
        step_rows = self.tables.step_rows([e.request_id for e in entries])
        block_tables = []
        slot_mappings = []
        for group_id in range(len(self.tables.block_sizes)):
            if group_id in self.recurrent_groups:  # read through StateStep.live_blocks instead
                block_tables.append(torch.zeros(1, 0, dtype=torch.int32, device=self.device))
                slot_mappings.append(torch.zeros(0, dtype=torch.int64, device=self.device))
                continue
            block_tables.append(self._device(self.tables.step_table(step_rows, group_id)))
            slot_mappings.append(self._device(
                self.tables.step_slot_mapping(step_rows, group_id, seq_of_token, positions)))
        step = PagedStep(
            bindings=self.bindings,
            positions=self._device(torch.from_numpy(positions)),
            query_start_loc=self._device(torch.from_numpy(starts.astype(np.int32))),
            seq_lens=self._device(torch.from_numpy((first_pos + counts).astype(np.int32))),
            max_query_len=max_query_len,
            block_tables=tuple(block_tables),
            slot_mappings=tuple(slot_mappings),
            backend=resolve_backend(self.device),
        )
        return _StepInputs(step, self._device(token_ids), self._device(torch.from_numpy(emit_rows)), step_rows,
                           starts)

    def _device(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if tensor.device == self.device else tensor.to(self.device, non_blocking=True)

    def _prepare_states(self, output: SchedulerOutput, inputs: _StepInputs) -> StateStep:
        """Apply the step's state copies, then name each request's live state block per group:
        the last entry of its table (RecurrentStateManager keeps the live state there)."""
        entries = output.scheduled
        copies = [c for e in entries for c in e.state_copies]
        if copies:
            copy_states(self.kv_cache.states, copies)
            for e in entries:
                restores = e.is_new and e.positions.start > 0
                for group_id, _, _ in e.state_copies:
                    self.state_copies[group_id] += 1
                    self.state_restores[group_id] += restores
        request_ids = [e.request_id for e in entries]
        live: dict[int, torch.Tensor] = {}
        for group_id in self.recurrent_groups:
            blocks = self.tables.last_entries(inputs.rows, request_ids, group_id)
            assert bool((blocks != NULL_BLOCK_ID).all()), f"group {group_id}: a request without a live state block"
            live[group_id] = self._device(blocks)
        starts = inputs.starts.tolist()  # the packed rows _prepare laid out (host copy: no device sync)
        has_past = tuple(e.positions.start > 0 for e in entries)
        decode = tuple(i for i, e in enumerate(entries) if has_past[i] and e.num_tokens == 1)
        return StateStep(tuple(starts), has_past, live, decode,
                         self._device(torch.tensor([starts[i] for i in decode], dtype=torch.int64)))
