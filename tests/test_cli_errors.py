"""The command line's one error path: every user mistake is exit status 2 and one line ``gpusim: error: ...``
naming the file, line, parameter or config key; a bug in gpusim is exit status 3 with the traceback.

Each case runs ``python -m gpusim.cli`` in a subprocess, in a temporary directory holding the files it needs
(tiny kernels written for gpusim's own front ends, so a run takes well under a second).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpusim.api import LaunchSpecError, check_launch, launch_steps, simulate_launch
from gpusim.errors import EXIT_INTERNAL_ERROR, EXIT_USER_ERROR, GpusimError

ROOT = Path(__file__).resolve().parents[1]

CUDA_KERNEL = '''\
import numpy as np
from gpusim import cuda


@cuda.jit
def copy(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i]


def launch(n: int = 64, seed: int = 0):
    a = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    return {
        "kernel": copy,
        "grid": ((n + 31) // 32,),
        "block": (32,),
        "args": [a, out],
        "outputs": [1],
        "reference": lambda: {1: a},
    }
'''

TRITON_TOP_LEVEL_NUM_WARPS = '''\
import numpy as np
from gpusim import triton
from gpusim.triton import language as tl


@triton.jit
def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch(n: int = 1024):
    x = np.ones(n, np.float32)
    out = np.zeros_like(x)
    return {
        "kernel": copy,
        "grid": (n // 256,),
        "args": [x, out, n],
        "meta": {"BLOCK": 256},
        "num_warps": 8,
        "outputs": [1],
    }
'''


def run_cli(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "GPUSIM_DEBUG"}
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpusim.cli", *args], cwd=tmp_path, env=e, capture_output=True,
                          text=True, timeout=300)


def user_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    """Assert exit status 2 and exactly one stderr line 'gpusim: error: ...' holding every needle."""
    assert r.returncode == EXIT_USER_ERROR, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("gpusim: error: "), line
    for n in needles:
        assert n in line, (n, line)
    assert "Traceback" not in r.stderr
    return line


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(textwrap.dedent(text))
    return name


def toml(tmp_path: Path, name: str, body: str) -> str:
    return write(tmp_path, name, 'inherit = "h100"\n\n' + textwrap.dedent(body))


# ---- kernel files --------------------------------------------------------------------------------------

def test_syntax_error_names_file_and_line(tmp_path):
    f = write(tmp_path, "syn.py", "import numpy as np\n\ndef launch(n: int = 4):\n    return {\n")
    user_error(run_cli(tmp_path, "run", f), "syn.py:4", "syntax error", "'{' was never closed")


def test_indentation_error(tmp_path):
    f = write(tmp_path, "ind.py", "x = 1\n  y = 2\ndef launch():\n    pass\n")
    user_error(run_cli(tmp_path, "run", f), "ind.py:2", "IndentationError")


def test_exception_at_import_names_the_users_line(tmp_path):
    f = write(tmp_path, "imp.py", "import numpy as np\nimport no_such_module_xyz\n\ndef launch():\n    pass\n")
    user_error(run_cli(tmp_path, "run", f), "imp.py:2", "at import", "No module named 'no_such_module_xyz'")


def test_missing_module_in_a_script_names_the_users_line(tmp_path):
    # a script (no launch()) runs under the torch stand-in's import hook: the hook's frame is passed over
    f = write(tmp_path, "simp.py", "from numba import cuda\nimport no_such_module_xyz\n")
    user_error(run_cli(tmp_path, "run", f), "simp.py:2", "at import", "No module named 'no_such_module_xyz'")


def test_exception_in_launch_names_the_users_frame(tmp_path):
    f = write(tmp_path, "boom.py", """\
        import numpy as np


        def helper(n):
            return np.zeros(n) / undefined_name


        def launch(n: int = 16):
            return helper(n)
        """)
    user_error(run_cli(tmp_path, "run", f), "boom.py:5", "in helper()", "NameError")


def test_exception_in_library_called_from_launch_names_the_users_line(tmp_path):
    # numpy raises (in C/Cython); the line to show is the user's call
    f = write(tmp_path, "lib.py", """\
        import numpy as np


        def launch(n: int = 16):
            rng = np.random.default_rng(0)
            return rng.standard_normal("sixteen")
        """)
    user_error(run_cli(tmp_path, "run", f), "lib.py:6", "in launch()", "TypeError")


def test_missing_kernel_file_and_no_launch(tmp_path):
    user_error(run_cli(tmp_path, "run", "nosuch.py"), "nosuch.py", "does not exist")
    f = write(tmp_path, "nolaunch.py", "x = 1\n")
    user_error(run_cli(tmp_path, "run", f), "nolaunch.py", "no launch()", "launched no kernel")


SCRIPT_TRITON = '''\
import numpy as np
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


if __name__ == "__main__":
    n = 5000
    x, y = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
    out = np.zeros(n, np.float32)
    for _ in range(2):
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    print("max", out.max())
'''


def test_a_file_without_launch_runs_as_a_script_and_reports_each_launch(tmp_path):
    """A Triton script as its author wrote it (``import triton``, a ``__main__`` block, no launch()): run as a
    script with gpusim standing in for triton, a report per launch."""
    f = write(tmp_path, "script.py", SCRIPT_TRITON)
    r = run_cli(tmp_path, "run", f)
    assert r.returncode == 0, r.stderr
    assert "max 3.0" in r.stdout                                   # the script's own output
    assert "ran as a script (it has no launch()): 2 kernel launches simulated" in r.stdout
    assert r.stdout.count("kernel add_kernel on NVIDIA H100") == 2 and "2 kernels," in r.stdout
    j = run_cli(tmp_path, "run", f, "--json")
    import json
    payload = json.loads(j.stdout)                                 # the script's prints went to stderr
    assert payload["ran_as_script"] and len(payload["reports"]) == 2 and "max 3.0" in j.stderr
    user_error(run_cli(tmp_path, "run", f, "-p", "n=3"), "-p n", "no launch() function to take parameters")
    bad = write(tmp_path, "boom.py", SCRIPT_TRITON.replace('print("max", out.max())', 'raise ValueError("boom")'))
    user_error(run_cli(tmp_path, "run", bad), "boom.py:", "boom")


def test_kernel_error_format_is_kept(tmp_path):
    f = write(tmp_path, "oob.py", """\
        import numpy as np
        from gpusim import cuda


        @cuda.jit
        def k(a, out):
            i = cuda.grid(1)
            out[i] = a[i + 1]


        def launch(n: int = 256):
            return {"kernel": k, "grid": (1,), "block": (n,),
                    "args": [np.ones(n, np.float32), np.zeros(n, np.float32)]}
        """)
    user_error(run_cli(tmp_path, "run", f), "oob.py:8, in kernel 'k', block (0, 0, 0), thread (255, 0, 0): "
               "out-of-bounds global read")


# ---- -p parameters -------------------------------------------------------------------------------------

def test_unknown_parameter(tmp_path):
    f = write(tmp_path, "k.py", CUDA_KERNEL)
    user_error(run_cli(tmp_path, "run", f, "-p", "nn=5"), "k.py:12", "no parameter 'nn' in launch()",
               "did you mean 'n'?", "it takes: n, seed")


def test_parameter_of_the_wrong_type(tmp_path):
    f = write(tmp_path, "k.py", CUDA_KERNEL)
    user_error(run_cli(tmp_path, "run", f, "-p", "n=abc"), "k.py:12", "parameter n", "expects an int", "'abc'")
    user_error(run_cli(tmp_path, "run", f, "-p", "seed=1.5"), "parameter seed", "expects an int", "'1.5'")


def test_malformed_and_repeated_parameters(tmp_path):
    f = write(tmp_path, "k.py", CUDA_KERNEL)
    user_error(run_cli(tmp_path, "run", f, "-p", "n"), "-p n", "key=value")
    user_error(run_cli(tmp_path, "run", f, "-p", "n=64", "-p", "n=128"), "-p n", "given twice")


def test_good_run_and_parameter_expressions(tmp_path):
    f = write(tmp_path, "k.py", CUDA_KERNEL)
    r = run_cli(tmp_path, "run", f, "-p", "n=2**7", "-p", "seed=3", "--json")
    assert r.returncode == 0, r.stderr
    import json
    payload = json.loads(r.stdout)
    assert payload["reports"][0]["context"]["grid"] == [4, 1, 1]
    assert payload["reports"][0]["notes"] == []
    assert payload["outputs_match_reference"]


# ---- the launch dict -----------------------------------------------------------------------------------

def test_top_level_num_warps_is_refused(tmp_path):
    f = write(tmp_path, "nw.py", TRITON_TOP_LEVEL_NUM_WARPS)
    user_error(run_cli(tmp_path, "run", f), "nw.py:20", "'num_warps'", "belongs in 'meta'")


def test_launch_dict_checks_in_the_python_api():
    import numpy as np

    from gpusim import cuda, triton
    from gpusim.triton import language as tl

    @triton.jit
    def tk(x_ptr, n, BLOCK: tl.constexpr):
        pass

    @cuda.jit
    def ck(a):
        pass

    x = np.zeros(8, np.float32)
    with pytest.raises(LaunchSpecError, match="num_warps belongs in 'meta'"):
        simulate_launch({"kernel": tk, "grid": (1,), "args": [x, 8], "meta": {"BLOCK": 8}, "num_warps": 4})
    with pytest.raises(LaunchSpecError, match="BLOCK is a parameter of kernel 'tk'.*'meta'"):
        check_launch({"kernel": tk, "grid": (1,), "args": [x, 8], "BLOCK": 8})
    with pytest.raises(LaunchSpecError, match="Triton option.*CUDA-style"):
        check_launch({"kernel": ck, "grid": (1,), "block": (32,), "args": [x], "num_warps": 4})
    with pytest.raises(LaunchSpecError, match="'meta'.*CUDA-style"):
        check_launch({"kernel": ck, "grid": (1,), "block": (32,), "args": [x], "meta": {"num_warps": 4}})
    with pytest.raises(LaunchSpecError, match="'block' is for CUDA-style"):
        check_launch({"kernel": tk, "grid": (1,), "block": (32,), "args": [x, 8]})
    with pytest.raises(LaunchSpecError, match="did you mean 'shared_bytes'"):
        check_launch({"kernel": ck, "grid": (1,), "block": (32,), "args": [x], "shared_mem": 1024})
    with pytest.raises(LaunchSpecError, match="did you mean 'reference'"):
        check_launch({"kernel": ck, "grid": (1,), "block": (32,), "args": [x], "refrence": None})
    with pytest.raises(LaunchSpecError, match=r"steps\[1\] has unknown key 'num_warps'"):
        launch_steps({"steps": [{"kernel": tk, "grid": (1,), "args": [x, 8], "meta": {"BLOCK": 8}},
                                {"kernel": tk, "grid": (1,), "args": [x, 8], "num_warps": 2}]})
    with pytest.raises(LaunchSpecError, match="has no 'grid'"):
        check_launch({"kernel": ck, "block": (32,), "args": [x]})
    with pytest.raises(LaunchSpecError, match="must return a dict"):
        check_launch(None)
    assert issubclass(LaunchSpecError, GpusimError)


# ---- --gpu and config files ----------------------------------------------------------------------------

def test_unknown_gpu(tmp_path):
    f = write(tmp_path, "k.py", CUDA_KERNEL)
    user_error(run_cli(tmp_path, "run", f, "--gpu", "nosuchgpu"), "unknown GPU preset 'nosuchgpu'",
               "presets: a100, h100, h200, rtx3090")
    user_error(run_cli(tmp_path, "run", f, "--gpu", "h10"), "did you mean 'h100'?")
    user_error(run_cli(tmp_path, "run", f, "--gpu", "mine.toml"), "'mine.toml' does not exist")


def test_misspelt_toml_key(tmp_path):
    t = toml(tmp_path, "typo.toml", "[chip]\nsm_cont = 100\n")
    for args in (("gpus", "-v", t), ("run", write(tmp_path, "k.py", CUDA_KERNEL), "--gpu", t)):
        user_error(run_cli(tmp_path, *args), "typo.toml:4", "unknown parameter 'sm_cont'", "did you mean 'sm_count'?")


def test_misspelt_section_and_misplaced_key(tmp_path):
    t = toml(tmp_path, "sec.toml", "[chips]\nsm_count = 100\n")
    user_error(run_cli(tmp_path, "gpus", "-v", t), "sec.toml:3", "unknown section [chips]", "did you mean 'chip'?")
    t = toml(tmp_path, "wrong.toml", "[sm]\nsm_count = 100\n")
    user_error(run_cli(tmp_path, "gpus", "-v", t), "wrong.toml:4", "sm_count belongs in section [chip]")


@pytest.mark.parametrize("value", ["0", "-4"])
@pytest.mark.parametrize("cmd", ["gpus", "run"])
def test_sm_count_out_of_range(tmp_path, value, cmd):
    t = toml(tmp_path, "bad.toml", f"[chip]\nname = \"tiny\"\nsm_count = {value}\n")
    args = ("gpus", "-v", t) if cmd == "gpus" else ("run", write(tmp_path, "k.py", CUDA_KERNEL), "--gpu", t)
    r = run_cli(tmp_path, *args)
    user_error(r, f"bad.toml:5: chip.sm_count = {value} is out of range: allowed 1 to 1024 SMs")
    assert r.stdout == ""                 # gpus -v fails before listing anything


def test_wrong_type_and_cross_field(tmp_path):
    t = toml(tmp_path, "ty.toml", "[l2]\nsize_bytes = \"big\"\n")
    user_error(run_cli(tmp_path, "gpus", "-v", t), "ty.toml:4", "l2.size_bytes: expected an integer (bytes), got 'big'")
    t = toml(tmp_path, "x.toml", "[l2]\npartitions = 4\nslices = 2\n")
    user_error(run_cli(tmp_path, "gpus", "-v", t), "x.toml:", "l2.slices (2) must be at least l2.partitions (4)")
    t = toml(tmp_path, "w.toml", "[sm]\nmax_warps = 48\n")
    user_error(run_cli(tmp_path, "gpus", "-v", t), "w.toml:4", "sm.max_threads (2048) must equal sm.max_warps (48)")


# ---- argparse, --debug, internal errors ----------------------------------------------------------------

def test_usage_mistakes_are_one_line(tmp_path):
    user_error(run_cli(tmp_path, "run"), "run: the following arguments are required: file")
    user_error(run_cli(tmp_path, "frobnicate"), "invalid choice")
    user_error(run_cli(tmp_path, "gpus", "--bogus"), "unrecognized arguments: --bogus")


@pytest.mark.parametrize("how", ["--debug first", "--debug after", "GPUSIM_DEBUG"])
def test_debug_shows_the_traceback(tmp_path, how):
    f = write(tmp_path, "syn.py", "def launch(:\n    pass\n")
    args, env = (["--debug", "run", f], None) if how == "--debug first" else \
        (["run", "--debug", f], None) if how == "--debug after" else (["run", f], {"GPUSIM_DEBUG": "1"})
    r = run_cli(tmp_path, *args, env=env)
    assert r.returncode == EXIT_USER_ERROR
    assert "Traceback (most recent call last)" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("gpusim: error: syn.py:1: syntax error")


def test_internal_error_is_exit_3_with_traceback(tmp_path):
    f = write(tmp_path, "k.py", CUDA_KERNEL)
    code = textwrap.dedent(f"""\
        import sys
        import gpusim.api

        def broken(*a, **k):
            return {{}}["a bug in gpusim"]

        gpusim.api.simulate_launch = broken
        from gpusim.cli import main
        sys.exit(main(["run", {f!r}]))
        """)
    e = {k: v for k, v in os.environ.items() if k != "GPUSIM_DEBUG"}
    e["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=e, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == EXIT_INTERNAL_ERROR, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("gpusim: internal error (KeyError: 'a bug in gpusim')")
    assert "bug in gpusim" in first and "report it" in first
    assert "Traceback (most recent call last)" in r.stderr


def test_internal_error_in_process(monkeypatch, capsys):
    import gpusim.cli as cli

    def broken(a):
        raise ZeroDivisionError("inside gpusim")
    monkeypatch.setattr(cli, "cmd_gpus", broken)
    assert cli.main(["gpus"]) == EXIT_INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.startswith("gpusim: internal error (ZeroDivisionError: inside gpusim)")
    assert "Traceback" in err


def test_a_script_that_changes_directory_still_finds_its_kernels_and_lines(tmp_path):
    """A script run by a relative path that calls os.chdir: its kernels' source (read when they are compiled) and its
    error lines still come from the script, as under ``python sub/script.py``."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "moves.py").write_text(
        "import os\n"
        "import numpy as np\n"
        "from gpusim import cuda\n"
        "os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + '/..')\n"
        "@cuda.jit\n"
        "def k(a):\n"
        "    i = cuda.grid(1)\n"
        "    if i < a.size:\n"
        "        a[i] = i * 2\n"
        "a = np.zeros(64, np.int32)\n"
        "k[1, 64](a)\n"
        "print('doubled', int(a[5]))\n"
        "k[1, 64](np.zeros(64, np.float32), 1)\n")
    r = run_cli(tmp_path, "run", "sub/moves.py")
    assert "doubled 10" in r.stdout, r.stderr
    user_error(r, "moves.py:13")
