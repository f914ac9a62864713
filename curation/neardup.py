"""In-memory near-duplicate search over 64-bit perceptual hashes (no Django here).

Hashes are signed 64-bit ints as stored in the database (see curation.imaging); the index
keeps them as uint64 and answers exactly "every stored hash within Hamming distance r".

How a query stays fast on real collections (bench/neardup.py measures it at ten million):

* Equal hashes are stored once. Real collections repeat hashes a lot (re-encodes, resizes and
  re-uploads usually keep the pHash), so the search runs over distinct values and each value
  lists the entries that carry it.
* Multi-index hashing with a generalised pigeonhole. The 64 bits are cut into m blocks (three of
  21-22 bits for large indexes, four of 16 bits below half a million distinct values), and each
  block has a table of the distinct values sorted by that block's bits. If two hashes are at most
  r bits apart and block b gets a threshold t_b, with (t_1 + 1) + ... + (t_m + 1) >= r + 1, then
  some block differs by at most t_b bits (t_b = -1 skips a block): so the candidates are the
  values filed under the block values within t_b of the query's, each checked on all 64 bits.
* The thresholds are chosen per query. Counting the candidates each choice would gather is
  cheap (bucket sizes for every near block value), so a query gives crowded blocks (many
  pictures of one scene, bits that barely vary) a low threshold and lets the others carry the
  radius. When every choice would gather more than a plain pass over the distinct values costs,
  the pass is made instead; the answer is the same.
* Which bits form a block is chosen from the data: bits that vary little (pHash's first bit is
  nearly always set) are spread over the blocks so no block is mostly constant.

Entries added after a build sit in a tail that is scanned directly, and removed or replaced
entries are masked out, until there are enough of either to rebuild. The bench shows the
memory: about 25 bytes per stored hash at ten million.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache

import numpy as np

_U64 = np.uint64
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF
_BUILD_FROM = 20_000  # live entries; below this one pass over them all is as fast
_TAIL_MIN = 16_384  # unindexed entries always tolerated before a rebuild...
_TAIL_SHARE = 32  # ...or this fraction of the indexed ones, whichever is larger
_DEAD_SHARE = 8  # rebuild when removed or replaced entries reach this fraction of the indexed ones
_THREE_BLOCKS_FROM = 1 << 19  # distinct values; below this, four blocks of 16 bits
_MAX_THRESHOLD = 3  # per block: up to 1,794 near block values for 22 bits
_SCAN_CHUNK = 1 << 16
_BATCH_CELLS = 1 << 20  # query_many: hashes x tail entries compared in one step
# Relative costs (a gathered candidate = 1): looking up one near block value, and passing over
# one distinct value in order (contiguous memory is far cheaper than gathering).
_PROBE_COST = 0.5
_SCAN_COST = 0.12


def _as_uint64(hashes: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(hashes)
    if arr.dtype == np.uint64:
        return arr.ravel()
    if arr.dtype == np.int64:
        return arr.ravel().view(np.uint64)
    # Python ints may be signed or unsigned 64-bit: mask into the unsigned range.
    return np.array([int(h) & _MASK64 for h in np.ravel(arr)], dtype=np.uint64)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of range(start, start + length) for each pair, vectorised."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - ends + lengths, lengths) + np.arange(int(ends[-1]) if len(ends) else 0)


@lru_cache(maxsize=None)
def _near_values(width: int, max_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Every `width`-bit mask with at most `max_bits` bits set, fewest bits first, and where the
    masks of each bit count end."""
    masks, ends = [0], [1]
    for k in range(1, max_bits + 1):
        masks += [sum(1 << b for b in bits) for bits in itertools.combinations(range(width), k)]
        ends.append(len(masks))
    return np.array(masks, dtype=np.int64), np.array(ends, dtype=np.int64)


@lru_cache(maxsize=None)
def _thresholds(blocks: int, radius: int) -> np.ndarray:
    """Every per-block threshold choice (-1 = skip the block, up to _MAX_THRESHOLD) that the
    generalised pigeonhole allows for `radius`, each as a row; empty when none does."""
    choices = [
        combo
        for combo in itertools.product(range(-1, _MAX_THRESHOLD + 1), repeat=blocks)
        if sum(t + 1 for t in combo) == radius + 1
    ]
    return np.array(choices, dtype=np.int64).reshape(-1, blocks)


def _entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return -(p * np.log2(p) + (1 - p) * np.log2(1 - p))


class _BitOrder:
    """A permutation of the 64 bits that puts each block's bits side by side, block 0 on top, so
    a block's value is a shift and a mask, and the sorted permuted values are sorted by block 0.
    Hamming distance is the same before and after. Applied with eight byte lookup tables."""

    def __init__(self, source_bits: list[int]):
        self.source_bits = source_bits
        self._tables = self._byte_tables([(src, 63 - dest) for dest, src in enumerate(source_bits)])
        self._inverse = None
        self._rows = [[int(v) for v in row] for row in self._tables]

    @staticmethod
    def _byte_tables(moves: list[tuple[int, int]]) -> np.ndarray:
        tables = np.zeros((8, 256), dtype=np.uint64)
        values = np.arange(256, dtype=np.uint64)
        for src, dest in moves:
            byte, bit = divmod(src, 8)
            tables[byte] |= ((values >> _U64(bit)) & _U64(1)) << _U64(dest)
        return tables

    @staticmethod
    def _apply(tables: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        out = tables[0][(hashes & _U64(255)).astype(np.intp)]
        for byte in range(1, 8):
            out |= tables[byte][((hashes >> _U64(8 * byte)) & _U64(255)).astype(np.intp)]
        return out

    def array(self, hashes: np.ndarray) -> np.ndarray:
        return self._apply(self._tables, hashes)

    def undo(self, permuted: np.ndarray) -> np.ndarray:
        if self._inverse is None:
            self._inverse = self._byte_tables([(63 - dest, src) for dest, src in enumerate(self.source_bits)])
        return self._apply(self._inverse, permuted)

    def value(self, hash_value: int) -> int:
        out = 0
        for byte, row in enumerate(self._rows):
            out |= row[(hash_value >> (8 * byte)) & 255]
        return out


def _choose_blocks(hashes: np.ndarray) -> tuple[list[int], list[int]]:
    """Block widths, and the source bits in block order: each bit, most varied first, joins the
    block that varies least so far (by summed bit entropy)."""
    step = max(1, len(hashes) // 100_000)
    sample = hashes[::step]
    distinct = len(np.unique(sample)) * step  # roughly: enough to pick the block count
    blocks = 3 if distinct >= _THREE_BLOCKS_FROM else 4
    widths = [64 // blocks + (1 if b < 64 % blocks else 0) for b in range(blocks)]
    ones = np.array([np.count_nonzero(sample & _U64(1 << bit)) for bit in range(64)]) / max(1, len(sample))
    entropy = _entropy(ones)
    members: list[list[int]] = [[] for _ in widths]
    totals = [0.0] * blocks
    for bit in np.argsort(-entropy, kind="stable").tolist():
        b = min((b for b in range(blocks) if len(members[b]) < widths[b]), key=lambda b: totals[b])
        members[b].append(bit)
        totals[b] += entropy[bit]
    return widths, [bit for block in members for bit in block]


def _rotate_left(values: np.ndarray, bits: int) -> np.ndarray:
    if bits % 64 == 0:
        return values.copy()
    return (values << _U64(bits)) | (values >> _U64(64 - bits))


class _Blocks:
    """The index over a fixed set of (id, hash) entries.

    `ids` lists the entries by permuted hash, so the entries of one distinct value are a run
    (`run_starts`); `values[b]` holds the distinct values sorted by block b's bits (for block 0
    that is `distinct` itself), so a query reads each bucket as one stretch of memory, and
    `bucket_starts[b]` says where each block value's bucket begins."""

    def __init__(self, ids: np.ndarray, hashes: np.ndarray):
        n = len(ids)
        index_type = np.int32 if n < 2**31 else np.int64
        self.widths, source_bits = _choose_blocks(hashes)
        self.order = _BitOrder(source_bits)
        self.shifts = [64 - sum(self.widths[: b + 1]) for b in range(len(self.widths))]
        permuted = self.order.array(hashes)
        by_value = np.argsort(permuted)
        self.ids = ids[by_value]
        permuted = permuted[by_value]
        del by_value
        first = np.flatnonzero(np.concatenate(([True], permuted[1:] != permuted[:-1])))
        self.distinct = permuted[first]
        del permuted
        self.run_starts = np.append(first, n).astype(index_type)
        del first
        self.bucket_starts: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        for b, width in enumerate(self.widths):
            # Rotating block b's bits to the top makes a plain sort a sort by block b.
            rotated = _rotate_left(self.distinct, 64 - self.shifts[b] - width)
            if b:
                rotated.sort()
            starts = np.zeros((1 << width) + 1, dtype=index_type)
            np.cumsum(np.bincount((rotated >> _U64(64 - width)).astype(np.intp), minlength=1 << width), out=starts[1:])
            self.bucket_starts.append(starts)
            self.values.append(_rotate_left(rotated, self.shifts[b] + width) if b else self.distinct)
            del rotated

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        arrays = [self.ids, self.run_starts, *self.bucket_starts, *self.values]
        return sum(a.nbytes for a in arrays)

    def hashes(self) -> np.ndarray:
        """The hash of every entry, in the order of `ids`."""
        return self.order.undo(np.repeat(self.distinct, np.diff(self.run_starts)))

    def search(self, hash_value: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions in `ids`, distances) of the entries within `radius`, in no particular order."""
        query = self.order.value(hash_value)
        query64 = _U64(query)
        choices = _thresholds(len(self.widths), radius)
        near_values = None
        if len(choices):
            probes = []
            # cost[b, t + 1]: what threshold t in block b costs, in candidates plus look-ups.
            cost = np.zeros((len(self.widths), _MAX_THRESHOLD + 2))
            for b, width in enumerate(self.widths):
                masks, ends = _near_values(width, _MAX_THRESHOLD)
                near = ((query >> self.shifts[b]) & ((1 << width) - 1)) ^ masks
                starts = self.bucket_starts[b]
                first = starts[near]
                lengths = starts[near + 1] - first
                probes.append((first, lengths, ends))
                cost[b, 1:] = np.cumsum(lengths)[ends - 1] + _PROBE_COST * ends
            totals = cost[np.arange(len(self.widths)), choices + 1].sum(axis=1)
            best = int(np.argmin(totals))
            if totals[best] < _SCAN_COST * len(self.distinct):
                near_values = self._gather(query64, radius, choices[best], probes)
        if near_values is None:
            near_values = self._scan(query64, radius)
        runs = np.searchsorted(self.distinct, near_values)
        counts = self.run_starts[runs + 1] - self.run_starts[runs]
        distances = np.repeat(np.bitwise_count(near_values ^ query64), counts)
        return _ranges(self.run_starts[runs], counts), distances

    def _gather(self, query: np.uint64, radius: int, thresholds: np.ndarray, probes) -> np.ndarray:
        """The distinct values within `radius`, from the buckets the thresholds pick."""
        found = []
        for b, t in enumerate(thresholds.tolist()):
            if t < 0:
                continue
            first, lengths, ends = probes[b]
            candidates = self.values[b][_ranges(first[: ends[t]], lengths[: ends[t]])]
            found.append(candidates[np.bitwise_count(candidates ^ query) <= radius])
        return np.unique(np.concatenate(found))

    def _scan(self, query: np.uint64, radius: int) -> np.ndarray:
        found = [np.zeros(0, dtype=np.uint64)]
        for start in range(0, len(self.distinct), _SCAN_CHUNK):
            chunk = self.distinct[start : start + _SCAN_CHUNK]
            found.append(chunk[np.bitwise_count(chunk ^ query) <= radius])
        return np.concatenate(found)


class HashIndex:
    """Append/remove/query store of (id, 64-bit hash); ids are ints (e.g. Image primary keys).
    Safe to share between threads.

    Indexed entries live in `_blocks` (with `_alive` masking removed ones); entries added since
    the last build are a tail scanned directly. Adding ids larger than any seen is cheap;
    replacing or removing an indexed id is a pass over the indexed ids."""

    def __init__(self, capacity: int = 1024):
        self._blocks: _Blocks | None = None
        self._alive = np.zeros(0, dtype=bool)
        self._dead = 0  # indexed entries removed or replaced since the build
        capacity = max(1, capacity)
        self._tail_ids = np.zeros(capacity, dtype=np.int64)
        self._tail_hashes = np.zeros(capacity, dtype=np.uint64)
        self._tail_alive = np.zeros(capacity, dtype=bool)
        self._tail = 0
        self._live = 0
        self._max_id: int | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._live

    def __contains__(self, item_id: int) -> bool:
        with self._lock:
            indexed, tail = self._find(np.array([int(item_id)], dtype=np.int64))
            return bool(len(indexed) or len(tail))

    @property
    def nbytes(self) -> int:
        """Memory held by the index's arrays (the bench reports it)."""
        own = [self._alive, self._tail_ids, self._tail_hashes, self._tail_alive]
        return sum(a.nbytes for a in own) + (self._blocks.nbytes if self._blocks is not None else 0)

    def _find(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the live entries with these ids: among the indexed ones, in the tail."""
        none = np.zeros(0, dtype=np.intp)
        if self._max_id is None or not len(ids) or int(ids.min()) > self._max_id:
            return none, none
        indexed = none
        if self._blocks is not None:
            indexed = np.flatnonzero(np.isin(self._blocks.ids, ids) & self._alive)
        tail = np.flatnonzero(np.isin(self._tail_ids[: self._tail], ids) & self._tail_alive[: self._tail])
        return indexed, tail

    def _drop(self, indexed: np.ndarray, tail: np.ndarray) -> None:
        self._alive[indexed] = False
        self._tail_alive[tail] = False
        self._dead += len(indexed)
        self._live -= len(indexed) + len(tail)

    def add(self, item_id: int, hash_value: int) -> None:
        self.add_many([item_id], [hash_value])

    def add_many(self, ids: Iterable[int] | np.ndarray, hashes: Iterable[int] | np.ndarray) -> None:
        """Add entries; an id already present gets its hash replaced (the last one given wins)."""
        ids_arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64).ravel()
        hashes_arr = _as_uint64(hashes if isinstance(hashes, np.ndarray) else list(hashes))
        if len(ids_arr) != len(hashes_arr):
            raise ValueError("ids and hashes must have the same length")
        if not len(ids_arr):
            return
        if len(ids_arr) > 1 and not bool(np.all(ids_arr[1:] > ids_arr[:-1])):
            _, last = np.unique(ids_arr[::-1], return_index=True)
            keep = np.sort(len(ids_arr) - 1 - last)
            ids_arr, hashes_arr = ids_arr[keep], hashes_arr[keep]
        with self._lock:
            self._drop(*self._find(ids_arr))
            start, end = self._tail, self._tail + len(ids_arr)
            if end > len(self._tail_ids):
                capacity = max(end, 2 * len(self._tail_ids))
                for name in ("_tail_ids", "_tail_hashes", "_tail_alive"):
                    grown = np.zeros(capacity, dtype=getattr(self, name).dtype)
                    grown[:start] = getattr(self, name)[:start]
                    setattr(self, name, grown)
            self._tail_ids[start:end] = ids_arr
            self._tail_hashes[start:end] = hashes_arr
            self._tail_alive[start:end] = True
            self._tail, self._live = end, self._live + len(ids_arr)
            top = int(ids_arr.max())
            self._max_id = top if self._max_id is None else max(self._max_id, top)

    def remove(self, item_id: int) -> bool:
        """Remove an id; returns whether it was present."""
        with self._lock:
            indexed, tail = self._find(np.array([int(item_id)], dtype=np.int64))
            self._drop(indexed, tail)
            return bool(len(indexed) or len(tail))

    def _build(self) -> None:
        """Index every live entry; the tail empties."""
        ids, hashes = [self._tail_ids[: self._tail]], [self._tail_hashes[: self._tail]]
        alive = [self._tail_alive[: self._tail]]
        if self._blocks is not None:
            ids.insert(0, self._blocks.ids)
            hashes.insert(0, self._blocks.hashes())
            alive.insert(0, self._alive)
            self._blocks = None  # let the old index go before the new one is made
        keep = np.concatenate(alive)
        ids_all, hashes_all = np.concatenate(ids)[keep], np.concatenate(hashes)[keep]
        del ids, hashes, alive, keep
        self._tail = 0
        self._tail_ids = np.zeros(1024, dtype=np.int64)
        self._tail_hashes = np.zeros(1024, dtype=np.uint64)
        self._tail_alive = np.zeros(1024, dtype=bool)
        self._blocks = _Blocks(ids_all, hashes_all)
        self._alive = np.ones(len(ids_all), dtype=bool)
        self._dead = 0

    def _needs_build(self) -> bool:
        if self._blocks is None:
            return self._live >= _BUILD_FROM
        indexed = len(self._blocks)
        return self._tail > max(_TAIL_MIN, indexed // _TAIL_SHARE) or self._dead > indexed // _DEAD_SHARE

    def query(self, hash_value: int, radius: int, *, exclude: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Ids and distances of stored hashes within ``radius`` bits, nearest first."""
        query = int(hash_value) & _MASK64
        ids, distances = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.uint8)]
        with self._lock:
            if self._needs_build():
                self._build()
            if self._blocks is not None:
                positions, found = self._blocks.search(query, radius)
                alive = self._alive[positions]
                ids.append(self._blocks.ids[positions[alive]])
                distances.append(found[alive])
            for start in range(0, self._tail, _SCAN_CHUNK):
                stop = min(self._tail, start + _SCAN_CHUNK)
                near = np.bitwise_count(self._tail_hashes[start:stop] ^ _U64(query))
                hits = np.flatnonzero((near <= radius) & self._tail_alive[start:stop])
                ids.append(self._tail_ids[start + hits])
                distances.append(near[hits])
        ids_arr, distance = np.concatenate(ids), np.concatenate(distances)
        if exclude is not None:
            keep = ids_arr != exclude
            ids_arr, distance = ids_arr[keep], distance[keep]
        order = np.lexsort((ids_arr, distance))
        return ids_arr[order], distance[order]

    def query_many(self, hash_values: Iterable[int], radius: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """query() of each hash (ids and distances, nearest first), for a batch: the unindexed
        tail is compared with every hash of the batch at once, not scanned once per hash."""
        queries = _as_uint64(list(hash_values))
        found: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(len(queries))]
        with self._lock:
            if self._needs_build():
                self._build()
            if self._blocks is not None:
                for n, query in enumerate(queries.tolist()):
                    positions, distance = self._blocks.search(query, radius)
                    alive = self._alive[positions]
                    found[n].append((self._blocks.ids[positions[alive]], distance[alive]))
            step = max(1, _BATCH_CELLS // max(1, len(queries)))  # bounds the distance matrix
            for start in range(0, self._tail, step):
                stop = min(self._tail, start + step)
                near = np.bitwise_count(self._tail_hashes[None, start:stop] ^ queries[:, None])
                rows, cols = np.nonzero((near <= radius) & self._tail_alive[None, start:stop])
                bounds = np.searchsorted(rows, np.arange(len(queries) + 1))  # rows come sorted
                for n in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
                    hit = cols[bounds[n] : bounds[n + 1]]
                    found[n].append((self._tail_ids[start + hit], near[n, hit]))
        results = []
        for parts in found:
            if not parts:
                results.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)))
                continue
            ids_arr = np.concatenate([ids for ids, _ in parts])
            distance = np.concatenate([d for _, d in parts]).astype(np.uint8, copy=False)
            order = np.lexsort((ids_arr, distance))
            results.append((ids_arr[order], distance[order]))
        return results


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


Loader = Callable[[Hashable, int], tuple]  # (ids, hashes) or (ids, hashes, fingerprint after them)
Fingerprint = Callable[[Hashable, int], Hashable]


class IndexRegistry:
    """Lazily built indexes, one per key (e.g. a benchmark's id), kept per process.

    ``loader(key, after_id)`` returns (ids, hashes) of rows with id > after_id, so each use
    first picks up rows other processes added since. ``fingerprint(key, last_id)`` describes
    the rows already loaded (e.g. their count and newest timestamp): when it changes, rows were
    deleted or replaced and the index is rebuilt from scratch. A loader may return a third value,
    what ``fingerprint`` would say of the rows once the ones it returns are loaded (read in the
    same query, which saves asking again after every load).

    With ``columns`` > 1, each row has that many hashes (say a pHash and a dHash): the loader's
    hashes are a tuple of that many columns, and ``get`` returns a tuple of indexes, one per
    column, loaded and fingerprinted together (one query each per use, not one per column).
    """

    def __init__(self, loader: Loader, fingerprint: Fingerprint | None = None, *, columns: int = 1):
        self._loader = loader
        self._fingerprint = fingerprint
        self._columns = columns
        self._indexes: dict[Hashable, tuple[tuple[HashIndex, ...], int, Hashable]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> HashIndex | tuple[HashIndex, ...]:
        indexes = self._get(key)
        return indexes[0] if self._columns == 1 else indexes

    def _get(self, key: Hashable) -> tuple[HashIndex, ...]:
        with self._lock:
            indexes, last_id, seen = self._indexes.get(key, (None, 0, None))
            kept = indexes is not None
            if kept and self._fingerprint is not None:
                kept = self._fingerprint(key, last_id) == seen
            if not kept:
                indexes, last_id = tuple(HashIndex() for _ in range(self._columns)), 0
            ids, hashes, *newest = self._loader(key, last_id)
            ids_arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64)
            if len(ids_arr):
                for index, column in zip(indexes, (hashes,) if self._columns == 1 else hashes, strict=True):
                    index.add_many(ids_arr, column if isinstance(column, np.ndarray) else list(column))
                last_id = max(last_id, int(ids_arr.max()))
            elif kept:  # nothing new over the rows just fingerprinted: the fingerprint stands (one query less)
                return indexes
            if newest and len(ids_arr):  # the loader read the newest row's fingerprint with it
                seen = newest[0]
            else:
                seen = self._fingerprint(key, last_id) if self._fingerprint is not None else None
            self._indexes[key] = (indexes, last_id, seen)
            return indexes

    def forget(self, key: Hashable | None = None) -> None:
        with self._lock:
            if key is None:
                self._indexes.clear()
            else:
                self._indexes.pop(key, None)
