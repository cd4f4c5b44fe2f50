"""Command line: ``gpusim run FILE``, ``gpusim gpus``, ``gpusim validate ...``.

``gpusim run kernels/vector_add.py`` imports the file, calls its ``launch()`` (parameters with ``-p k=v``),
simulates every kernel it launches on the chosen GPU, checks the outputs against the file's numpy reference
and prints the report (``--json`` for machine-readable output).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

from . import compilers
from .errors import (EXIT_INTERNAL_ERROR, EXIT_INTERRUPTED, EXIT_USER_ERROR, ISSUE_TRACKER, GpusimError,
                     LaunchSpecError, UsageError)
from .kernelfile import (_UserCode, _exc_text, _key_line, _parse_params, launch_params,  # noqa: F401
                         load_kernel_file, parse_value, user_error)          # (re-exported: gpusim.cli.*)

def cmd_run(a: argparse.Namespace) -> int:
    from .api import check_launch, check_outputs, simulate_launch
    from .config import load_gpu

    if "," in a.gpu:                                   # several presets: side by side
        from .side_by_side import cmd_run_presets
        return cmd_run_presets(a)
    gpu = load_gpu(a.gpu)
    raw_params = _parse_params(a.param)
    if not _defines_launch(a.file):
        return _run_script(a, gpu, raw_params)
    mod = load_kernel_file(a.file)
    params = launch_params(mod.launch, raw_params, a.file)
    with _UserCode(a.file):
        launch = mod.launch(**params)
    try:
        check_launch(launch)
    except LaunchSpecError as e:
        raise LaunchSpecError(f"{a.file}:{_key_line(mod.launch, e.key)}: {e}", key=e.key) from e
    want_timeline = bool(a.html or a.trace)
    progress = None
    if not a.json and sys.stderr.isatty():
        from .progress import StepProgress
        progress = StepProgress("simulating")
    with _UserCode(a.file), compilers.use(a.compiler):
        reports = simulate_launch(launch, gpu, record_timeline=want_timeline, progress=progress, exact=a.exact)
        checks = check_outputs(launch) if "reference" in launch else []
    ok = all(c[2] for c in checks)
    if a.json:
        payload = {"file": a.file, "reports": [r.to_dict() for r in reports],
                   "outputs_match_reference": ok,
                   "checks": [{"output": str(k), "max_abs_error": e, "ok": o} for k, e, o in checks]}
        print(json.dumps(payload, indent=1, default=str))
    else:
        _print_reports(reports, gpu)
        for k, e, o in checks:
            print(f"output {k}: {'matches' if o else 'DOES NOT MATCH'} the numpy reference (max abs error {e:.3g})")
    _write_pages(a, reports, gpu)
    return 0 if ok else 1


def _print_reports(reports, gpu) -> None:
    for r in reports:
        print(r)
        print()
    if len(reports) > 1:
        tot = sum(r.cycles for r in reports)
        print(f"{len(reports)} kernels, {tot:,.0f} cycles in all ({tot / gpu.chip.sm_clock_mhz:.2f} us)")


def _write_pages(a: argparse.Namespace, reports, gpu) -> None:
    """``--html`` / ``--trace``: the timeline page and the Chrome trace of the reports."""
    if a.html:
        from .viz import write_html
        write_html(reports, a.html, gpu)
        print(f"wrote {a.html}", file=sys.stderr)
    if a.trace:
        from .viz import write_chrome_trace
        write_chrome_trace(reports, a.trace)
        print(f"wrote {a.trace}", file=sys.stderr)


def _defines_launch(path: str) -> bool:
    """Whether a file defines (or imports) ``launch`` at its top level; True when it cannot be parsed (the import
    then reports the error with its line)."""
    import ast
    try:
        tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return True
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "launch":
            return True
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "launch" for t in n.targets):
            return True
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any((x.asname or x.name) == "launch" for x in n.names):
            return True
    return False


def _run_script(a: argparse.Namespace, gpu, raw_params: dict) -> int:
    """A file without ``launch()``: run it as a script (``__main__``), as ``python FILE`` would on a GPU machine,
    with ``import triton`` / ``from numba import cuda`` giving gpusim's front ends, and print a report for every
    kernel it launches (simulated on ``gpu``)."""
    import contextlib
    import runpy
    from ._host import exec_sources_kept
    from .api import session
    from .bench import torch_cuda_is_host, triton_is_gpusim
    from .cuda.stand_in import numba_cuda_is_gpusim
    from .errors import KernelFileError
    from .triton.runtime import driver
    if raw_params:
        raise UsageError(f"-p {next(iter(raw_params))}: {a.file} has no launch() function to take parameters "
                         "(it runs as a script)")
    if not os.path.isfile(a.file):
        load_kernel_file(a.file)                       # its message for a missing file / a directory
    old_argv, old_gpu = sys.argv, driver.active._gpu
    out = sys.stderr if a.json else sys.stdout          # the script's own prints keep --json parseable
    old_path = list(sys.path)
    # the script by its absolute path, so that its source stays readable if it changes directory (os.chdir)
    path = os.path.abspath(a.file)
    try:
        sys.argv = [a.file]
        sys.path.insert(0, os.path.dirname(path))   # as `python script.py`: its folder first
        driver.active.set_gpu(gpu)
        with session(gpu, record_timeline=bool(a.html or a.trace), exact=a.exact) as s, \
                contextlib.redirect_stdout(out), _UserCode(path), compilers.use(a.compiler), \
                numba_cuda_is_gpusim(), triton_is_gpusim(), torch_cuda_is_host(), exec_sources_kept():
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise KernelFileError(f"{a.file}: the script exited with status {e.code}") from None
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path
        driver.active.set_gpu(old_gpu)
    reports = s.reports
    if not reports:
        raise KernelFileError(f"{a.file}: defines no launch() function and launched no kernel when run as a script "
                              "(see kernels/README.md for the convention)")
    if a.json:
        print(json.dumps({"file": a.file, "ran_as_script": True, "reports": [r.to_dict() for r in reports]},
                         indent=1, default=str))
    else:
        print(f"{a.file} ran as a script (it has no launch()): {len(reports)} kernel launch"
              f"{'es' if len(reports) > 1 else ''} simulated on {gpu.chip.name}\n")
        _print_reports(reports, gpu)
    _write_pages(a, reports, gpu)
    return 0


def cmd_gpus(a: argparse.Namespace) -> int:
    from .config import load_gpu, preset_names, schema
    detail = load_gpu(a.verbose) if a.verbose else None     # a bad file fails before anything is printed
    for name in preset_names():
        g = load_gpu(name)
        print(f"{name:<9} {g.name:<26} {g.chip.sm_count:>4} SMs  {g.chip.sm_clock_mhz:>5.0f} MHz  "
              f"L2 {g.l2.size_bytes / 2**20:>4.0f} MB  DRAM {g.dram.kind} {g.dram.peak_bandwidth_gbps:>5.0f} GB/s")
    if detail is not None:
        g = detail
        S = schema()
        print(f"\n{a.verbose}: {g.name}")
        for k, src in sorted(g.sources.items()):
            sec, par = k.split(".", 1)
            unit = S[k].unit if S[k].unit not in ("text", "flag") else ""
            print(f"  {k:<40} {getattr(getattr(g, sec), par)!s:<30} {unit:<18} {src}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is a UsageError (one line, exit status 2) like every other mistake."""

    def error(self, message: str):
        sub = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        raise UsageError(f"{sub}{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpusim", description="Simulate GPU kernels on a modelled GPU.",
                epilog="exit status: 0 done (run: outputs match the reference), 1 run: an output differs from the "
                       "numpy reference, 2 a mistake in the input (one line 'gpusim: error: ...'), 3 an internal "
                       "error (a bug in gpusim; the traceback follows), 130 interrupted.")
    p.add_argument("--debug", action="store_true",
                   help="on an error, also print the Python traceback (or set GPUSIM_DEBUG=1)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="simulate the launch() of a kernel file and print its report (a file without "
                                   "launch(): run it as a script and report every kernel it launches)")
    r.add_argument("file")
    r.add_argument("--gpu", default="h100", help="preset name (gpusim gpus) or a .toml config file; several, "
                                                 "comma-separated (h100,h200,a100), print side by side")
    r.add_argument("-p", "--param", action="append", default=[], help="launch() parameter, key=value")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--html", metavar="FILE", help="write a self-contained HTML page with timeline and plots")
    r.add_argument("--trace", metavar="FILE", help="write the warp timeline as a Chrome trace (Perfetto)")
    r.add_argument("--compiler", choices=compilers.MODES, default=None,
                   help="registers / shared memory from the real compiler (Triton, numba-cuda + ptxas) or gpusim's "
                        "built-in estimate: auto (real when installed, default; or $GPUSIM_COMPILER), builtin, real")
    r.add_argument("--exact", action="store_true",
                   help="replay every CTA in the timing engine (default: a grid of many alike waves is sampled: the "
                        "waves up to its steady state and the last ones replayed, the middle extrapolated)")
    r.set_defaults(fn=cmd_run)
    g = sub.add_parser("gpus", help="list the GPU presets")
    g.add_argument("-v", "--verbose", metavar="PRESET",
                   help="show every parameter of PRESET (a name or a .toml file) with its unit and source")
    g.set_defaults(fn=cmd_gpus)
    from .bench import add_parser as add_bench
    from .explain import add_parser as add_explain
    from .scenario import add_parser as add_scenario
    from .sweeper import add_parser as add_sweep
    from .tuner import add_parser as add_tune
    add_sweep(sub)
    add_tune(sub)
    add_bench(sub)
    add_explain(sub)
    add_scenario(sub)
    try:
        from .validate.cli import add_parser as add_validate
        add_validate(sub)
    except ImportError:
        pass
    _add_debug(p)
    return p


def _add_debug(p: argparse.ArgumentParser) -> None:
    """``--debug`` after a subcommand too (``gpusim run --debug FILE``), without overriding one given before."""
    for act in p._actions:
        if isinstance(act, argparse._SubParsersAction):
            for sp in act.choices.values():
                if not any("--debug" in x.option_strings for x in sp._actions):
                    sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                    help=argparse.SUPPRESS)
                _add_debug(sp)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def main(argv: list[str] | None = None) -> int:
    """The ``gpusim`` command.  Exit status: see gpusim.errors (EXIT_*)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("GPUSIM_DEBUG", "").strip() not in ("", "0") or "--debug" in argv
    try:
        a = build_parser().parse_args(argv)
        debug = debug or getattr(a, "debug", False)
        return a.fn(a)
    except GpusimError as e:
        if debug:
            traceback.print_exc()
        print(f"gpusim: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("gpusim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:                            # gpusim ... | head
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except Exception as e:  # noqa: BLE001 -- anything else is a bug in gpusim
        print(f"gpusim: internal error ({_one_line(_exc_text(e))}): this is a bug in gpusim, not in your input; "
              f"please report it at {ISSUE_TRACKER} with the command line and the traceback below",
              file=sys.stderr)
        traceback.print_exc()
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
