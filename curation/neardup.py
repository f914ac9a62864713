"""In-memory near-duplicate search over 64-bit perceptual hashes (no Django here).

Hashes are signed 64-bit ints as stored in the database (see curation.imaging); the index
keeps them as uint64 and answers "every stored hash within Hamming distance r".

Small indexes are scanned whole: one vectorised XOR + popcount pass. Large ones add a
multi-index (pigeonhole over four 16-bit blocks): if two hashes are at most r bits apart,
at least one of their blocks is at most r // 4 bits apart, so a query only checks the
entries filed under the block values near its own (a few thousand of a million for r = 10)
instead of streaming every hash through memory. Entries added after the multi-index was
built are scanned directly until there are enough of them to rebuild it. When the blocks
are too crowded to help (clustered hashes, a large radius), the whole scan is used.
bench/ingest.py measures the query time over a million hashes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable, Iterable

import numpy as np

_BLOCKS = 4
_BLOCK_BITS = 16
_BLOCK_VALUES = 1 << _BLOCK_BITS
_MULTI_INDEX_FROM = 20_000  # entries; below this the whole scan is as fast
_MAX_BLOCK_RADIUS = 3  # beyond r = 15 the blocks hold too many candidates to beat the scan


def _block_masks(max_bits: int) -> np.ndarray:
    """Every 16-bit value with at most `max_bits` bits set."""
    masks = [0]
    for k in range(1, max_bits + 1):
        masks += [sum(1 << b for b in bits) for bits in itertools.combinations(range(_BLOCK_BITS), k)]
    return np.array(masks, dtype=np.int64)


_MASKS = [_block_masks(t) for t in range(_MAX_BLOCK_RADIUS + 1)]


def _as_uint64(hashes: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(hashes)
    if arr.dtype == np.uint64:
        return arr.ravel()
    if arr.dtype == np.int64:
        return arr.ravel().view(np.uint64)
    # Python ints may be signed or unsigned 64-bit: mask into the unsigned range.
    return np.array([int(h) & 0xFFFF_FFFF_FFFF_FFFF for h in np.ravel(arr)], dtype=np.uint64)


def _scalar_uint64(value: int) -> np.uint64:
    return np.uint64(int(value) & 0xFFFF_FFFF_FFFF_FFFF)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of range(start, start + length) for each pair, vectorised."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    return np.repeat(starts - ends + lengths, lengths) + np.arange(total)


class HashIndex:
    """Append/remove/query store of (id, 64-bit hash); ids are ints (e.g. Image primary keys).
    Safe to share between threads."""

    def __init__(self, capacity: int = 1024):
        self._hashes = np.zeros(capacity, dtype=np.uint64)
        self._ids = np.zeros(capacity, dtype=np.int64)
        self._size = 0
        self._position: dict[int, int] = {}
        # Reused scratch buffers: allocation dominated the whole-scan time at a million entries.
        self._xor = np.zeros(capacity, dtype=np.uint64)
        self._counts = np.zeros(capacity, dtype=np.uint8)
        # Multi-index over positions [0, _indexed): per block, positions sorted by block value
        # and where each value's run starts.
        self._blocks: list[tuple[np.ndarray, np.ndarray]] = []
        self._indexed = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._size

    def __contains__(self, item_id: int) -> bool:
        return int(item_id) in self._position

    def _reserve(self, needed: int) -> None:
        capacity = len(self._hashes)
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        for name, dtype in (("_hashes", np.uint64), ("_ids", np.int64)):
            grown = np.zeros(capacity, dtype=dtype)
            grown[: self._size] = getattr(self, name)[: self._size]
            setattr(self, name, grown)
        self._xor = np.zeros(capacity, dtype=np.uint64)
        self._counts = np.zeros(capacity, dtype=np.uint8)

    def _forget_blocks_at(self, pos: int) -> None:
        if pos < self._indexed:  # an indexed entry changed: the multi-index no longer holds
            self._blocks, self._indexed = [], 0

    def add(self, item_id: int, hash_value: int) -> None:
        self.add_many([item_id], [hash_value])

    def add_many(self, ids: Iterable[int] | np.ndarray, hashes: Iterable[int] | np.ndarray) -> None:
        """Add entries; an id already present gets its hash replaced."""
        ids_arr = np.asarray(ids, dtype=np.int64).ravel()
        hashes_arr = _as_uint64(hashes)
        if len(ids_arr) != len(hashes_arr):
            raise ValueError("ids and hashes must have the same length")
        with self._lock:
            fresh_ids, fresh_hashes = [], []
            seen: set[int] = set()
            for item_id, value in zip(ids_arr.tolist(), hashes_arr):
                pos = self._position.get(item_id)
                if pos is not None:
                    self._hashes[pos] = value
                    self._forget_blocks_at(pos)
                elif item_id in seen:
                    fresh_hashes[fresh_ids.index(item_id)] = value
                else:
                    seen.add(item_id)
                    fresh_ids.append(item_id)
                    fresh_hashes.append(value)
            if not fresh_ids:
                return
            start = self._size
            end = start + len(fresh_ids)
            self._reserve(end)
            self._ids[start:end] = fresh_ids
            self._hashes[start:end] = np.asarray(fresh_hashes, dtype=np.uint64)
            self._position.update((item_id, start + i) for i, item_id in enumerate(fresh_ids))
            self._size = end

    def remove(self, item_id: int) -> bool:
        """Remove an id (the last entry moves into its slot); returns whether it was present."""
        with self._lock:
            pos = self._position.pop(int(item_id), None)
            if pos is None:
                return False
            last = self._size - 1
            if pos != last:
                moved_id = int(self._ids[last])
                self._ids[pos] = moved_id
                self._hashes[pos] = self._hashes[last]
                self._position[moved_id] = pos
            self._forget_blocks_at(pos)
            self._size = last
            self._indexed = min(self._indexed, self._size)
            return True

    def _build_blocks(self) -> None:
        n = self._size
        stored = self._hashes[:n]
        position_type = np.int32 if n < 2**31 else np.int64
        self._blocks = []
        for b in range(_BLOCKS):
            keys = ((stored >> np.uint64(b * _BLOCK_BITS)) & np.uint64(_BLOCK_VALUES - 1)).astype(np.uint16)
            order = np.argsort(keys, kind="stable").astype(position_type)
            starts = np.zeros(_BLOCK_VALUES + 1, dtype=np.int64)
            np.cumsum(np.bincount(keys, minlength=_BLOCK_VALUES), out=starts[1:])
            self._blocks.append((order, starts))
        self._indexed = n

    def _scan(self, query: np.uint64, radius: int, start: int, stop: int) -> np.ndarray:
        """Positions in [start, stop) within `radius`, by XOR + popcount over all of them."""
        xor = np.bitwise_xor(self._hashes[start:stop], query, out=self._xor[start:stop])
        counts = np.bitwise_count(xor, out=self._counts[start:stop])
        return np.flatnonzero(counts <= radius) + start

    def _candidates(self, query: np.uint64, radius: int) -> np.ndarray | None:
        """Indexed positions sharing a near block value with the query (a superset of the
        indexed hits), or None when that would not be cheaper than scanning them."""
        masks = _MASKS[radius // _BLOCKS]
        # Gathering a candidate costs about as much as scanning a few dozen entries in order.
        found, budget = [], self._indexed // 32
        for b, (order, starts) in enumerate(self._blocks):
            key = (int(query) >> (b * _BLOCK_BITS)) & (_BLOCK_VALUES - 1)
            values = key ^ masks
            first = starts[values]
            lengths = starts[values + 1] - first
            budget -= int(lengths.sum())
            if budget < 0:
                return None
            found.append(order[_ranges(first, lengths)])
        return np.concatenate(found)

    def query(self, hash_value: int, radius: int, *, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Ids and distances of stored hashes within ``radius`` bits, nearest first."""
        query = _scalar_uint64(hash_value)
        with self._lock:
            n = self._size
            if n == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
            hits = None
            if n >= _MULTI_INDEX_FROM and radius // _BLOCKS <= _MAX_BLOCK_RADIUS:
                if not self._blocks or n - self._indexed > max(4096, self._indexed // 8):  # too much to scan
                    self._build_blocks()
                candidates = self._candidates(query, radius)
                if candidates is not None:
                    distances = np.bitwise_count(self._hashes[candidates] ^ query)
                    near = np.unique(candidates[distances <= radius])
                    hits = np.concatenate([near, self._scan(query, radius, self._indexed, n)])
            if hits is None:
                hits = self._scan(query, radius, 0, n)
            ids = self._ids[hits]
            distances = np.bitwise_count(self._hashes[hits] ^ query).astype(np.uint8)
        if exclude is not None:
            keep = ids != exclude
            ids, distances = ids[keep], distances[keep]
        order = np.lexsort((ids, distances))
        return ids[order], distances[order]


def pairs_within(ids: Iterable[int] | np.ndarray, hashes: Iterable[int] | np.ndarray, radius: int) -> list[tuple[int, int, int]]:
    """Every pair (id_a, id_b, distance) with distance <= radius, id_a listed before id_b."""
    ids_arr = np.asarray(ids, dtype=np.int64).ravel()
    hashes_arr = _as_uint64(hashes)
    if len(ids_arr) != len(hashes_arr):
        raise ValueError("ids and hashes must have the same length")
    pairs: list[tuple[int, int, int]] = []
    block = 1024  # rows per step: bounds the temporary matrix at block x n
    for start in range(0, len(ids_arr), block):
        stop = min(start + block, len(ids_arr))
        counts = np.bitwise_count(hashes_arr[start:stop, None] ^ hashes_arr[None, :])
        rows, cols = np.nonzero(counts <= radius)
        upper = cols > rows + start  # each unordered pair once, never an entry with itself
        for r, c in zip(rows[upper].tolist(), cols[upper].tolist()):
            pairs.append((int(ids_arr[start + r]), int(ids_arr[c]), int(counts[r, c])))
    return pairs


Loader = Callable[[Hashable, int], tuple[Iterable[int], Iterable[int]]]
Fingerprint = Callable[[Hashable, int], Hashable]


class IndexRegistry:
    """Lazily built indexes, one per key (e.g. (benchmark_id, "phash")), kept per process.

    ``loader(key, after_id)`` returns (ids, hashes) of rows with id > after_id, so each use
    first picks up rows other processes added since. ``fingerprint(key, last_id)`` describes
    the rows already loaded (e.g. their count and newest timestamp): when it changes, rows were
    deleted or replaced and the index is rebuilt from scratch.
    """

    def __init__(self, loader: Loader, fingerprint: Fingerprint | None = None):
        self._loader = loader
        self._fingerprint = fingerprint
        self._indexes: dict[Hashable, tuple[HashIndex, int, Hashable]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> HashIndex:
        with self._lock:
            index, last_id, seen = self._indexes.get(key, (None, 0, None))
            if index is not None and self._fingerprint is not None and self._fingerprint(key, last_id) != seen:
                index = None
            if index is None:
                index, last_id = HashIndex(), 0
            ids, hashes = self._loader(key, last_id)
            ids_arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64)
            if len(ids_arr):
                index.add_many(ids_arr, hashes if isinstance(hashes, np.ndarray) else list(hashes))
                last_id = max(last_id, int(ids_arr.max()))
            seen = self._fingerprint(key, last_id) if self._fingerprint is not None else None
            self._indexes[key] = (index, last_id, seen)
            return index

    def forget(self, key: Hashable | None = None) -> None:
        with self._lock:
            if key is None:
                self._indexes.clear()
            else:
                self._indexes.pop(key, None)
