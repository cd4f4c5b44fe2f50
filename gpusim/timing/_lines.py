"""What the memory rooms (``dram``, ``l2``, ``memory``) share about a 128 B line: its sectors' popcounts, the address
hashes that place it on an L2 set or a DRAM channel, the LRU eviction of a set kept as a dict, and the counters
the metrics layer reads."""
from __future__ import annotations

POPCOUNT = [bin(i).count("1") for i in range(256)]
MIX = 0x9E3779B97F4A7C15
MIX2 = 0xD6E8FEB86659FD93
MASK64 = (1 << 64) - 1
COMPACT_EVERY = 512


def evict_first(sets: list[dict], evictions: list[int], i: int) -> tuple[int, int]:
    """Take the least recently used line (the dict's first) out of set ``i``; return it and its bits.  Every
    ``COMPACT_EVERY`` evictions the set's dict is rebuilt (``sets[i]`` is then a new dict)."""
    d = sets[i]
    victim = next(iter(d))
    v = d.pop(victim)
    n = evictions[i] + 1
    if n >= COMPACT_EVERY:
        n = 0
        sets[i] = dict(d)
    evictions[i] = n
    return victim, v


def set_hash(x: int) -> int:
    """A second scramble of a line number, for its set within its slice: its address bits folded (xor-shifts) before
    the multiply, so that consecutive lines land on the sets as a random placement would, unevenly."""
    x ^= (x >> 7) ^ (x >> 17)
    return ((x * MIX2) & MASK64) >> 40


def hash_line(x: int) -> int:
    """A cheap, deterministic scramble of an address block number (Fibonacci hashing)."""
    return ((x * MIX) & MASK64) >> 29


class MemoryStats:
    """Counters the metrics layer reads; names say the unit (sectors are 32 B)."""

    __slots__ = ("l1_ld_sectors", "l1_ld_hit_sectors", "l1_ld_wavefronts", "l1_st_sectors",
                 "l2_rd_sectors", "l2_rd_hit_sectors", "l2_wr_sectors", "l2_atom_sectors",
                 "dram_rd_bytes", "dram_wr_bytes", "dram_row_misses", "dram_bursts",
                 "shared_wavefronts", "shared_ideal_wavefronts")

    def __init__(self) -> None:
        for k in self.__slots__:
            setattr(self, k, 0)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}
