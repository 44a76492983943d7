"""The Hub could not give a model's files; `reason` is one line a user can act on."""

from __future__ import annotations


class HubUnavailable(Exception):
    """Raised instead of an InputError because a caller may still fall back (HF cache, catalog):
    `reason` then prefixes the note saying what it fell back to, or the error when nothing is left."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
