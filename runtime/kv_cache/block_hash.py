"""Chained prefix block hashes.

    h_0 = H(0x00 | tokens[0:hb] | extra)        h_i = H(0x01 | h_{i-1} | tokens[i*hb:(i+1)*hb])

H is BLAKE2b with a 16-byte (128-bit) digest; token ids are little-endian int64 (Request stores
them as an int64 array: its bytes, byte-swapped on a big-endian host), so
hashes are equal across processes and machines (no Python `hash()`). `extra` (a cache salt)
only enters the first block, which makes every later hash of the chain depend on it.

Hashes are computed at `hash_block_size` = gcd of the group block sizes. A coarser group (block
size k * hash_block_size) names its block i by the fine hash at the block's end,
`fine[(i + 1) * k - 1]`: chained, that hash identifies the whole prefix up to the block's end.
"""

from __future__ import annotations

import struct
import sys
from hashlib import blake2b

from hkv.runtime.request import Request

DIGEST_BYTES = 16
_NEXT_PREFIX = blake2b(b"\x01", digest_size=DIGEST_BYTES)  # copied per block: H(0x01 | ...)
_BIG_ENDIAN = sys.byteorder == "big"  # token bytes are little-endian int64 everywhere


def first_block_hash(token_bytes: bytes, cache_salt: str | None) -> bytes:
    hasher = blake2b(b"\x00", digest_size=DIGEST_BYTES)
    hasher.update(token_bytes)
    if cache_salt is not None:
        salt = cache_salt.encode()
        hasher.update(struct.pack("<Q", len(salt)))
        hasher.update(salt)
    return hasher.digest()


def next_block_hash(parent: bytes, token_bytes: bytes) -> bytes:
    return blake2b(b"\x01" + parent + token_bytes, digest_size=DIGEST_BYTES).digest()


class BlockHasher:
    """Appends the hashes of a request's newly full hash blocks to `request.block_hashes`."""

    def __init__(self, hash_block_size: int) -> None:
        if hash_block_size < 1:
            raise ValueError(f"hash_block_size must be >= 1, got {hash_block_size}")
        self.hash_block_size = hash_block_size

    def extend(self, request: Request) -> None:
        """Hash each full hash block of the request's tokens that has no hash yet. Each block is
        hashed once over the request's lifetime; cost is O(new tokens)."""
        hashes = request.block_hashes
        size = self.hash_block_size
        num_full = len(request.token_ids) // size
        start = len(hashes)
        if start >= num_full:
            return
        new_tokens = request.token_ids[start * size:num_full * size]  # int64 array
        if _BIG_ENDIAN:
            new_tokens.byteswap()
        token_bytes = new_tokens.tobytes()
        step = size * 8
        first = 0
        if start == 0:
            parent = first_block_hash(token_bytes[:step], request.cache_salt)
            hashes.append(parent)
            first = step
        else:
            parent = hashes[-1]
        # Inlined next_block_hash: copy a hasher primed with the 0x01 tag, one update per block.
        copy = _NEXT_PREFIX.copy
        for offset in range(first, len(token_bytes), step):
            hasher = copy()
            hasher.update(parent + token_bytes[offset:offset + step])
            parent = hasher.digest()
            hashes.append(parent)
