"""GroupAwareEviction: keep what completes a hybrid hit, shrink released prefixes evenly.

A hybrid hit needs blocks of every group at once. Under one group-blind LRU, a request that
keeps running releases its out-of-window sliding blocks (or its old Mamba checkpoint) to the LRU
while it still holds the full-attention blocks of the same prefix; admissions evict those first
and the prefix's hit dies although most of it is still resident (vLLM #45238, #48435). So:

1. Protection. Cached blocks a running request releases early go to the pool's protected
   segment: admissions may not count them as free (unless they are part of the admitted
   request's hit) and allocations take them only after every unprotected block. With sparse
   sliding retention these are exactly the windows before the prefix's hit points (a shared
   system prompt's tail, a conversation's junction) and the last Mamba checkpoint.
2. Release order. When the request stops (finished or preempted), its held blocks reach the LRU
   back in descending token position across all groups (ties: later groups first), so the
   prefix shrinks from its tail in every group at once instead of group after group; then its
   protected blocks become ordinary and move behind them, so the few blocks that complete its
   hit points go last.

Measured on the Gemma-3-27B shared-prefix simulation (10k requests, hkv layout on an H100) the
hit rate goes from 1.1 % (LRU) to 51.6 % (16.5 % while a stopping request also unprotected the
blocks that other requests had protected since under the same ids, see BlockPool.unprotect). A cascade that demoted the other groups' blocks of a
prefix once one group's block was evicted was tried and dropped: it lowered that hit rate to 12 %
(it also demotes the full-attention blocks that let the next request find the junction) and
cost 30 % more time.
"""

from __future__ import annotations

from itertools import chain

from hkv.runtime.block_pool import NULL_BLOCK_ID
from hkv.runtime.cache_config import FreeOrder
from hkv.runtime.kind_manager import KindManager
from hkv.runtime.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.lru_eviction import LruEviction
from hkv.runtime.request import Request


class GroupAwareEviction(LruEviction):
    def __init__(self, coordinator: KVCacheCoordinator, enable_caching: bool,
                 free_order: FreeOrder = FreeOrder.REQUEST_TAIL_FIRST) -> None:
        super().__init__(coordinator, enable_caching, free_order)  # free_order: not used here
        for pool in coordinator.pool_list:
            pool.protect_early_releases = enable_caching

    def free_request(self, request: Request) -> None:
        """Release every held block in descending token position across groups, then let the
        blocks it protected age behind them."""
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
