"""DecodeRun: the scheduler's steps while every running request decodes and nothing waits,
applied event by event instead of request by request.

Most steps of a replay are such steps, and in most of them most requests are steady: a one-token
step that caches, releases and allocates nothing (Request.steady_decode_until). Stepping them one
request at a time costs O(running) per step for nothing. A DecodeRun keeps each running request
lazily: its tokens and `num_computed_tokens` are brought up to date (materialized) only when it
is touched, and a heap orders the requests by their next event step, the first step in which
the request is not steady or finishes. Between events the steps are counted, not walked; an event
step calls `allocate_slots` and finishes requests exactly as `Scheduler.schedule` and
`update_from_output` would, in running order, so the block pools, caches and counters go
through the same states as stepping one request at a time (tests/runtime check both agree).

One step of a run (`schedule_step` then `update_step`) is a step of the scheduler. A step whose
allocations might not all fit (which could preempt) is not taken: `schedule_step` returns False
with nothing changed, the caller closes the run and lets `Scheduler.schedule` take that step.
Steps with no event (`num_steady_steps`) are taken at once with `advance_steady`. `close` (or
`sync`) materializes every request; the scheduler's other methods must not run while a run is
open. Requests that arrive end the run: the caller closes it to admit them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hkv.runtime.request import Request

if TYPE_CHECKING:
    from hkv.runtime.scheduler.scheduler import Scheduler

SampledTokens = Callable[[Request, int], Sequence[int]]  # (request, count) -> its next count tokens
# (event step, running position, step the request is materialized at, the request): the heap
# orders by step, then running order (the order `schedule` visits requests in).
_Pending = tuple[int, int, int, Request]


class DecodeRun:
    """Steps where each running request decodes one token and no request waits (see module)."""

    def __init__(self, scheduler: Scheduler, sampled_tokens: SampledTokens) -> None:
        self._scheduler = scheduler
        self._kv = scheduler.kv
        self._sampled_tokens = sampled_tokens
        self._step = 0  # steps taken by this run
        self._heap: list[_Pending] = []
        for position, request in enumerate(scheduler.running):
            self._heap.append((self._event_step(request, 0), position, 0, request))
        heapq.heapify(self._heap)
        self._event: list[_Pending] = []  # the requests of the step being taken

    @property
    def num_running(self) -> int:
        return len(self._scheduler.running)

    def _event_step(self, request: Request, step: int) -> int:
        """The first step after `step` (the request materialized there) in which the request is
        not steady (its computed tokens reach steady_decode_until) or finishes (its output or
        max_model_len is reached)."""
        computed = request.num_computed_tokens
        num_tokens = computed + 1
        not_steady = step + 1 + max(0, request.steady_decode_until - computed)
        finishes = step + min(request.max_output_len - (num_tokens - request.num_prompt_tokens),
                              self._kv.max_model_len - num_tokens)
        return min(not_steady, finishes)

    def _materialize(self, request: Request, since_step: int, to_step: int) -> None:
        """Apply the request's steps (since_step, to_step]: one sampled token each."""
        count = to_step - since_step
        if count:
            request.token_ids.extend(self._sampled_tokens(request, count))
            request.num_computed_tokens += count

    @property
    def num_steady_steps(self) -> int:
        """Steps from now with no event: every request steady, none finishing."""
        return self._heap[0][0] - self._step - 1

    def advance_steady(self, num_steps: int) -> None:
        """Take `num_steps` (<= num_steady_steps) steps with no event."""
        assert 0 < num_steps <= self.num_steady_steps, f"{num_steps} steps, {self.num_steady_steps} steady"
        self._step += num_steps
        scheduler = self._scheduler
        scheduler.num_steps += num_steps
        scheduler._finished_ids = []  # reported by the first of these steps

    def schedule_step(self) -> bool:
        """Schedule the next step, which has events: materialize its event requests and allocate
        for those that are not steady, in running order. False, with nothing changed, when those
        allocations are not sure to fit (`Scheduler.schedule` must take this step)."""
        assert not self._event, "schedule_step twice without update_step"
        step = self._step + 1
        heap = self._heap
        event: list[_Pending] = []
        while heap and heap[0][0] == step:
            _, position, since, request = heapq.heappop(heap)
            self._materialize(request, since, step - 1)
            event.append((step, position, step - 1, request))
        growing = [p[3] for p in event if p[3].num_computed_tokens >= p[3].steady_decode_until]
        if growing and not self._kv.surely_fit(growing, 1):
            for pending in event:
                heapq.heappush(heap, pending)
            return False
        scheduler = self._scheduler
        allocate_slots, entry = self._kv.allocate_slots, scheduler._entry
        for request in growing:
            new_blocks = allocate_slots(request, 1)
            assert new_blocks is not None, f"{request.request_id}: a sure allocation failed"
            entry(request, 1, new_blocks)  # what the runner is sent (tables, state copies)
        scheduler._finished_ids = []  # reported by this step
        self._event = event
        return True

    def update_step(self) -> list[Request]:
        """Complete the scheduled step: every request gains its token (the event requests now,
        the others lazily); event requests that reached their end finish (and are freed), in
        running order. Returns them."""
        step = self._step = self._step + 1
        scheduler = self._scheduler
        scheduler.num_steps += 1
        max_model_len = self._kv.max_model_len
        finished: list[Request] = []
        for _, position, since, request in self._event:
            self._materialize(request, since, step)
            num_tokens = len(request.token_ids)
            if (num_tokens - request.num_prompt_tokens >= request.max_output_len
                    or num_tokens >= max_model_len):
                finished.append(request)
            else:
                heapq.heappush(self._heap, (self._event_step(request, step), position, step, request))
        self._event = []
        if finished:
            scheduler._finish(finished)
        return finished

    def sync(self) -> None:
        """Materialize every running request (for checks that read them); the run goes on."""
        assert not self._event, "sync between schedule_step and update_step"
        step = self._step
        for i, (event_step, position, since, request) in enumerate(self._heap):
            self._materialize(request, since, step)
            self._heap[i] = (event_step, position, step, request)

    def close(self) -> None:
        """Materialize every running request: the scheduler steps one request at a time again."""
        self.sync()
        self._heap = []
