"""vLLM's CUDA graph memory estimate (`profile_cudagraph_memory`, printed from 0.19, subtracted from 0.20).

How vLLM estimates (gpu_model_runner.profile_cudagraph_memory, 0.32): for each cudagraph mode
(PIECEWISE, FULL) it captures the two largest sizes into a scratch pool and measures the free
memory each takes; estimate = max over modes of the first capture + sum over modes of
(the second capture) x (graphs of that mode - 1). hkv cannot capture, so it models both captures
per decoder layer: a first capture of fixed bytes (the graph pool's segments, whatever the size),
then each further graph holding the captured batch's activations, which scale with the forward's
live set per token (dense MLP or fused-MoE workspaces: profile_activation.ForwardShape), so MoE
and TP need no constants of their own:

    estimate = layers x (first-capture bytes + per-graph tokens x live bytes/token x (graphs - modes))

The two constants are fitted on the estimates real logs printed (fitted/fit.py).

Capture sizes (config/vllm.py `_set_cudagraph_sizes`): 1, 2, 4, multiples of 8 below 256, then
multiples of 16 up to max_cudagraph_capture_size = min(2 x max_num_seqs x decode query len,
512), capped at max_num_batched_tokens. FULL_AND_PIECEWISE (the default) captures PIECEWISE
graphs at every size and FULL decode graphs at the sizes up to max_num_seqs x decode query len.
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.planner.budget.budget_constants import SHIPPED, BudgetConstants, GraphBytes

DEFAULT_MAX_CAPTURE_SIZE = 512


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, *, decode_query_len: int = 1,
                  max_capture_size: int | None = None) -> tuple[int, ...]:
    """vLLM's default cudagraph_capture_sizes (ascending)."""
    largest = max_capture_size if max_capture_size is not None else min(
        2 * max_num_seqs * decode_query_len, DEFAULT_MAX_CAPTURE_SIZE)
    largest = min(largest, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= largest]
    sizes += range(8, min(largest + 1, 256), 8)
    sizes += range(256, largest + 1, 16)
    return tuple(sizes)


@dataclass(frozen=True)
class CudagraphEstimate:
    num_layers: int
    piecewise_graphs: int
    full_graphs: int
    moe: bool
    # The forward's live set per token on this rank (profile_activation.ForwardShape): what each
    # further graph's captured activations and MoE workspaces scale with.
    live_bytes_per_token: int = 0

    @property
    def graphs(self) -> int:
        return self.piecewise_graphs + self.full_graphs

    @property
    def modes(self) -> int:
        return (self.piecewise_graphs > 0) + (self.full_graphs > 0)

    @property
    def bytes(self) -> int:
        """The estimate with the shipped per-layer bytes."""
        return self.bytes_with(SHIPPED)

    def bytes_with(self, constants: BudgetConstants) -> int:
        """The estimate under `constants` (a calibration's graph scale included)."""
        return int(self.bytes_per_layer(constants.graph) * constants.calibration_graph_scale)

    def bytes_per_layer(self, per_layer: GraphBytes) -> int:
        if not self.graphs:
            return 0
        further = per_layer.per_graph_tokens * self.live_bytes_per_token * self.further_graphs
        return int(self.num_layers * (per_layer.first_capture_bytes + further))

    @property
    def further_graphs(self) -> int:
        """Graphs after each mode's first capture."""
        return self.graphs - self.modes


def cudagraph_estimate(num_layers: int, max_num_seqs: int, max_num_batched_tokens: int, *, moe: bool,
                       decode_query_len: int = 1, max_capture_size: int | None = None,
                       live_bytes_per_token: int = 0) -> CudagraphEstimate:
    """The estimate for FULL_AND_PIECEWISE graphs of a rank holding `num_layers` decoder layers."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, decode_query_len=decode_query_len,
                          max_capture_size=max_capture_size)
    decode_limit = max_num_seqs * decode_query_len
    return CudagraphEstimate(num_layers, len(sizes), sum(1 for s in sizes if s <= decode_limit), moe,
                             live_bytes_per_token)
