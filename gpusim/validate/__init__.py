"""Validation against real hardware: the case suite, the GPU harness that records it, and (elsewhere in this
package) the comparison of records with gpusim's predictions.

Keep this file free of imports: ``python -m gpusim.validate.collect`` runs on GPU machines that have numpy,
torch, Triton and numba-cuda but not simpy or plotly, and importing a submodule runs this file first.
"""
