"""GroupAwareEviction: keep what completes a hybrid hit, shrink released prefixes evenly.

A hybrid hit needs blocks of every group at once. Under one group-blind LRU, a request that
keeps running releases its out-of-window sliding blocks (or its old Mamba checkpoint) to the LRU
while it still holds the full-attention blocks of the same prefix; admissions evict those first
and the prefix's hit dies although most of it is still resident (vLLM #45238, #48435). So:

1. Branch points are protected. A request whose prefix hit ends where another request's hit
   ended (the prefix hash of the last full-attention block of the hit, see HitPointCounter)
   stands on a prefix that requests share and diverge after, such as a system prompt: later
   requests will hit there again, and need the window before it. The cached blocks it releases early go to the
   pool's protected segment: admissions may not count them as free (unless they are part of the
   admitted request's hit) and allocations take them only after every unprotected block.
2. Everything else released early is cold. A request whose hit point no other request shared
   (a conversation's previous turn: its next turn will hit further, past this request's end)
   releases windows that only a retry of an old prompt could use; they go to the cold segment,
   evicted before every other cached block. Plain LRU keeps them as fresh as what was just
   used, and in multi-session traffic they push out the conversations' histories.
3. Release order. When the request stops (finished or preempted), the cold blocks that a hit
   at its final length needs (a window's first block, its last checkpoint: released early, yet
   what its next turn hits) move to the LRU back; then its held blocks follow in descending
   token position across all groups (ties: later groups first), so the
   prefix shrinks from its tail in every group at once instead of group after group; then its
   protected blocks become ordinary and move behind them, so the few blocks that complete its
   hit points go last.

Measured with benchmarks/bench_simulate.py (Gemma-3-27B, windows of 1,024; hit rate LRU ->
group-aware): 10,000 requests over 16 shared system prompts, 1.4 % -> 34.4 % (`vllm` layout)
and 1.1 % -> 41.4 % (`hkv`); 16 round-robin sessions in 12 GiB, 25.6 % -> 28.7 % and
41.9 % -> 46.9 %; 24 sessions in 20 GiB, 52.1 % -> 66.8 % and 65.7 % -> 75.1 %. Protecting every
early release (the rule before branch points) reached 47.9 % on the shared prompts but lost to
LRU on sessions (12.4 % vs 25.6 %): it kept each conversation's dead junction window protected
while the histories the next turns needed were evicted. Tried and dropped: counting hits per
block instead of per prefix hash (the count dies with the block, and a prefix that is evicted
and recomputed never looks shared: 6 % on the shared prompts); a cascade that demoted the other
groups' blocks of a prefix once one group's block was evicted (12 % on the shared prompts, 30 %
slower); reserving the hits of the first waiting requests in queue order (Belady's order for
FCFS admission: 28.7 % -> 35.6 % on 12 GiB sessions, `vllm` layout, but 30 % slower simulation
because the reservation must be recomputed on nearly every admission).
"""

from __future__ import annotations

from itertools import chain

from hkv.runtime.block_pool import NULL_BLOCK_ID
from hkv.runtime.cache_config import FreeOrder
from hkv.runtime.hit_point_counter import HitPointCounter
from hkv.runtime.kind_manager import KindManager
from hkv.runtime.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.lru_eviction import LruEviction
from hkv.runtime.request import Request


class GroupAwareEviction(LruEviction):
    def __init__(self, coordinator: KVCacheCoordinator, enable_caching: bool,
                 free_order: FreeOrder = FreeOrder.REQUEST_TAIL_FIRST) -> None:
        super().__init__(coordinator, enable_caching, free_order)  # free_order: not used here
        # A live hit point holds at least one cached block: no more of them than blocks.
        num_blocks = sum(pool.num_usable_blocks for pool in coordinator.pool_list)
        self._hit_points = HitPointCounter(max(1, num_blocks))
        for pool in coordinator.pool_list:
            pool.protect_early_releases = enable_caching

    def note_admission(self, request: Request, hit_len: int) -> None:
        """Count the request's hit point and decide whether what it releases early is protected
        (its hit ends where another request's did) or cold."""
        prefix_hash = self.coordinator.hit_point_hash(request.block_hashes, request.closed_hit_len, hit_len)
        request.protects_early_releases = prefix_hash is not None and self._hit_points.count(prefix_hash) >= 2

    def free_request(self, request: Request) -> None:
        """Warm the cold blocks the hit at the request's final length needs (a window's first
        block, the last checkpoint: released early, yet what its next turn hits), release every
        held block in descending token position across groups, then let the blocks it protected
        age behind them."""
        if self.enable_caching:
            alignment = self.coordinator.hit_alignment
            final_len = request.num_computed_tokens // alignment * alignment
            for pool, block_id in self.coordinator.released_hit_blocks(request, final_len):
                pool.warm((block_id,))
        for managers in self._managers_of_pool:
            if managers:
                managers[0].pool.release_blocks(self._release_order(request, managers))
        self.coordinator.unprotect(request)

    @staticmethod
    def _release_order(request: Request, managers: list[KindManager]) -> list[int]:
        """The request's blocks of these groups by descending end position (ties: later group
        first); null entries included (release skips them)."""
        tables = [request.block_ids[m.group_id] for m in reversed(managers)]
        if len({m.block_size for m in managers}) == 1:
            length = max(len(t) for t in tables)
            columns = [[NULL_BLOCK_ID] * (length - len(t)) + t[::-1] for t in tables]
            return list(chain.from_iterable(zip(*columns, strict=True)))
        keyed = [((pos + 1) * m.block_size, -i, block_id)
                 for i, m in enumerate(managers)
                 for pos, block_id in enumerate(request.block_ids[m.group_id]) if block_id != NULL_BLOCK_ID]
        keyed.sort(reverse=True)
        return [block_id for _, _, block_id in keyed]
