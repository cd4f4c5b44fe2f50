import os
import sys

# tests import their helpers (synthetic traces) by module name
sys.path.insert(0, os.path.dirname(__file__))
