"""A fake model runner and a driver loop for the runtime tests.

FakeRunner keeps its own BlockTables from the scheduler outputs, "writes" each computed token
into a shadow of its KV slot and each recurrent state as the token prefix it summarizes, and
before every step checks that everything the step reads (the window of every attention group,
the recurrent state it continues from) holds exactly the request's tokens.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from hkv.model_specs.cache_spec import CacheKind
from hkv.runtime import NULL_BLOCK_ID, BlockTables, KVCacheManager, Request, Scheduler, SchedulerOutput


class FakeRunner:
    def __init__(self, kv: KVCacheManager) -> None:
        self.kv = kv
        self.groups = kv.layout.groups
        self.managers = kv.coordinator.managers
        self.tables = BlockTables(tuple(g.block_size for g in self.groups))
        self.kv_shadow: dict[tuple[int, int], dict[int, int]] = {}  # (pool, block) -> offset -> token
        self.state_shadow: dict[tuple[int, int], tuple[int, ...]] = {}  # (pool, block) -> prefix
        self.num_checked_hits = 0

    def execute(self, output: SchedulerOutput, requests: dict[str, Request]) -> None:
        self.tables.apply(output)
        copies = [(self.groups[g].pool_id, src, dst)
                  for e in output.scheduled for g, src, dst in e.state_copies]
        gathered = [(pool, dst, self.state_shadow.get((pool, src))) for pool, src, dst in copies]
        for pool, dst, state in gathered:  # all sources read before any destination is written
            assert state is not None, "state copied from a block that never held a state"
            self.state_shadow[(pool, dst)] = state
        for entry in output.scheduled:
            request = requests[entry.request_id]
            start, stop = entry.positions.start, entry.positions.stop
            assert tuple(entry.token_ids) == tuple(request.token_ids[start:stop])
            if entry.is_new and start > 0:
                self.num_checked_hits += 1
            for g, group in enumerate(self.groups):
                table = self.tables.table(entry.request_id, g)
                live = self.kv.block_ids(request)[g]
                assert len(table) == len(live), f"{entry.request_id}: runner table {g} out of sync"
                assert all(t == b for t, b in zip(table, live, strict=True) if b != NULL_BLOCK_ID)
                if group.kind is CacheKind.RECURRENT:
                    self._run_state(group.pool_id, table[-1], request, start, stop)
                else:
                    self._check_window(group, table, request, start)
                    slots = self.tables.slot_mapping(entry.request_id, g, entry.positions)
                    for pos, token, slot in zip(entry.positions, entry.token_ids, slots, strict=True):
                        block_id, offset = divmod(slot, group.block_size)
                        assert block_id != NULL_BLOCK_ID, f"{entry.request_id}: token {pos} -> null block"
                        self.kv_shadow.setdefault((group.pool_id, block_id), {})[offset] = token

    def _check_window(self, group, table: list[int], request: Request, start: int) -> None:
        """Every token the step's first query attends to is in place (rules restated here, not
        taken from the managers)."""
        size = group.block_size
        if group.kind is CacheKind.SLIDING:
            first_needed = max(0, start - group.spec.window_len + 1)
        elif group.kind is CacheKind.CHUNKED:
            first_needed = start // group.spec.chunk_len * group.spec.chunk_len
        else:
            first_needed = 0
        for pos in range(first_needed, start):
            block_id = table[pos // size]
            assert block_id != NULL_BLOCK_ID, f"{request.request_id}: needed token {pos} is in the null block"
            got = self.kv_shadow.get((group.pool_id, block_id), {}).get(pos % size)
            assert got == request.token_ids[pos], (
                f"{request.request_id}: token {pos} reads {got}, expected {request.token_ids[pos]}")

    def _run_state(self, pool_id: int, block_id: int, request: Request, start: int, stop: int) -> None:
        assert block_id != NULL_BLOCK_ID, f"{request.request_id}: live state in the null block"
        if start > 0:
            got = self.state_shadow.get((pool_id, block_id))
            assert got == tuple(request.token_ids[:start]), (
                f"{request.request_id}: state of {len(got or ())} tokens, expected {start}")
        self.state_shadow[(pool_id, block_id)] = tuple(request.token_ids[:stop])


def max_blocks_held(manager, num_computed: int, num_tokens: int) -> int:
    """Most non-null blocks a request may hold in the manager's group after a step computing
    tokens [num_computed, num_tokens): the tokens' blocks less the skipped ones; a recurrent
    group holds its live state and at most one earlier state (or num_state_blocks)."""
    if manager.group.kind is CacheKind.RECURRENT:
        return min(manager.num_state_blocks, 2)
    return -(-num_tokens // manager.block_size) - manager.num_skipped_blocks(num_computed)


def check_held_bounds(kv: KVCacheManager, output: SchedulerOutput, requests: dict[str, Request]) -> None:
    """Windowed and recurrent groups never hold more blocks than the step needs."""
    for entry in output.scheduled:
        request = requests[entry.request_id]
        for m in kv.coordinator.managers:
            held = sum(b != NULL_BLOCK_ID for b in kv.block_ids(request)[m.group_id])
            bound = max_blocks_held(m, entry.positions.start, entry.positions.stop)
            assert held <= bound, f"{entry.request_id}: group {m.group_id} holds {held} > {bound}"
            if m.group.kind is not CacheKind.FULL:
                layout_bound = m.group.blocks_per_request(entry.positions.stop, entry.num_tokens)
                assert held <= layout_bound, f"group {m.group_id} holds {held} > layout {layout_bound}"


def check_admission_bounds(scheduler: Scheduler) -> None:
    """The scheduler's shortcuts for a waiting request are sound: admission_blocked only when
    can_admit fails for the hit get_computed_blocks finds (reads only)."""
    if not scheduler.waiting:
        return
    kv, head = scheduler.kv, scheduler.waiting[0]
    blocked_any = kv.admission_blocked(head)
    hit_len = kv.find_hit_len(head)
    blocked_hit = kv.admission_blocked(head, hit_len)
    admissible = kv.can_admit(head, kv.hit_blocks(head, hit_len))
    assert not (admissible and (blocked_any or blocked_hit)), (head, hit_len, blocked_any, blocked_hit)


def drive(scheduler: Scheduler, requests: list[Request], *, runner: FakeRunner | None = None,
          seed: int = 0, max_steps: int = 10_000,
          on_finish: Callable[[Request], list[Request]] | None = None) -> int:
    """Run until every request (and every follow-up `on_finish` returns) is finished, checking
    integrity after each schedule and each update. Returns the number of steps."""
    kv = scheduler.kv
    runner = runner or FakeRunner(kv)
    rng = random.Random(seed)
    by_id = {r.request_id: r for r in requests}
    for r in requests:
        scheduler.add_request(r)
    steps = 0
    while scheduler.has_unfinished_requests:
        steps += 1
        assert steps <= max_steps, "no progress"
        check_admission_bounds(scheduler)
        output = scheduler.schedule()
        kv.check_integrity()
        check_held_bounds(kv, output, by_id)
        runner.execute(output, by_id)
        sampled = {e.request_id: rng.randrange(1000) for e in output.scheduled if e.emits_token}
        for finished in scheduler.update_from_output(output, sampled):
            for follow_up in (on_finish(finished) if on_finish else []):
                by_id[follow_up.request_id] = follow_up
                scheduler.add_request(follow_up)
        kv.check_integrity()
    assert kv.usage == 0.0 and all(kv.block_ids(r) == () for r in by_id.values())
    for pool in kv.pools.values():
        assert sum(pool.num_in_use_by_group) == 0
        assert pool.num_free_blocks == pool.num_usable_blocks  # every block free or cached-free
    return steps
