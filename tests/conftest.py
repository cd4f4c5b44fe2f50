import os
import sys

# tests import their helpers (synthetic traces) by module name
sys.path.insert(0, os.path.dirname(__file__))

# registers / shared memory: the existing tests, goldens and validation numbers were made with gpusim's built-in
# estimate, so the suite runs with it; tests of the real compiler opt in (gpusim.compilers.use("real"), or
# monkeypatch GPUSIM_COMPILER) -- tests/test_realcc.py
os.environ["GPUSIM_COMPILER"] = "builtin"
