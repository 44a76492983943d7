"""Token arrays for trace rows, built one request at a time as the simulator pulls them.

Token ids only need to be equal where content is shared:
- a Mooncake block with hash id h is `h, T+1, T+2, ..., T+B-1` (B the block size, T = 2^35): its
  first token names it and the rest is one template shared by every block. Equal hash ids give
  equal tokens; blocks of different ids differ in their first token, and the prefix cache's
  hashes are chained (block_hash.py), so a request hits exactly the blocks it shares with the
  trace's earlier requests, up to its first unshared one. A prompt is one memcpy of the
  template and one strided store of its hash ids: no per-token Python work;
- text shared with nothing (outputs, the public formats' prompts, hkv prompt_len lines) is a
  fresh run of ids from 2^40 up, above every block token (hash ids < 2^31) and every explicit
  token id (< 2^31), so no fresh run ever equals shared text;
- a prefix_id's tokens are built once and kept while the replay lasts, and so is each session's
  last turn (the next turn resends it): that is the hkv format's own sharing, bounded by its
  number of prefixes and sessions, not by the file.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable

from hkv.runtime.simulation.traces.trace_row import TraceRow
from hkv.runtime.simulation.workload_request import WorkloadRequest

FRESH_ID_START = 1 << 40


BLOCK_TEMPLATE_START = 1 << 35


class BlockPrompts:
    """Mooncake prompts from hash ids (module docstring); keeps one template as long as the
    longest prompt built so far."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._template = array("q")

    def prompt(self, blocks: tuple[int, ...], prompt_len: int) -> array:
        """The prompt of `prompt_len` tokens made of `blocks` (ceil(prompt_len / B) hash ids)."""
        size = self.block_size
        assert len(blocks) == -(-prompt_len // size), (len(blocks), prompt_len, size)
        if len(self._template) < prompt_len:
            one_block = array("q", range(BLOCK_TEMPLATE_START, BLOCK_TEMPLATE_START + size))
            self._template = one_block * (2 * len(blocks))
        prompt = self._template[:prompt_len]
        prompt[::size] = array("q", blocks)
        return prompt


class RequestBuilder:
    """Builds WorkloadRequests for one pass over a trace (a new builder per pass, so every pass
    yields the same ids). `depends_on` is the emitted index of the session's previous turn, or
    None when that turn was not replayed (outside the window, or too long)."""

    def __init__(self, block_size: int) -> None:
        self._block_prompts = BlockPrompts(block_size)
        self._next_id = FRESH_ID_START
        self._prefixes: dict[Hashable, array] = {}
        self._sessions: dict[Hashable, tuple[array, int | None]] = {}  # history, its emitted index
        self._num_emitted = 0

    def _fresh(self, n: int) -> array:
        run = array("q", range(self._next_id, self._next_id + n))
        self._next_id += n
        return run

    def build(self, row: TraceRow, arrival_s: float, emit: bool) -> WorkloadRequest | None:
        """The request of `row` arriving at `arrival_s` when `emit`; otherwise None, after
        recording what a later turn of its session resends."""
        if not emit and row.session is None:
            return None
        if row.blocks:
            prompt = self._block_prompts.prompt(row.blocks, row.prompt_len)
        elif row.prompt_tokens is not None:
            prompt = array("q", row.prompt_tokens)
        elif row.prefix is not None:
            prefix_id, prefix_len = row.prefix
            shared = self._prefixes.setdefault(prefix_id, self._fresh(prefix_len))
            prompt = shared[:row.prompt_len] + self._fresh(max(0, row.prompt_len - len(shared)))
        else:
            prompt = self._fresh(row.prompt_len)
        depends_on = None
        if row.session is not None and row.session in self._sessions:
            history, depends_on = self._sessions[row.session]
            prompt = history + prompt
        output = self._fresh(row.output_len)
        index = self._num_emitted if emit else None
        if row.session is not None:
            self._sessions[row.session] = (prompt + output, index)
        if not emit:
            return None
        self._num_emitted += 1
        return WorkloadRequest(f"line-{row.line}", arrival_s, prompt, output, depends_on)
