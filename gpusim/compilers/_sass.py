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
_LABEL_RX = re.compile(r"^\s*(\.L\w+):")
_TARGET_RX = re.compile(r"`\((\.L\w+)\)")
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
    "lines": {line: {opcode: n}}, "loops": [...], "local_outside": {...}} of ``nvdisasm -g`` text.  Lines are the
    kernel file's (``source_file``, when given: instructions whose innermost location is another file, an inlined
    library, count under its call site in the kernel file when nvdisasm names one, else under line 0).
    ``loops`` and ``local_outside``: see ``loops``."""
    hist: dict[str, int] = {}
    per_pipe = dict.fromkeys(PIPES, 0)
    widths: dict[str, dict[str, int]] = {}
    lines: dict[str, dict[str, int]] = {}
    cur = 0
    total = 0
    insts: list[tuple[int, str, int, str, str]] = []     # (address, opcode, line, branch target label, operands)
    labels: dict[str, int] = {}
    pending: list[str] = []
    for raw in text.splitlines():
        lm = _LABEL_RX.match(raw)
        if lm:
            pending.append(lm.group(1))
            continue
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
        addr = int(m.group(1), 16)
        for lab in pending:
            labels[lab] = addr
        pending.clear()
        tm = _TARGET_RX.search(raw) if op.startswith("BRA") else None
        insts.append((addr, op, cur, tm.group(1) if tm else "", raw[m.end():].split(";", 1)[0]))
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
            "mem_widths": widths, "lines": lines, **loops(insts, labels)}


def _local_counts(ops) -> dict:
    out: dict[str, dict[str, int]] = {}
    for op in ops:
        base = op.split(".", 1)[0]
        if base in ("LDL", "STL"):
            d = out.setdefault(base, {})
            w = str(width_bits(op))
            d[w] = d.get(w, 0) + 1
    return out


_REG_RX = re.compile(r"\bR(\d+)\b")
_STORES = {"STL", "STG", "STS", "ST", "RED", "REDG", "ATOM", "ATOMG", "ATOMS"}


def _reload_waits(body) -> int:
    """Points where a warp waits for its local-memory reloads: instructions that read a register an ``LDL`` not yet
    waited for writes (the scoreboard holds the warp there until the load is back); one wait covers every reload
    issued before it.  ``body``: (opcode, operands) in address order."""
    pending: set[int] = set()
    waits = 0
    for op, args in body:
        regs = [int(r) for r in _REG_RX.findall(args)]
        base = op.split(".", 1)[0]
        reads = regs if base in _STORES else regs[1:]          # a store's operands are all read
        if pending and pending.intersection(reads):
            waits += 1
            pending.clear()
        if base == "LDL" and regs:
            w = max(1, (width_bits(op) or 32) // 32)
            pending.update(range(regs[0], regs[0] + w))
    return waits + (1 if pending else 0)


def loops(insts, labels: dict) -> dict:
    """The loops of the SASS: each backward branch (``BRA`` to a label before it) closes a loop over the addresses
    from its target to itself.  Per loop, innermost first by address: ``line`` (the source line of the back edge:
    the loop statement's), ``first`` / ``last`` (addresses), ``parent`` (index of the loop around it, -1),
    ``instructions``, ``local`` ({"LDL"|"STL": {bits: n}}: local-memory loads and stores, spills) and
    ``reload_waits`` (``_reload_waits``) of its own body (inner loops excluded), i.e. once per iteration.
    ``local_outside`` / ``reload_waits_outside``: those in no loop."""
    regions = []
    for addr, op, line, target, _ in insts:
        t = labels.get(target) if target else None
        if t is not None and t < addr:        # (a branch to itself: the trap after EXIT)
            regions.append((t, addr, line))
    regions.sort(key=lambda r: (r[0], -r[1]))

    def innermost(lo: int, hi: int, skip: int = -1) -> int:
        """The smallest region (other than ``skip``) around the addresses lo .. hi, -1 when none."""
        best = -1
        for j, (c, d, _) in enumerate(regions):
            if j != skip and c <= lo and hi <= d and (best < 0 or d - c < regions[best][1] - regions[best][0]):
                best = j
        return best

    parent = [innermost(a, b, i) for i, (a, b, _) in enumerate(regions)]
    own: list[list[tuple[str, str]]] = [[] for _ in regions]
    outside: list[tuple[str, str]] = []
    for addr, op, _, _, args in insts:
        j = innermost(addr, addr)
        (own[j] if j >= 0 else outside).append((op, args))
    out = [{"line": ln, "first": a, "last": b, "parent": parent[i], "instructions": len(own[i]),
            "local": _local_counts(o for o, _ in own[i]), "reload_waits": _reload_waits(own[i])}
           for i, (a, b, ln) in enumerate(regions)]
    return {"loops": out, "local_outside": _local_counts(o for o, _ in outside),
            "reload_waits_outside": _reload_waits(outside)}


def _same_file(a: str, b: str) -> bool:
    import os
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.basename(a) == os.path.basename(b)
    except (OSError, ValueError):
        return False
