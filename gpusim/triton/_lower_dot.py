"""``tl.dot``: where wgmma is lowered (Triton's ``AccelerateMatmul`` pass and the MMA lowering after it).

Hopper ``wgmma.mma_async`` (MMAv3) when num_warps % 4 == 0, M % 64 == 0 and N % 8 == 0; else ``mma.sync``
m16n8k16 (MMAv2) with ``ldmatrix`` from shared memory; fp32 with ``input_precision="ieee"`` and fp64 use FMA.
warpsPerCTA follows ``warpsPerTileV3/V2`` (all warps along M when the result feeds another dot).  Operands
held in registers are staged to shared memory (``local_alloc`` into the NVMMA swizzled layout: one st.shared
per register vector, a fence, a barrier); loop-invariant ones once.  Units: instructions per warp, flops.
"""
from __future__ import annotations

import weakref

from ..trace import OpKind, Pipe
from . import _core as C
from . import costs as K
from ._layouts import WARP, default_layout, mma_layout


class DotLowering:
    """``Recorder``'s lowering of ``tl.dot``."""

    def dot(self, out, a, b, acc, precision):
        file, line, site = C.user_site()
        f = self.facts.get(site)
        for x in (a, b):
            if x.dsrc:
                for s in x.dsrc:
                    self.facts.get(s)["chained"] = True
            if x.lsrc is not None:
                self.facts.get(x.lsrc)["dot_operand"] = True
        if self.probe:
            self._mark_feeds_dot((a, b))
            self._note_use((a, b, acc), site)
        out.dsrc = frozenset([site]) | (a.dsrc or frozenset()) | (b.dsrc or frozenset())
        M, N, K_ = a.shape[-2], b.shape[-1], a.shape[-1]
        batch = a.shape[0] if len(a.shape) == 3 else 1
        dt = a.dtype.name
        if dt == "fp32":
            dt = "tf32" if precision in ("tf32", "tf32x3") else "fp32"
        mult = 3 if (a.dtype.name == "fp32" and precision == "tf32x3") else 1
        chained = bool(f.get("chained"))
        W = self.W
        eb = a.dtype.itemsize
        deps_acc = [acc.src] if acc is not None else []
        acc_regs = max(1, batch * M * N // (WARP * W))
        if acc is not None and acc.src is None:
            # a constant accumulator (tl.zeros) is materialized in registers first (twice around a software
            # pipeline's prologue)
            lp = self.in_runtime_loop()
            twice = lp is not None and self.facts.sites.get(lp.key, {}).get("pipelined")
            acc.src = self._cost(K.MATERIALIZE, acc_regs * (2 if twice else 1), (), line)
            deps_acc = [acc.src]
        key = f"{file.rsplit('/', 1)[-1]}:{line}"
        if dt in ("fp32", "fp64") or dt not in ("fp16", "bf16", "tf32", "int8", "uint8", "fp8e5", "fp8e4nv"):
            # FMA dot: operands staged in shared memory, each thread reads a row of A and a column of B
            wpc = (W, 1)
            ops = self._stage_group([a, b], line)
            n_fma = max(1, batch * M * N * K_ // (WARP * W))
            pipe = Pipe.FP64 if dt == "fp64" else Pipe.FP32
            ld = self._shared(OpKind.LOAD, max(1, (batch * (M * K_ + K_ * N)) // (WARP * W) // 4), 16, ops,
                              "LDS.128", line)
            op = self._alu(pipe, n_fma, [ld] + deps_acc, "DFMA" if dt == "fp64" else "FFMA", line)
            out.src = op
            out.lay = mma_layout(out.shape, 0, wpc, (1, 1, 1))
            self.stats.dots[key] = {"unit": "FMA", "warpsPerCTA": list(wpc)}
            self._region().acc[site] = acc_regs * (2 if dt == "fp64" else 1)
            self.stats.flops += 2.0 * batch * M * N * K_ * self._active_warps() // W
            self._anchor_acc(acc, out)
            return
        bits = a.dtype.primitive_bitwidth if dt != "tf32" else 32
        v3 = (self.hopper and W % 4 == 0 and len(a.shape) == 2 and M % 64 == 0 and N % 8 == 0)
        if v3:
            k = 256 // bits
            m_warps = max(M // 16, 1)
            n_warps = max(W // m_warps, 1)
            max_n = max(N // n_warps, 8)
            n = 8
            for cand in range(256, 7, -8):
                if N % cand == 0 and cand <= max_n and (dt not in ("int8", "uint8") or cand <= 224):
                    n = cand
                    break
            if chained:
                wpc = (W, 1)
            else:
                wpc = [4, 1]
                while wpc[0] * wpc[1] < W:
                    if M > 16 * wpc[0]:
                        wpc[0] *= 2
                    else:
                        wpc[1] *= 2
                wpc = tuple(wpc)
            wg_m = max(1, wpc[0] // 4)
            rep_m = max(1, M // (64 * wg_m))
            rep_n = max(1, N // (n * wpc[1]))
            rep_k = max(1, K_ // k)
            n_inst = rep_m * rep_n * rep_k * mult
            flops = n_inst * 2 * 64 * n * k // 4
            deps = deps_acc[:]
            # A: registers when computed in the kernel (e.g. FlashAttention's P), else shared memory
            a_in_regs = a.lsrc is None
            smem = [b] if a_in_regs else [a, b]
            if a_in_regs:
                deps.append(a.src)
                self._region().frag[site] = max(1, M * K_ * eb // 4 // (WARP * W))
            deps += self._smem_operands(smem, line)
            desc = self._cost(K.WGMMA, 1, (), line)
            self._cost(K.WGMMA_PER_INST, n_inst, [desc], line)
            label = (f"QGMMA.64x{n}x{k}.F32.{_FP8_SASS[dt]}" if dt in _FP8_SASS else
                     f"HGMMA.64x{n}x{k}.F32" + ("" if dt == "fp16" else f".{dt.upper()}"))
            op = self._emit(OpKind.MMA, Pipe.TENSOR, n_inst, deps, flops=flops, mma_dtype=_mma_key(dt),
                            label=label, line=line)
            # each wgmma reads its B (n x k) and, unless A is in registers, its A (64 x k) from shared memory: k
            # elements of 256 bits, 32 bytes per row; the warpgroup's four warps take a quarter each
            op.smem = n_inst * 32 * (n + (0 if a_in_regs else 64)) // 4
            instr = (64, n, k)
            self.stats.dots[key] = {"unit": "wgmma (MMAv3)", "instr": f"m64n{n}k{k}", "warpsPerCTA": list(wpc),
                                    "wgmma_per_warp": n_inst, "a_operand": "registers" if a_in_regs else "shared"}
            version = 3
        else:
            kk = {"fp16": 16, "bf16": 16, "tf32": 8, "int8": 32, "uint8": 32, "fp8e5": 32, "fp8e4nv": 32}[dt]
            if chained:
                wpc = (W, 1)
            else:
                w = [1, 1]
                reps = [max(1, -(-M // 16)), max(1, -(-N // 8))]
                while w[0] * w[1] < W:
                    if reps[0] >= reps[1]:
                        w[0] *= 2
                        if reps[0] != 1:
                            reps[0] //= 2
                    else:
                        w[1] *= 2
                        reps[1] //= 2
                wpc = tuple(w)
            rep_m = max(1, -(-M // (16 * wpc[0])))
            rep_n = max(1, -(-N // (8 * wpc[1])))
            rep_k = max(1, K_ // kk)
            n_inst = rep_m * rep_n * rep_k * batch * mult
            flops = n_inst * 2 * 16 * 8 * kk
            deps = deps_acc[:]
            # operands into registers in the dot-operand layout: ldmatrix from shared memory
            for x, rows, which in ((a, 16 * rep_m, "a"), (b, 8 * rep_n, "b")):
                nbytes = rows * K_ * eb * batch
                if x.lsrc is None and x is a:
                    deps.append(x.src)            # computed in registers (e.g. P): converted in registers
                    self._region().frag[(site, which)] = max(1, M * K_ * eb // 4 // (WARP * W))
                    continue
                # Triton's prefetch pass keeps two k-slices of each shared-memory operand in registers
                self._region().frag[(site, which)] = max(1, rows * min(K_, 2 * kk) * eb * batch // 4 // WARP)
                hit = self._staged.get(("ldsm", id(x)))
                if hit is not None and hit[0]() is x:
                    deps.append(hit[1])           # loop-invariant operand: fragments loaded once (hoisted)
                    continue
                sdeps = self._smem_operands([x], line)
                ld = self._shared(OpKind.LOAD, max(1, nbytes // 512), 16, sdeps, "LDSM.16.M88.4", line)
                self._staged[("ldsm", id(x))] = (weakref.ref(x), ld)
                deps.append(ld)
            label = "HMMA.16816.F32" + ("" if dt == "fp16" else f".{dt.upper()}") if kk == 16 else \
                "HMMA.1688.F32.TF32" if dt == "tf32" else \
                f"QMMA.16832.F32.{_FP8_SASS[dt]}" if dt in _FP8_SASS else "IMMA.16832.S32.S8"
            op = self._emit(OpKind.MMA, Pipe.TENSOR, n_inst, deps, flops=flops, mma_dtype=_mma_key(dt),
                            label=label, line=line)
            instr = (16, 8, kk)
            self.stats.dots[key] = {"unit": "mma.sync (MMAv2)", "instr": f"m16n8k{kk}", "warpsPerCTA": list(wpc),
                                    "mma_per_warp": n_inst}
            version = 2
        out.src = op
        out.lay = mma_layout(out.shape, version, wpc, instr)
        if acc is not None:
            self._region().acc[site] = acc_regs
        else:
            self._region().res[site] = acc_regs
        self.stats.flops += 2.0 * batch * M * N * K_ * self._active_warps() // W
        self._anchor_acc(acc, out)

    def _anchor_acc(self, acc, out):
        if self.probe and acc is not None and (acc.lay is None or acc.lay.shape != acc.shape):
            self._anchor_input(acc, out.lay, out.shape)

    def _smem_operands(self, xs, line) -> list:
        """Deps making the operands ``xs`` available in shared memory: their async-copy waits, or one staging
        group for those held in registers."""
        deps, stage = [], []
        for x in xs:
            src = x.src
            if src is not None and src.kind == OpKind.ASYNC_WAIT:
                deps.append(src)
                f = self.facts.sites.get(x.lsrc) if x.lsrc is not None else None
                if f and f.get("tma_bytes") and f.get("tma_region") != (self.loops[-1].key if self.loops else None):
                    # a TMA box loaded before this loop (FlashAttention's Q) stays in shared memory while it runs
                    self._region().staging[("tma", x.lsrc)] = f["tma_bytes"]
            else:
                stage.append(x)
        if stage:
            deps += self._stage_group(stage, line)
        return deps

    def _stage_group(self, xs, line) -> list:
        """Registers -> shared memory for dot operands (local_alloc): one st.shared per register vector of each
        operand's layout, the async-proxy fence, one barrier (and, inside a loop, the barrier that lets the
        previous iteration's readers finish first).  A loop-invariant operand is staged once (Triton hoists the
        allocation out of the loop)."""
        deps, todo = [], []
        for x in xs:
            hit = self._staged.get(id(x))
            if hit is not None and hit[0]() is x:
                deps.append(hit[1])
            else:
                todo.append(x)
        if not todo:
            return deps
        pre = []
        if self.in_runtime_loop() is not None:
            pre = [self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, (), label="BAR.SYNC", line=line)]
        stores = []
        for x in todo:
            eb = x.dtype.itemsize
            lay = x.lay if (x.lay is not None and x.lay.shape == x.shape) else default_layout(x.shape, self.W)
            d0 = (lay.order or (len(x.shape) - 1,))[0]
            vec = max(1, min(lay.contig(d0), 16 // eb))
            n = max(1, -(-lay.ept // vec))
            stores.append(self._shared(OpKind.STORE, n, vec * eb, [x.src] + pre, f"STS.{vec * eb * 8}", line))
            self._region().staging[(x.lsrc if x.lsrc is not None else C.user_site()[2], x.numel)] = x.numel * eb
        fence = self._cost(K.WGMMA_FENCE, 1, stores, line) if self.hopper else None
        b = self._emit(OpKind.BARRIER, Pipe.BRANCH, 1, [fence] if fence is not None else stores, label="BAR.SYNC",
                       line=line)
        for x in todo:
            self._staged[id(x)] = (weakref.ref(x), b)
        return deps + [b]


#: the SASS name of an fp8 operand type (QGMMA / QMMA take fp8 operands)
_FP8_SASS = {"fp8e5": "E5M2", "fp8e4nv": "E4M3"}


def _mma_key(dt: str) -> str:
    return {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "int8": "int8", "uint8": "int8", "fp8e5": "fp8",
            "fp8e4nv": "fp8"}.get(dt, dt)
