"""The ``gpusim explain FILE`` command: why a kernel takes the cycles it takes.

``gpusim explain kernels/strided_read.py -p stride=32`` simulates the file's ``launch()`` as ``gpusim run`` does,
then, for every kernel launched, re-simulates the recorded trace on idealized chips (``Report.explain``;
``gpusim.timing.counterfactual`` says what each idealization changes) and prints the limiter and the
"without X: N cycles (-Y%)" lines ranked by saving.  ``--json`` prints the explanations as JSON, ``--html F``
writes the report page with an explanation section per kernel.  The kernel file is read as every command reads
it (``gpusim.kernelfile``).
"""
from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub) -> argparse.ArgumentParser:
    """Register ``explain`` on the ``gpusim`` subcommand parsers."""
    from . import compilers
    e = sub.add_parser("explain", help="rank the causes of a kernel's lost cycles by re-simulating it on "
                                       "idealized chips")
    e.add_argument("file")
    e.add_argument("--gpu", default="h100", help="preset name (gpusim gpus) or a .toml config file")
    e.add_argument("-p", "--param", action="append", default=[], help="launch() parameter, key=value")
    e.add_argument("--json", action="store_true", help="print the explanations as JSON")
    e.add_argument("--html", metavar="FILE", help="write the HTML report page with an explanation section per "
                                                  "kernel")
    e.add_argument("--compiler", choices=compilers.MODES, default=None,
                   help="registers / shared memory from the real compiler or the built-in estimate (as gpusim run)")
    e.set_defaults(fn=cmd_explain)
    return e


def cmd_explain(a: argparse.Namespace) -> int:
    """``gpusim explain``: simulate the launch, explain every kernel, print (text or JSON), write the page."""
    from . import compilers
    from .api import simulate_launch
    from .config import load_gpu
    from .kernelfile import _parse_params, _UserCode, launch_params, load_kernel_file, make_launch
    from .progress import StepProgress

    gpu = load_gpu(a.gpu)
    raw = _parse_params(a.param)
    mod = load_kernel_file(a.file)
    launch = make_launch(mod, launch_params(mod.launch, raw, a.file), a.file)
    tty = not a.json and sys.stderr.isatty()
    with _UserCode(a.file), compilers.use(a.compiler):
        reports = simulate_launch(launch, gpu, record_timeline=bool(a.html),
                                  progress=StepProgress("simulating") if tty else None)
    explanations = []
    for rep in reports:
        explanations.append(rep.explain(progress=StepProgress(f"explaining {rep.kernel}", unit="replay")
                                        if tty else None))
    if a.json:
        print(json.dumps({"file": a.file, "gpu": gpu.name, "explanations": [e.to_dict() for e in explanations]},
                         indent=1, default=str))
    else:
        for e in explanations:
            print(e)
            print()
        if len(explanations) > 1:
            tot = sum(e.cycles for e in explanations)
            print(f"{len(explanations)} kernels, {tot:,.0f} cycles in all; limiters: "
                  + ", ".join(f"{e.kernel} {e.limiter}" for e in explanations))
    if a.html:
        from .viz import write_html
        write_html(reports, a.html, gpu)
        print(f"wrote {a.html}", file=sys.stderr)
    return 0
