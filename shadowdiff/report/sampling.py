"""Plot data in memory that does not grow with a run: a seeded sample, and exact counts.

A month of pairs is millions of values per plot; a plot draws at most a few hundred
steps or bars. ``Sample`` keeps every value up to its size, then a uniform sample of
that size; ``Counts`` keeps how many times each whole number was seen (a histogram's
input), merged into wider blocks once there are too many distinct ones.

The sample is bottom-k by a hash of each pair's id (its ``key``): a pair is in it when
its hash is among the ``size`` smallest, whatever order the database returned the rows
in (PostgreSQL's synchronized scans start a scan mid-table). So one run draws the same
plots every time, and each sample is of pairs, not of rows read.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

SAMPLE_SIZE = 50_000   # values per plotted series; 2 standard errors of a step's share at most ±0.45 %
SEED = 0x5EED_0D1F
_MASK = (1 << 64) - 1
MAX_DISTINCT = 1 << 16   # whole numbers counted one by one before they are merged into blocks


def mix(key: int, seed: int = SEED) -> int:
    """A 64-bit hash of ``key`` (splitmix64's finalizer): distinct keys, distinct hashes."""
    z = (key + seed + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class Sample:
    """Every value added, up to ``size`` of them; beyond, the ``size`` values whose keys'
    hashes are smallest: a uniform sample without replacement, decided by the keys alone.

    Holds at most twice ``size`` values between compactions (16 bytes each)."""

    def __init__(self, size: int = SAMPLE_SIZE) -> None:
        if size < 1:
            raise ValueError("a sample holds at least one value")
        self.size = size
        self.seen = 0
        self._values: array[float] = array("d")
        self._hashes: array[int] = array("Q")
        self._below = _MASK + 1   # a value is kept while its hash is below this

    def add(self, h: int, value: float) -> None:
        """Add ``value`` of the pair whose key hashes (``mix``) to ``h``."""
        self.seen += 1
        if h >= self._below:
            return
        self._values.append(value)
        self._hashes.append(h)
        if len(self._values) >= 2 * self.size:
            self._compact()

    def _compact(self) -> None:
        """Keep the ``size`` smallest hashes, and from now on only hashes below the largest of them."""
        order = sorted(range(len(self._hashes)), key=self._hashes.__getitem__)[:self.size]
        self._values = array("d", (self._values[i] for i in order))
        self._hashes = array("Q", (self._hashes[i] for i in order))
        self._below = self._hashes[-1] + 1   # the largest kept hash stays in

    @property
    def values(self) -> array[float]:
        """The sample: every value added in their order when no more than ``size`` were."""
        if len(self._values) > self.size:
            self._compact()
        return self._values

    @property
    def sampled(self) -> bool:
        """Whether the values are a sample (more were added than it holds)."""
        return self.seen > self.size

    def __bool__(self) -> bool:
        return self.seen > 0


class Counts:
    """How many times each whole number was added (exactly: their histogram, median, ends).

    At most ``MAX_DISTINCT`` distinct numbers are counted one by one; past that, they are
    merged into blocks of a thousand (then of a million...) numbers. That many distinct
    numbers span at least 65 blocks, so a histogram of about 30 bins of a 1-2-5 width
    (``shadowdiff.report.svg.histogram_counts``) has bins over two, so at least five,
    blocks wide, each a multiple of the block: its bars stay exact; only the median is
    then known to a block."""

    def __init__(self) -> None:
        self.seen = 0
        self.block = 1
        self.low: float | None = None
        self.high: float | None = None
        self._counts: dict[float, int] = {}

    def add(self, value: float) -> None:
        self.seen += 1
        self.low = value if self.low is None or value < self.low else self.low
        self.high = value if self.high is None or value > self.high else self.high
        key = value if self.block == 1 else float(value // self.block * self.block)
        self._counts[key] = self._counts.get(key, 0) + 1
        if len(self._counts) > MAX_DISTINCT:
            self.block *= 1000
            merged: dict[float, int] = {}
            for k, n in self._counts.items():
                block = float(k // self.block * self.block)
                merged[block] = merged.get(block, 0) + n
            self._counts = merged

    @property
    def counts(self) -> dict[float, int]:
        """Each number (or block's start) and its count."""
        return self._counts

    @property
    def exact(self) -> bool:
        return self.block == 1

    def median(self) -> float | None:
        """The median as ``statistics.median`` gives it of every value added (to a block's
        middle once merged)."""
        if not self.seen:
            return None
        half = self.block / 2 if self.block > 1 else 0.0
        wanted = [(self.seen - 1) // 2, self.seen // 2]
        found: list[float] = []
        at = 0
        for key, n in _ascending(self._counts):
            while wanted and wanted[0] < at + n:
                found.append(key + half)
                wanted.pop(0)
            at += n
            if not wanted:
                break
        return found[0] if self.seen % 2 else (found[0] + found[1]) / 2

    def __bool__(self) -> bool:
        return self.seen > 0


def _ascending(counts: dict[float, int]) -> Iterator[tuple[float, int]]:
    for key in sorted(counts):
        yield key, counts[key]
