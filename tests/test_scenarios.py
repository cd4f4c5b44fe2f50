"""Every scenario reproduces its golden output exactly (the simulator is deterministic).

After a deliberate model change, regenerate with ``python scenarios/run_all.py --update`` and review the diff.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCEN = os.path.join(os.path.dirname(HERE), "scenarios")
sys.path.insert(0, SCEN)

from run_all import SCENARIOS, output_of  # noqa: E402


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_matches_golden_output(name):
    golden = os.path.join(SCEN, f"{name}.out")
    assert os.path.exists(golden), f"{name}.out missing: run python scenarios/run_all.py --update"
    with open(golden) as f:
        expected = f.read()
    assert output_of(name) == expected
