"""Near-duplicate hash index (curation.neardup)."""

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
    for radius in (0, 3, 20, 28):
        for probe, (many_ids, many_d) in zip(probes, index.query_many(probes, radius), strict=True):
            got_ids, got_d = index.query(probe, radius)
            assert list(zip(got_d.tolist(), got_ids.tolist())) == brute_force(ids, hashes, probe, radius)
            assert list(zip(many_d.tolist(), many_ids.tolist())) == brute_force(ids, hashes, probe, radius)
    assert HashIndex().query_many(probes, 5)[0][0].tolist() == [] and index.query_many([], 5) == []


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


def test_registry_with_two_columns_loads_and_checks_both_indexes_together():
    rows = {1: (0, 0b1111), 2: (0b1, 0)}
    calls = []

    def loader(key, after_id):
        calls.append(("load", after_id))
        fresh = sorted(i for i in rows if i > after_id)
        return fresh, ([rows[i][0] for i in fresh], [rows[i][1] for i in fresh])

    def fingerprint(key, last_id):
        calls.append(("fingerprint", last_id))
        return tuple(rows.get(i) for i in range(1, last_id + 1))

    registry = IndexRegistry(loader, fingerprint, columns=2)
    first, second = registry.get("b")
    assert first.query(0, 0)[0].tolist() == [1] and second.query(0, 0)[0].tolist() == [2]
    rows[3] = (0b11, 0b11)
    first, second = registry.get("b")
    assert first.query(0, 2)[0].tolist() == [1, 2, 3] and second.query(0, 2)[0].tolist() == [2, 3]
    # one fingerprint and one load per use, for both columns
    assert calls == [("load", 0), ("fingerprint", 2), ("fingerprint", 2), ("load", 2), ("fingerprint", 3)]
    rows[2] = (0b111, 0b111)  # a row replaced: both indexes are rebuilt
    first, second = registry.get("b")
    assert first.query(0b111, 0)[0].tolist() == [2] and second.query(0, 0)[0].tolist() == []


def _brute(hashes: np.ndarray, ids: np.ndarray, probe: int, radius: int) -> list[tuple[int, int]]:
    d = np.bitwise_count(hashes.view(np.uint64) ^ np.uint64(probe & 0xFFFF_FFFF_FFFF_FFFF))
    keep = d <= radius
    return sorted(zip(d[keep].tolist(), ids[keep].tolist()))


def _random_bits(rng, n):
    return rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64, endpoint=True)


def _flipped(rng, values, max_bits):
    out = values.view(np.uint64).copy()
    for row, k in enumerate(rng.integers(0, max_bits + 1, len(out))):
        for bit in rng.choice(64, size=int(k), replace=False):
            out[row] ^= np.uint64(1) << np.uint64(bit)
    return out.view(np.int64)


def _clustered(rng, n, scenes=40):
    """Like real pHashes of a crawl: scenes with many near copies (bursts, re-encodes: 0-8 bits
    apart, many identical), a first bit that is nearly always set, low-variance high bits, and
    a pile of near-constant pictures on a few values."""
    centres = _random_bits(rng, scenes)
    centres |= np.int64(-(2**63))  # the DC bit
    centres &= ~np.int64(0x0FF0 << 48)  # bits that hardly vary
    members = _flipped(rng, centres[rng.integers(0, len(centres), n - n // 10)], 8)
    flat = np.array([0x5A5A_5A5A_0000_0001, 0x5A5A_5A5A_0000_0003], dtype=np.int64)
    return np.concatenate([members, flat[rng.integers(0, 2, n // 10)]])


def _probes(rng, hashes, count=30):
    near = _flipped(rng, hashes[rng.integers(0, len(hashes), count)], 12)
    return [int(h) for h in near] + [int(h) for h in _random_bits(rng, 5)]


def _contents(index):
    """(ids, hashes) of the live entries, read from the index's own arrays."""
    ids, hashes = [index._tail_ids[: index._tail]], [index._tail_hashes[: index._tail]]
    alive = [index._tail_alive[: index._tail]]
    if index._blocks is not None:
        ids.append(index._blocks.ids)
        hashes.append(index._blocks.hashes())
        alive.append(index._alive)
    keep = np.concatenate(alive)
    return np.concatenate(ids)[keep], np.concatenate(hashes)[keep].view(np.int64)


def _check(index, probes, radii=(0, 1, 2, 4, 7, 8, 10, 11, 13, 16, 24)):
    """Every answer equals a full scan over what the index holds now."""
    live, stored = _contents(index)
    assert len(set(live.tolist())) == len(live) == len(index)
    for radius in radii:
        together = index.query_many(probes, radius)  # a batch's queries at once: the same answers
        for probe, (many_ids, many_d) in zip(probes, together, strict=True):
            got_ids, got_d = index.query(probe, radius)
            assert list(zip(got_d.tolist(), got_ids.tolist())) == _brute(stored, live, probe, radius), (probe, radius)
            assert many_ids.tolist() == got_ids.tolist() and many_d.tolist() == got_d.tolist(), (probe, radius)


@pytest.fixture
def small_builds(monkeypatch):
    """Build the block index from 500 entries (20,000 in production) so tests stay small."""
    import curation.neardup as neardup

    monkeypatch.setattr(neardup, "_BUILD_FROM", 500)
    monkeypatch.setattr(neardup, "_TAIL_MIN", 200)
    monkeypatch.setattr(neardup, "_BATCH_CELLS", 2000)  # query_many's tail pass in several steps
    return neardup


@pytest.mark.parametrize("blocks", [3, 4])
@pytest.mark.parametrize("distribution", ["random", "clustered"])
def test_the_block_index_answers_exactly_like_a_full_scan(small_builds, monkeypatch, blocks, distribution):
    monkeypatch.setattr(small_builds, "_THREE_BLOCKS_FROM", 0 if blocks == 3 else 2**40)
    rng = np.random.default_rng(blocks * 10 + len(distribution))
    hashes = _random_bits(rng, 4000) if distribution == "random" else _clustered(rng, 4000)
    ids = rng.permutation(np.arange(100, 100 + len(hashes), dtype=np.int64))  # ids in no order
    index = HashIndex()
    index.add_many(ids, hashes)
    probes = _probes(rng, hashes)
    _check(index, probes)
    assert index._blocks is not None and len(index._blocks.widths) == blocks and len(index._blocks) == len(hashes)
    # Entries added later sit in the tail, found by the direct scan...
    index.add_many([1, 2, 3], [probes[0], probes[1], int(hashes[7])])
    _check(index, probes)
    # ...removed and replaced entries vanish from the answers at once...
    for item_id in ids[:50].tolist():
        assert index.remove(item_id)
    index.add_many(ids[50:60], _random_bits(rng, 10))
    index.add(2, probes[3])
    assert len(index) == len(hashes) + 3 - 50
    _check(index, probes)
    # ...and a rebuild (the tail grew past its share) keeps every answer.
    index.add_many(np.arange(10_000, 10_300), _flipped(rng, hashes[:300], 3))
    _check(index, probes[:10])
    assert index._tail == 0 and len(index._blocks) == len(index)


def test_crowded_blocks_are_searched_through_the_others(small_builds, monkeypatch):
    """Clustered hashes crowd the blocks near a cluster; a block that never varies holds every
    hash in one bucket. Thresholds chosen per query keep the search off the full scan."""
    monkeypatch.setattr(small_builds, "_THREE_BLOCKS_FROM", 2**40)  # four blocks of 16 bits
    rng = np.random.default_rng(5)
    hashes = _clustered(rng, 12_000, scenes=300) & np.int64(0x0000_FFFF_FFFF_FFFF)  # 16 bits always 0
    index = HashIndex()
    index.add_many(np.arange(len(hashes)), hashes)
    index.query(0, 0)  # builds

    def no_scan(*args):
        raise AssertionError("fell back to the full scan")

    monkeypatch.setattr(index._blocks, "_scan", no_scan)
    _check(index, _probes(rng, hashes, 20), radii=(2, 6, 10))


def test_radius_beyond_what_the_blocks_can_split_is_a_full_scan(small_builds):
    rng = np.random.default_rng(6)
    hashes = _random_bits(rng, 2000)
    index = HashIndex()
    index.add_many(np.arange(len(hashes)), hashes)
    _check(index, _probes(rng, hashes, 5), radii=(15, 20, 31, 40, 64))


def test_equal_hashes_are_stored_once_and_all_their_ids_found(small_builds):
    index = HashIndex()
    index.add_many(np.arange(1000), np.repeat(np.array([7, 6, 2**40], dtype=np.int64), [600, 300, 100]))
    ids, distances = index.query(7, 1)
    assert ids.tolist() == list(range(600)) + list(range(600, 900)) and distances.tolist() == [0] * 600 + [1] * 300
    assert len(index._blocks.distinct) == 3
    assert index.query(7, 1, exclude=5)[0].tolist() == [i for i in range(900) if i != 5]
