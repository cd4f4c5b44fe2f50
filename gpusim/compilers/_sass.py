"""Static SASS of a compiled kernel, read from ``nvdisasm -g`` text: the instruction mix per source line (opcodes
with modifiers), per pipe, and the widths of loads and stores.  Static counts (instructions in the binary), not
executed ones.

The pipe of an opcode follows gpusim's pipes (``gpusim.trace.Pipe`` names: fp32, fp16, fp64, int, sfu, lsu,
branch, uniform, tensor) and the conventions of ``gpusim/cuda/costs.py`` (the IMAD family on the FMA pipe,
conversions on the SFU/XU pipe, constant-bank loads uniform); ``other`` holds NOP, S2R, barriers and the like.
It is by opcode family and approximate where Nsight Compute's pipe split differs by modifier."""
from __future__ import annotations

import re

_INST_RX = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_LINE_RX = re.compile(r'//## File "([^"]*)", line (\d+)')
_SITE_RX = re.compile(r'"([^"]*)", line (\d+)')        # the location, then the call sites it was inlined at

PIPES = ("fp32", "fp16", "fp64", "int", "sfu", "lsu", "branch", "uniform", "tensor", "other")

_FAMILY = {
    "fp32": {"FFMA", "FADD", "FMUL", "FSWZADD", "IMAD", "IMUL", "F2FP"},
    "fp16": {"HADD2", "HFMA2", "HMUL2", "HMNMX2", "HSET2", "HSETP2"},
    "fp64": {"DADD", "DFMA", "DMUL", "DSETP", "DMNMX"},
    "sfu": {"MUFU", "I2F", "F2I", "F2F", "FRND", "I2I"},
    "tensor": {"HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "DMMA", "BMMA", "BGMMA"},
    "lsu": {"LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "ATOM", "ATOMG", "ATOMS", "RED", "REDG", "LDSM",
            "STSM", "LDGSTS", "LDGDEPBAR", "SHFL", "MEMBAR", "CCTL", "SYNCS", "UTMALDG", "UTMASTG", "UTMAPF",
            "UBLKCP", "UTMACCTL", "FENCE", "MATCH", "REDUX"},
    "branch": {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "WARPSYNC", "BREAK", "YIELD",
               "KILL", "NANOSLEEP", "BPT", "ELECT"},
    "uniform": {"LDC", "R2UR", "S2UR", "VOTEU", "PLOP3"},
    "other": {"NOP", "S2R", "CS2R", "BAR", "DEPBAR", "WARPGROUP", "ERRBAR", "ACQBULK", "ARRIVES", "SETMAXREG",
              "PMTRIG", "B2R", "R2B"},
}
_PIPE_OF = {op: pipe for pipe, ops in _FAMILY.items() for op in ops}

#: memory opcodes whose access width the modifiers give (bits; 32 when none does)
_MEM = {"LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "ATOM", "ATOMG", "ATOMS", "RED", "REDG"}
_WIDTH_RX = re.compile(r"\.(U8|S8|U16|S16|32|64|128)\b")


def pipe_of(opcode: str) -> str:
    base = opcode.split(".", 1)[0]
    mods = opcode.split(".")[1:]
    if base in ("F2F", "I2F", "F2I", "FRND") and "F64" in mods:
        return "fp64"
    p = _PIPE_OF.get(base)
    if p is not None:
        return p
    if base.startswith("U"):                   # the uniform datapath: ULDC, UMOV, UIADD3, ULOP3, USHF ...
        return "uniform"
    return "int"                                # the ALU: IADD3, LOP3, SHF, ISETP, SEL, LEA, MOV, PRMT, FSETP ...


def width_bits(opcode: str) -> int | None:
    """Bits one thread moves for a load/store/atomic opcode (None for others)."""
    base = opcode.split(".", 1)[0]
    if base not in _MEM:
        return None
    m = _WIDTH_RX.findall(opcode)
    if not m:
        return 32
    w = m[-1]
    return {"U8": 8, "S8": 8, "U16": 16, "S16": 16}.get(w, int(w) if w.isdigit() else 32)


def summarize(text: str, source_file: str = "") -> dict:
    """{"total", "total_no_nop", "histogram": {opcode: n}, "per_pipe": {pipe: n}, "mem_widths": {base: {bits: n}},
    "lines": {line: {opcode: n}}} of ``nvdisasm -g`` text.  Lines are the kernel file's (``source_file``, when
    given: instructions whose innermost location is another file, an inlined library, count under its call site
    in the kernel file when nvdisasm names one, else under line 0)."""
    hist: dict[str, int] = {}
    per_pipe = dict.fromkeys(PIPES, 0)
    widths: dict[str, dict[str, int]] = {}
    lines: dict[str, dict[str, int]] = {}
    cur = 0
    total = 0
    for raw in text.splitlines():
        m = _LINE_RX.search(raw)
        if m and "/*" not in raw:
            cur = 0
            for f, ln in _SITE_RX.findall(raw):           # innermost first, then the call sites it was inlined at
                if not source_file or _same_file(f, source_file):
                    cur = int(ln)
                    break
            continue
        m = _INST_RX.search(raw)
        if not m:
            continue
        op = m.group(2)
        total += 1
        hist[op] = hist.get(op, 0) + 1
        per_pipe[pipe_of(op)] += 1
        w = width_bits(op)
        if w is not None:
            b = op.split(".", 1)[0]
            widths.setdefault(b, {})
            widths[b][str(w)] = widths[b].get(str(w), 0) + 1
        ld = lines.setdefault(str(cur), {})
        ld[op] = ld.get(op, 0) + 1
    return {"total": total, "total_no_nop": total - sum(n for o, n in hist.items() if o.startswith("NOP")),
            "histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
            "per_pipe": {k: v for k, v in per_pipe.items() if v},
            "mem_widths": widths, "lines": lines}


def _same_file(a: str, b: str) -> bool:
    import os
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.basename(a) == os.path.basename(b)
    except (OSError, ValueError):
        return False
