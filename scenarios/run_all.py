"""Run every scenario; ``--update`` rewrites the golden ``.out`` files (after a deliberate model change)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py") and not f.startswith(("_", "run_all")))


def output_of(name: str) -> str:
    p = subprocess.run([sys.executable, os.path.join(HERE, f"{name}.py")], capture_output=True, text=True,
                       cwd=HERE, env={**os.environ, "PYTHONHASHSEED": "0"})
    if p.returncode:
        raise SystemExit(f"scenario {name} failed:\n{p.stderr}")
    return p.stdout


if __name__ == "__main__":
    for name in (sys.argv[1:] and [a for a in sys.argv[1:] if a != "--update"]) or SCENARIOS:
        out = output_of(name)
        print(f"== {name}\n{out}")
        if "--update" in sys.argv:
            with open(os.path.join(HERE, f"{name}.out"), "w") as f:
                f.write(out)
