"""Pictures of a simulation: warp timelines, occupancy and bandwidth over time, the roofline, the metrics table
(plotly figures for notebooks), one self-contained HTML page, and a Chrome trace for Perfetto.

    report = gpusim.simulate(kernel, grid, block, *args, record_timeline=True)
    gpusim.viz.timeline_figure(report)                  # a plotly go.Figure: notebooks show it inline
    gpusim.viz.write_html([report], "report.html", "h100")
    gpusim.viz.write_chrome_trace([report], "trace.json")

The timeline, the bandwidth plot and the Chrome trace need ``record_timeline=True`` (``gpusim run --html``
and ``--trace`` set it); the others work on any report.  This is the last layer: it may import anything in
gpusim, and only the CLI and API import it (lazily).
"""
from .charts import (bandwidth_figure, bandwidth_series, metrics_rows, metrics_table_figure, occupancy_figure,
                     occupancy_series, roofline_ceilings, roofline_figure)
from .chrome_trace import chrome_trace, chrome_trace_events, write_chrome_trace
from .page import render_html, write_html
from .timeline import CATEGORIES, TimelineBars, place_warps, sample_sms, timeline_bars, timeline_figure

__all__ = ["timeline_figure", "occupancy_figure", "bandwidth_figure", "roofline_figure", "metrics_table_figure",
           "write_html", "render_html", "write_chrome_trace", "chrome_trace", "chrome_trace_events",
           "timeline_bars", "TimelineBars", "sample_sms", "place_warps", "CATEGORIES", "occupancy_series",
           "bandwidth_series", "roofline_ceilings", "metrics_rows"]
