"""Chained 128-bit block hashes: content, chaining, salt, incremental use, process independence."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from hashlib import blake2b

from hkv.runtime.kv_cache.block_hash import BlockHasher, first_block_hash, next_block_hash
from hkv.runtime.request import Request
from rt_layouts import hash_tokens

TOKENS = list(range(10, 20))  # 10 tokens: 2 full blocks of 4, 2 tokens left over


def test_digest_is_128_bit_blake2b_of_packed_tokens() -> None:
    hashes = hash_tokens(BlockHasher(4), TOKENS)
    assert len(hashes) == 2 and all(len(h) == 16 for h in hashes)
    packed0 = struct.pack("<4q", 10, 11, 12, 13)
    packed1 = struct.pack("<4q", 14, 15, 16, 17)
    assert hashes[0] == blake2b(b"\x00" + packed0, digest_size=16).digest()
    assert hashes[1] == blake2b(b"\x01" + hashes[0] + packed1, digest_size=16).digest()
    assert hashes == [first_block_hash(packed0, None), next_block_hash(hashes[0], packed1)]


def test_chaining_makes_each_hash_name_its_whole_prefix() -> None:
    hasher = BlockHasher(4)
    base = hash_tokens(hasher, TOKENS)
    first_changed = hash_tokens(hasher, [99] + TOKENS[1:])
    second_changed = hash_tokens(hasher, TOKENS[:5] + [99] + TOKENS[6:])
    assert first_changed[0] != base[0] and first_changed[1] != base[1]
    assert second_changed[0] == base[0] and second_changed[1] != base[1]
    assert hash_tokens(hasher, TOKENS[:4] + TOKENS[4:8][::-1])[1] != base[1]  # order matters


def test_cache_salt_changes_every_hash() -> None:
    hasher = BlockHasher(4)
    base = hash_tokens(hasher, TOKENS)
    salted = hash_tokens(hasher, TOKENS, cache_salt="tenant-a")
    other = hash_tokens(hasher, TOKENS, cache_salt="tenant-b")
    assert salted[0] != base[0] and salted[1] != base[1] and salted != other


def test_incremental_extension_equals_one_shot() -> None:
    hasher = BlockHasher(2)
    request = Request("r", TOKENS[:3], max_output_len=8)
    hasher.extend(request)
    assert len(request.block_hashes) == 1
    for token in TOKENS[3:]:
        request.append_output_token(token)
        hasher.extend(request)
    assert request.block_hashes == hash_tokens(hasher, TOKENS)


def test_coarse_block_hash_is_the_fine_hash_at_its_end() -> None:
    """A group of block size 4 over hash blocks of 2 names its block i by fine hash 2i+1: the
    chain makes it equal to hashing whole 4-token blocks' prefix, which differs from a 4-token
    hash itself but identifies the same prefix."""
    fine = hash_tokens(BlockHasher(2), TOKENS[:8])
    coarse_names = [fine[(i + 1) * 2 - 1] for i in range(2)]
    changed = hash_tokens(BlockHasher(2), TOKENS[:6] + [0, 0])
    assert coarse_names[0] == changed[1] and coarse_names[1] != changed[3]


def test_hashes_are_equal_across_processes() -> None:
    code = ("from hkv.runtime.kv_cache.block_hash import BlockHasher; from hkv.runtime import Request;"
            "r = Request('r', list(range(10, 20)), 1, cache_salt='s'); BlockHasher(4).extend(r);"
            "print(r.block_hashes[1].hex())")
    outputs = set()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outputs.add(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                   capture_output=True, text=True).stdout.strip())
    assert outputs == {hash_tokens(BlockHasher(4), TOKENS, cache_salt="s")[1].hex()}
