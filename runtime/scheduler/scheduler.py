"""Scheduler: synchronous continuous batching over the KV cache manager.

Each step: running requests first (oldest first; a decode takes 1 token, a prefill as many as
the token budget allows), then waiting requests in arrival order while the budget, the sequence
cap and the admission gate allow. When a running request's allocation fails, the newest running
request is preempted (freed, to be recomputed; its cached blocks usually come back as a hit) and
the allocation is retried. One batch is in flight: `update_from_output` must follow `schedule`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial

from hkv.planner.plan_config import DEFAULT_MAX_NUM_SEQS
from hkv.runtime.errors import OutOfBlocksError, RequestTooLongError
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager, NewBlocks
from hkv.runtime.request import Request, RequestStatus
from hkv.runtime.scheduler.decode_run import DecodeRun, SampledTokens
from hkv.runtime.scheduler.scheduler_output import ScheduledRequest, SchedulerOutput

_new_entry = partial(tuple.__new__, ScheduledRequest)  # ScheduledRequest from one tuple, at C speed


class Admission(str, Enum):
    """When a waiting request is admitted.

    GATE: vLLM 0.32's (`scheduler_reserve_full_isl`, on by default) and hkv's default: only when
        slots for all its tokens fit (`KVCacheManager.can_admit`: a fresh request's prompt,
        sliding and chunked groups capped at what they ever hold), then as the next chunk fits.
        Growth during decode may still preempt. The sustained-concurrency probe measures this.
    NEXT_CHUNK: earlier vLLM versions': as soon as the prompt's next chunk fits
        (`allocate_slots` succeeds); a long prompt admitted this way may preempt mid-prefill.
    """

    GATE = "gate"
    NEXT_CHUNK = "next_chunk"


@dataclass(frozen=True)
class SchedulerConfig:
    max_num_batched_tokens: int = 8192  # token budget per step
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS  # running requests at most
    enable_chunked_prefill: bool = True  # else a prompt waits until it fits in one step
    admission: Admission = Admission.GATE

    def __post_init__(self) -> None:
        if self.max_num_batched_tokens < 1 or self.max_num_seqs < 1:
            raise ValueError(f"invalid scheduler config {self}")


class Scheduler:
    def __init__(self, kv_cache_manager: KVCacheManager, config: SchedulerConfig | None = None) -> None:
        self.kv = kv_cache_manager
        self.config = config or SchedulerConfig()
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.num_steps = 0
        self.num_preemptions = 0
        self._state_block_size = kv_cache_manager.state_block_size
        # One-live-state recurrent groups: checkpoints every step's budget of tokens (a hit between
        # two costs at most one step of recompute) and at hit points; None: at every chunk end.
        size = self._state_block_size
        self._checkpoint_grid = None if size is None else kv_cache_manager.use_checkpoint_grid(
            max(size, self.config.max_num_batched_tokens // size * size))
        self._num_sent: dict[str, list[int]] = {}  # per running request: table lengths sent
        self._finished_ids: list[str] = []
        self._empty_block_ids = tuple(() for _ in range(kv_cache_manager.num_groups))
        # The last output of `schedule` and its requests, entry by entry (for update_from_output).
        self._last_output: SchedulerOutput | None = None
        self._last_requests: list[Request] = []

    @property
    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running)

    def add_request(self, request: Request) -> None:
        if request.num_tokens > self.kv.max_model_len:
            raise RequestTooLongError(f"request {request.request_id}: {request.num_tokens} tokens > "
                                      f"max_model_len {self.kv.max_model_len}")
        request.status = RequestStatus.WAITING
        self.waiting.append(request)

    def _chunk_len(self, request: Request, start: int, num_new: int) -> int:
        """With recurrent checkpoints, end a step that crosses a state boundary on the last one
        it crosses, so the state there can be cached. With a checkpoint grid, first stop at the
        full-attention junction (a hit point), then on the grid, so the checkpoints a later hit
        needs exist (vLLM 0.32 stops at the junction too: `_mamba_block_aligned_split`)."""
        size = self._state_block_size
        if size is not None:
            stop = start + num_new
            grid = self._checkpoint_grid
            if grid is not None:
                junction = self.kv.junction_len(request) // size * size
                if start < junction < stop:
                    return junction - start
                on_grid = stop // grid * grid
                if on_grid > start:
                    return on_grid - start
            end = stop // size * size
            if end > start:
                return end - start
        return num_new

    def schedule(self) -> SchedulerOutput:
        """Pick this step's requests and token counts and allocate their slots."""
        budget = self.config.max_num_batched_tokens
        allocate_slots = self.kv.allocate_slots
        entries: list[ScheduledRequest] = []
        requests: list[Request] = []  # entry by entry
        preempted: list[str] = []
        running = self.running
        chunked = self._state_block_size is not None
        entry = self._entry
        num_sent, empty_block_ids = self._num_sent, self._empty_block_ids
        max_chunk = self.kv.in_flight_tokens  # the Layout's T: tokens a request may have in flight
        i = 0
        while i < len(running) and budget > 0:
            request = running[i]
            computed = request.num_computed_tokens
            token_ids = request.token_ids
            num_new = len(token_ids) - computed
            if num_new == 1 and computed < request.steady_decode_until and request.request_id in num_sent:
                # A decode step that needs nothing new (KVCacheManager.is_steady(request, 1), kept
                # on the request as Request.steady_decode_until):
                # allocate_slots would return no_new_blocks and change nothing; its entry
                # carries no blocks.
                entries.append(_new_entry((request.request_id, (token_ids[computed],), range(computed, computed + 1),
                                           False, empty_block_ids, (), True)))
                requests.append(request)
                budget -= 1
                i += 1
                continue
            num_new = min(num_new, budget, max_chunk)
            if chunked:
                num_new = self._chunk_len(request, computed, num_new)
            new_blocks = allocate_slots(request, num_new)
            while new_blocks is None:
                victim = running.pop()
                self._preempt(victim)
                preempted.append(victim.request_id)
                if victim is request:
                    break
                new_blocks = allocate_slots(request, num_new)
            if new_blocks is None:
                break
            entries.append(entry(request, num_new, new_blocks))
            requests.append(request)
            budget -= num_new
            i += 1
        if not preempted:
            budget = self._admit(budget, entries, requests)
        if not entries and not self.running and self.waiting:
            head = self.waiting[0]
            raise OutOfBlocksError(f"request {head.request_id} ({head.num_tokens} tokens) does not fit "
                                   f"in the KV cache even with no other request running")
        output = SchedulerOutput(self.num_steps, tuple(entries),
                                 self.config.max_num_batched_tokens - budget, tuple(preempted),
                                 tuple(self._finished_ids))
        self._finished_ids = []
        self.num_steps += 1
        self._last_output, self._last_requests = output, requests
        return output

    def _admit(self, budget: int, entries: list[ScheduledRequest], requests: list[Request]) -> int:
        """Admit waiting requests in order while the budget, the sequence cap and the KV cache
        allow. The manager is told the queue before (the head's admission must not evict the
        hits of the requests behind it) and after (what still waits must outlive the next
        step's growth): it may reserve the hits of its first requests. An empty queue drops
        the reservation."""
        kv = self.kv
        gated = self.config.admission is Admission.GATE
        if len(self.waiting) > 1:
            kv.reserve_waiting_hits(self.waiting)
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            request = self.waiting[0]
            # kv.get_computed_blocks, skipping what a request that cannot be admitted needs not
            # (can_admit would fail whatever the hit, or whatever the blocks of its hit).
            if gated and kv.admission_blocked(request):
                break
            hit_len = kv.find_hit_len(request)
            if gated and kv.admission_blocked(request, hit_len):
                break
            computed = kv.hit_blocks(request, hit_len)
            num_new = request.num_tokens - computed.num_tokens
            if num_new > budget and not self.config.enable_chunked_prefill:
                break
            num_new = self._chunk_len(request, computed.num_tokens, min(num_new, budget, kv.in_flight_tokens))
            if gated and not kv.can_admit(request, computed):
                break
            new_blocks = kv.allocate_slots(request, num_new, computed.num_tokens, computed)
            if new_blocks is None:
                break
            self.waiting.popleft()
            request.status = RequestStatus.RUNNING
            request.num_computed_tokens = computed.num_tokens
            self.running.append(request)
            self._num_sent.pop(request.request_id, None)
            entries.append(self._entry(request, num_new, new_blocks))
            requests.append(request)
            budget -= num_new
        if self.waiting:
            kv.reserve_waiting_hits(self.waiting)
        else:
            kv.drop_reservation()
        return budget

    def _entry(self, request: Request, num_new: int, new_blocks: NewBlocks) -> ScheduledRequest:
        start = request.num_computed_tokens
        stop = start + num_new
        token_ids = request.token_ids
        sent = self._num_sent.get(request.request_id)
        copies = self.kv.take_state_copies(request)
        if (sent is not None and new_blocks is self.kv.no_new_blocks and num_new == 1
                and not copies):  # a decode step that needs nothing new: most steps
            return _new_entry((request.request_id, (token_ids[start],), range(start, stop), False,
                               self._empty_block_ids, (), stop == len(token_ids)))
        tables = self.kv.block_ids(request)
        if sent is None:
            is_new = True
            block_ids = tuple(tuple(t) for t in tables)
            self._num_sent[request.request_id] = [len(t) for t in tables]
        else:
            is_new = False
            if new_blocks is self.kv.no_new_blocks:
                block_ids = self._empty_block_ids
            else:
                block_ids = tuple(tuple(t[n:]) for t, n in zip(tables, sent, strict=True))
                self._num_sent[request.request_id] = [len(t) for t in tables]
        return _new_entry((request.request_id, token_ids[start:stop], range(start, stop), is_new,
                           block_ids, copies, stop == len(token_ids)))

    def _preempt(self, request: Request) -> None:
        self.kv.free(request)
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens = 0
        request.num_preemptions += 1
        self.num_preemptions += 1
        self._num_sent.pop(request.request_id, None)
        self.waiting.appendleft(request)

    def update_from_output(self, output: SchedulerOutput,
                           sampled_token_ids: Mapping[str, int]) -> list[Request]:
        """Advance each scheduled request by its computed tokens; append the sampled token of
        each entry with `emits_token`; finish (and free) requests that reached their output
        length or max_model_len. Returns the requests finished by this call."""
        finished = []
        max_model_len = self.kv.max_model_len
        if output is self._last_output:
            requests = self._last_requests
        else:
            by_id = {r.request_id: r for r in self.running}
            requests = [by_id[entry.request_id] for entry in output.scheduled]
        self._last_output, self._last_requests = None, []
        for entry, request in zip(output.scheduled, requests, strict=True):
            request.num_computed_tokens += len(entry.positions)
            if not entry.emits_token:
                continue
            token_ids = request.token_ids
            token_ids.append(sampled_token_ids[entry.request_id])
            num_tokens = len(token_ids)
            if (num_tokens - request.num_prompt_tokens >= request.max_output_len
                    or num_tokens >= max_model_len):
                finished.append(request)
        if finished:
            self._finish(finished)
        return finished

    def _finish(self, finished: list[Request]) -> None:
        """Finish (and free) these running requests, in this order."""
        done = {id(r) for r in finished}
        self.running = [r for r in self.running if id(r) not in done]
        for request in finished:
            self.kv.note_finished(request)
            self.kv.free(request)
            request.status = RequestStatus.FINISHED
            self._num_sent.pop(request.request_id, None)
            self._finished_ids.append(request.request_id)

    def decode_run(self, sampled_tokens: SampledTokens) -> DecodeRun | None:
        """A DecodeRun from this step on (see decode_run.py), or None when the next step is not
        one of its steps: a request waits, one is in prefill or new to the runner, a batch is
        in flight, or the running requests exceed the token budget. `sampled_tokens(request,
        count)`: the request's next `count` sampled tokens."""
        running = self.running
        if (self.waiting or not running or self._last_output is not None
                or len(running) > self.config.max_num_batched_tokens):
            return None
        num_sent = self._num_sent
        for request in running:
            computed = request.num_computed_tokens
            # Decoding: one token in flight, the prompt computed (its last token's step emits the
            # first output, which the caller times), the tables already sent.
            if (len(request.token_ids) - computed != 1 or computed < request.num_prompt_tokens
                    or request.request_id not in num_sent):
                return None
        return DecodeRun(self, sampled_tokens)
