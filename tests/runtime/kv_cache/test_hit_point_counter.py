import pytest

from hkv.runtime.kv_cache.hit_point_counter import HitPointCounter


def test_counts_per_hash() -> None:
    counter = HitPointCounter(capacity=4)
    assert [counter.count(b"a"), counter.count(b"b"), counter.count(b"a"), counter.count(b"a")] == [1, 1, 2, 3]
    assert (counter.get(b"a"), counter.get(b"b"), counter.get(b"c")) == (3, 1, 0)


def test_forgets_the_least_recently_counted_past_capacity() -> None:
    counter = HitPointCounter(capacity=2)
    counter.count(b"a")
    counter.count(b"b")
    counter.count(b"a")  # a is now the most recent: b goes first
    counter.count(b"c")
    assert len(counter) == 2 and counter.get(b"b") == 0 and counter.get(b"a") == 2
    assert counter.count(b"b") == 1  # forgotten: counted from scratch


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity >= 1"):
        HitPointCounter(0)
