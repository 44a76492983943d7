"""Streamed text of a growing token sequence whose pieces join to the text of the whole.

Detokenizers' incremental scheme: each new piece is the difference between decoding a window
that starts a few tokens back (`prefix_offset`) with and without the new tokens, so that what a
tokenizer does at a boundary (a leading space, a merge) comes out the same as in the full
decode; and nothing is emitted while the text ends in U+FFFD, a character whose bytes are split
over tokens not generated yet (CJK, emoji in byte-level BPE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_INCOMPLETE = "\ufffd"  # what a decoder shows for the bytes of a partial UTF-8 character

Decode = Callable[[Sequence[int]], str]


class StreamDecoder:
    """Feed it the whole token list after each new token (`push`), then once more at the end
    (`finish`); the returned pieces concatenate to decode(token_ids). Mutates its offsets."""

    def __init__(self, decode: Decode) -> None:
        self._decode = decode
        self._prefix_offset = 0  # start of the window decoded for context
        self._read_offset = 0  # tokens before this are emitted
        self.text = ""  # everything emitted so far

    def push(self, token_ids: Sequence[int]) -> str:
        """The new text that `token_ids` (the previous list plus new tokens) completes, or ""."""
        prefix_text = self._decode(token_ids[self._prefix_offset:self._read_offset])
        new_text = self._decode(token_ids[self._prefix_offset:])
        if len(new_text) <= len(prefix_text) or new_text.endswith(_INCOMPLETE):
            return ""
        piece = new_text[len(prefix_text):]
        self._prefix_offset, self._read_offset = self._read_offset, len(token_ids)
        self.text += piece
        return piece

    def finish(self, token_ids: Sequence[int]) -> str:
        """The rest of decode(token_ids) (a held-back partial character included)."""
        full = self._decode(token_ids)
        piece = full[len(self.text):] if full.startswith(self.text) else ""
        self.text += piece
        return piece
