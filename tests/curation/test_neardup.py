"""Near-duplicate hash index (curation.neardup)."""

import itertools

import numpy as np
import pytest

from curation.imaging import hamming, to_signed
from curation.neardup import HashIndex, IndexRegistry, pairs_within


def flip(value, *bits):
    for bit in bits:
        value ^= 1 << bit
    return to_signed(value)


def brute_force(ids, hashes, probe, radius):
    hits = [(hamming(h, probe), i) for i, h in zip(ids, hashes) if hamming(h, probe) <= radius]
    return sorted(hits)


def test_query_matches_brute_force_on_random_hashes():
    rng = np.random.default_rng(0)
    hashes = [to_signed(int(x)) for x in rng.integers(0, 2**63, 3000, dtype=np.uint64) * 2 + 1]
    ids = list(range(10, 3010))
    index = HashIndex(capacity=4)  # forces several growths
    index.add_many(ids, hashes)
    probes = [flip(hashes[5], 0, 17, 63), flip(hashes[2000], 3), int(hashes[7])]
    for probe in probes:
        for radius in (0, 3, 20, 28):
            got_ids, got_d = index.query(probe, radius)
            assert list(zip(got_d.tolist(), got_ids.tolist())) == brute_force(ids, hashes, probe, radius)


def test_signed_and_unsigned_inputs_are_the_same_bits():
    index = HashIndex()
    index.add(1, -1)  # all 64 bits set, as stored in a signed BIGINT
    ids, dist = index.query(0xFFFF_FFFF_FFFF_FFFE, 1)
    assert ids.tolist() == [1] and dist.tolist() == [1]


def test_remove_and_replace_keep_the_index_consistent():
    index = HashIndex(capacity=2)
    index.add_many([1, 2, 3], [0b1, 0b11, 0b111])
    assert index.remove(1) and not index.remove(1)
    assert 1 not in index and len(index) == 2
    ids, _ = index.query(0, 64)
    assert sorted(ids.tolist()) == [2, 3]
    index.add(3, 0)  # replace, not duplicate
    ids, dist = index.query(0, 0)
    assert ids.tolist() == [3] and dist.tolist() == [0] and len(index) == 2
    ids, _ = index.query(0b11, 0, exclude=2)
    assert ids.tolist() == []


def test_empty_index_and_bad_input():
    assert HashIndex().query(123, 10)[0].size == 0
    with pytest.raises(ValueError):
        HashIndex().add_many([1, 2], [3])


def test_pairs_within_finds_each_close_pair_once():
    base = 0x0F0F_F0F0_1234_5678
    ids = [1, 2, 3, 4]
    hashes = [to_signed(base), flip(base, 1, 2), flip(base, 40), to_signed(~base)]
    pairs = pairs_within(ids, hashes, 3)
    assert sorted(pairs) == [(1, 2, 2), (1, 3, 1), (2, 3, 3)]
    assert pairs_within(ids, hashes, 0) == []


def test_registry_builds_lazily_and_picks_up_new_rows():
    rows = {"b1": [(1, 0), (2, 0b1111)]}
    calls = []

    def loader(key, after_id):
        calls.append((key, after_id))
        fresh = [r for r in rows[key] if r[0] > after_id]
        return [r[0] for r in fresh], [r[1] for r in fresh]

    registry = IndexRegistry(loader)
    assert registry.get("b1").query(0, 0)[0].tolist() == [1]
    rows["b1"].append((7, 1))
    index = registry.get("b1")
    assert index.query(0, 1)[0].tolist() == [1, 7]
    assert calls == [("b1", 0), ("b1", 2)]
    registry.forget("b1")
    registry.get("b1")
    assert calls[-1] == ("b1", 0)


def test_registry_rebuilds_when_loaded_rows_change():
    rows = {1: 0, 2: 0b1}
    generation = {"n": 0}

    def loader(key, after_id):
        fresh = sorted(i for i in rows if i > after_id)
        return fresh, [rows[i] for i in fresh]

    def fingerprint(key, last_id):
        return (generation["n"], sum(1 for i in rows if i <= last_id))

    registry = IndexRegistry(loader, fingerprint)
    assert registry.get("k").query(0b1, 0)[0].tolist() == [2]
    rows[2] = 0b111  # same id, different row (deleted and re-created)
    generation["n"] += 1
    assert registry.get("k").query(0b1, 0)[0].tolist() == []
    assert registry.get("k").query(0b111, 0)[0].tolist() == [2]


def _brute(hashes: np.ndarray, ids: np.ndarray, probe: int, radius: int) -> list[tuple[int, int]]:
    d = np.bitwise_count(hashes.view(np.uint64) ^ np.uint64(probe & 0xFFFF_FFFF_FFFF_FFFF))
    keep = d <= radius
    return sorted(zip(d[keep].tolist(), ids[keep].tolist()))


def test_multi_index_answers_exactly_like_a_full_scan(monkeypatch):
    import curation.neardup as neardup

    monkeypatch.setattr(neardup, "_MULTI_INDEX_FROM", 500)
    rng = np.random.default_rng(1)
    base = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 3000, dtype=np.int64)
    # Near copies at 1..16 bits from random stored hashes, so every radius has real hits.
    near = np.array(
        [
            flip(int(base[i]) & 0xFFFF_FFFF_FFFF_FFFF, *rng.choice(64, size=k, replace=False).tolist())
            for i, k in zip(rng.integers(0, 3000, 600), itertools.cycle(range(1, 17)))
        ],
        dtype=np.int64,
    )
    hashes = np.concatenate([base, near])
    ids = np.arange(100, 100 + len(hashes), dtype=np.int64)
    index = HashIndex()
    index.add_many(ids, hashes)
    probes = [int(h) for h in near[:40]] + [int(x) for x in rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 10)]

    def check():
        live = np.array(sorted(index._position), dtype=np.int64)
        stored = np.array([int(index._hashes[index._position[i]]) for i in live], dtype=np.uint64).view(np.int64)
        for probe in probes:
            for radius in (0, 2, 5, 7, 10, 13, 15, 20):
                got_ids, got_d = index.query(probe, radius)
                assert list(zip(got_d.tolist(), got_ids.tolist())) == _brute(stored, live, probe, radius), radius

    check()
    assert index._indexed == len(hashes)  # the multi-index was built...
    assert len(index._candidates(np.uint64(probes[0]), 10)) < len(hashes) // 32  # ...and narrows the search
    # Entries added afterwards are found through the direct scan of the tail...
    index.add_many([1, 2], [probes[0], flip(probes[1] & 0xFFFF_FFFF_FFFF_FFFF, 3, 40)])
    check()
    assert index._indexed == len(hashes)
    # ...and removing or replacing an indexed entry drops the multi-index until the next build.
    index.remove(100)
    index.add(101, probes[2])
    assert index._indexed == 0
    check()


def test_crowded_blocks_fall_back_to_the_full_scan(monkeypatch):
    import curation.neardup as neardup

    monkeypatch.setattr(neardup, "_MULTI_INDEX_FROM", 500)
    rng = np.random.default_rng(2)
    # Clustered hashes (like pHashes of very similar pictures): only the low 20 bits vary.
    hashes = rng.integers(0, 1 << 20, 5000, dtype=np.int64) | np.int64(0x5A5A_5A5A_5A00_0000)
    ids = np.arange(len(hashes), dtype=np.int64)
    index = HashIndex()
    index.add_many(ids, hashes)
    probe = int(hashes[0])
    got_ids, got_d = index.query(probe, 6)
    assert list(zip(got_d.tolist(), got_ids.tolist())) == _brute(hashes, ids, probe, 6)
    assert index._candidates(np.uint64(probe), 6) is None  # the blocks were too crowded to help
