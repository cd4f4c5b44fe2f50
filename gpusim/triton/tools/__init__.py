"""``gpusim.triton.tools``: host-side helpers of ``triton.tools`` (``tensor_descriptor``)."""
