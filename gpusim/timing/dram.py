"""The DRAM side: channels interleaved by a hash of the address block, banks with one open row each, and the
write-back buffer each channel drains in batches.

A request moves whole 32 B sectors over its channel's bus (``dram_sector_cycles`` each, from the sustained
bandwidth); a bank with another row open first pays precharge + activate (``row_miss_cycles``).  With
``dram.write_drain`` write-backs keep the rows they open apart from the reads', and with ``dram.write_batch_bytes``
they wait in the channel's buffer until a batch is full, which then takes the bus for the whole batch plus one
read/write turnaround.  All times are SM clock cycles.
"""
from __future__ import annotations

from ..config import GPUConfig
from ._lines import POPCOUNT, MemoryStats, hash_line


class DRAMChannels:
    """The DRAM channels of one GPU with their reservation clocks (a base of ``MemorySystem``)."""

    stats: MemoryStats
    observers: list

    def _init_dram(self, gpu: GPUConfig) -> None:
        l2, dram = gpu.l2, gpu.dram
        self.n_channels = dram.channels
        self.n_banks = dram.banks_per_channel
        self.chan_free = [0.0] * dram.channels
        self.bank_free = [0.0] * (dram.channels * dram.banks_per_channel)
        self.open_row = [-1] * (dram.channels * dram.banks_per_channel)
        # write drain (dram.write_drain): the row each bank's buffered writes last opened
        self.write_drain = dram.write_drain
        self.open_row_w = [-1] * (dram.channels * dram.banks_per_channel)
        # write batches (dram.write_batch_bytes): the batch size and each channel's buffered write-back bytes
        self.write_batch = dram.write_batch_bytes if dram.write_drain else 0
        self.wbuf_bytes = [0] * dram.channels
        self.write_turnaround = dram.write_turnaround_ns * gpu.chip.sm_clock_mhz / 1000.0
        bytes_per_cycle = gpu.dram_bytes_per_cycle() / dram.channels
        self.dram_sector_cycles = l2.sector_bytes / bytes_per_cycle
        self.row_miss_cycles = dram.row_miss_ns * gpu.chip.sm_clock_mhz / 1000.0
        self.dram_latency = dram.latency_cycles
        self.lines_per_block = max(1, dram.interleave_bytes // l2.line_bytes)
        self.blocks_per_row = max(1, dram.row_bytes // dram.interleave_bytes)

    def _dram(self, t: float, line: int, mask: int, write: bool) -> float:
        """Move the sectors of ``mask`` of ``line`` over its channel; return the queueing+row delay."""
        block = line // self.lines_per_block
        ch = hash_line(block) % self.n_channels
        local = block // self.n_channels
        bank = ch * self.n_banks + (local // self.blocks_per_row) % self.n_banks
        row = local // (self.blocks_per_row * self.n_banks)
        st = self.stats
        ready = self.bank_free[bank]
        if ready < t:
            ready = t
        rows = self.open_row_w if write and self.write_drain else self.open_row
        if rows[bank] != row:
            rows[bank] = row
            ready += self.row_miss_cycles
            st.dram_row_misses += 1
        if write and self.write_batch:                 # (a batch's row activations overlap across the banks)
            return self._buffer_write(t, ch, mask)
        cf = self.chan_free[ch]
        start = ready if ready > cf else cf
        nsec = POPCOUNT[mask]
        end = start + nsec * self.dram_sector_cycles
        self.chan_free[ch] = end
        self.bank_free[bank] = end
        nbytes = nsec * 32
        st.dram_bursts += 1
        if write:
            st.dram_wr_bytes += nbytes
        else:
            st.dram_rd_bytes += nbytes
        if self.observers:
            for f in self.observers:
                f(end, "dram_write" if write else "dram_read", nbytes)
        return start - t

    def _buffer_write(self, t: float, ch: int, mask: int) -> float:
        """A write-back into channel ``ch``'s write buffer (``dram.write_batch_bytes``): it costs its sectors' bus
        time when the batch drains (the batch's row activations overlap across the banks); a full buffer drains at
        once, taking the channel (and so delaying the reads behind it) for the whole batch and one bus turnaround."""
        nsec = POPCOUNT[mask]
        nbytes = nsec * 32
        st = self.stats
        st.dram_bursts += 1
        st.dram_wr_bytes += nbytes
        buf = self.wbuf_bytes[ch] + nbytes
        if buf < self.write_batch:
            self.wbuf_bytes[ch] = buf
            return 0.0
        cf = self.chan_free[ch]
        end = (t if t > cf else cf) + (buf // 32) * self.dram_sector_cycles + self.write_turnaround
        self.chan_free[ch] = end
        self.wbuf_bytes[ch] = 0
        for f in self.observers:
            f(end, "dram_write", buf)
        return 0.0
