"""What a real compilation yields, as gpusim keeps it (and caches it as JSON): the resources ``ptxas -v`` reports
for the kernel's entry function and its static SASS.  Units: registers per thread, bytes per CTA (shared memory),
bytes per thread (stack, spills, local memory)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

SCHEMA = 1


@dataclass
class Compiled:
    compiler: str                   # the label the report prints: "triton 3.6.0, sm_90a"
    frontend: str                   # "triton" | "cuda"
    kernel: str                     # the kernel's name
    arch: str                       # "sm_90a" / "sm_90"
    registers: int                  # registers per thread (ptxas "Used N registers")
    shared_bytes: int               # shared memory per CTA the launch needs (Triton: metadata.shared, dynamic;
    #                                 numba: static shared memory, ptxas "N bytes smem"), without the 1 KB the
    #                                 system reserves per CTA
    stack_bytes: int = 0            # bytes per thread of stack frame (local memory: spills and local arrays)
    spill_store_bytes: int = 0      # ptxas "N bytes spill stores" (static bytes of spill stores per thread)
    spill_load_bytes: int = 0       # ptxas "N bytes spill loads"
    barriers: int = 0               # named barriers used
    num_warps: int = 0              # Triton: warps per CTA it compiled for
    num_stages: int = 0             # Triton: pipeline stages it compiled for
    signature: dict = field(default_factory=dict)    # how the compiler specialized the arguments
    ptxas_log: str = ""
    sass: dict = field(default_factory=dict)         # "_sass.summarize": total, histogram, per line, per pipe
    compile_s: float = 0.0
    cubin_file: str = ""            # the cubin, kept next to the cache entry (for cuobjdump / nvdisasm)
    schema: int = SCHEMA

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Compiled":
        """Raises (KeyError, TypeError, ValueError) on anything malformed: the cache treats it as corrupt."""
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            raise ValueError("not a compiled result of this schema")
        names = {f.name for f in fields(cls)}
        c = cls(**{k: v for k, v in d.items() if k in names})
        for k in ("registers", "shared_bytes", "stack_bytes", "spill_store_bytes", "spill_load_bytes"):
            if not isinstance(getattr(c, k), int) or getattr(c, k) < 0:
                raise ValueError(f"{k} is not a non-negative int")
        if not isinstance(c.compiler, str) or not c.compiler or not isinstance(c.sass, dict):
            raise ValueError("malformed")
        return c

    def summary(self) -> dict:
        """The part a trace's meta carries (no logs, no per-line SASS)."""
        d = {"compiler": self.compiler, "arch": self.arch, "registers": self.registers,
             "shared_bytes": self.shared_bytes, "stack_bytes": self.stack_bytes,
             "spill_store_bytes": self.spill_store_bytes, "spill_load_bytes": self.spill_load_bytes,
             "compile_s": self.compile_s}
        if self.sass:
            d["sass_instructions"] = self.sass.get("total", 0)
            d["sass_per_pipe"] = self.sass.get("per_pipe", {})
        return d
