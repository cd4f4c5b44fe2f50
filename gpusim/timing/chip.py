"""The chip's wiring: SMs, crossbars, L2 partitions and slices, memory controllers as a graph.

Nodes are units; an edge's ``cycles`` is the latency of crossing it.  SMs hang off the crossbar of the L2
partition they are near (half of the GPCs each on H100); the two partitions are joined by a link whose
crossing makes an access "far".  Edge latencies are chosen so that the shortest path SM -> slice reproduces
the pointer-chase latencies of the config (near and far L2 hit).  The builder reads load-to-use latencies off
the graph, so a user who adds a hop or changes a link sees it in every access.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from ..config import GPUConfig


@dataclass
class ChipWiring:
    graph: nx.Graph
    sm_partition: list[int]            # L2 partition each SM is near
    slice_partition: list[int]         # partition each L2 slice belongs to
    latency: list[list[int]]           # load-to-use L2 hit latency [sm partition][slice partition], cycles


def build_wiring(gpu: GPUConfig) -> ChipWiring:
    n_sm, n_part, n_slice = gpu.chip.sm_count, max(1, gpu.l2.partitions), gpu.l2.slices
    near, far = gpu.l2.near_latency_cycles, gpu.l2.far_latency_cycles
    g = nx.Graph()
    # the SM's own share of a load's round trip: L1 lookup and the trip to the crossbar
    sm_leg = gpu.l1.hit_latency_cycles
    xbar_to_slice = max(1, near - sm_leg)
    link = max(0, far - near)
    for p in range(n_part):
        g.add_node(("xbar", p), kind="crossbar")
        if p:
            g.add_edge(("xbar", p - 1), ("xbar", p), cycles=link, kind="partition link")
    sm_partition = [(i * n_part) // n_sm for i in range(n_sm)]
    for i in range(n_sm):
        g.add_node(("sm", i), kind="sm")
        g.add_edge(("sm", i), ("xbar", sm_partition[i]), cycles=sm_leg, kind="sm port")
    slice_partition = [(s * n_part) // n_slice for s in range(n_slice)]
    for s in range(n_slice):
        g.add_node(("l2", s), kind="l2 slice")
        g.add_edge(("l2", s), ("xbar", slice_partition[s]), cycles=xbar_to_slice, kind="slice port")
    for c in range(gpu.dram.channels):
        g.add_node(("dram", c), kind="dram channel")
        g.add_edge(("dram", c), ("l2", (c * n_slice) // gpu.dram.channels), cycles=0, kind="memory controller")
    # read latencies off the graph: one representative SM and slice per partition pair
    lat = [[0] * n_part for _ in range(n_part)]
    rep_sm = {p: sm_partition.index(p) for p in range(n_part) if p in sm_partition}
    rep_slice = {p: slice_partition.index(p) for p in range(n_part)}
    for ps in range(n_part):
        src = ("sm", rep_sm.get(ps, 0))
        dist = nx.single_source_dijkstra_path_length(g, src, weight="cycles")
        for pl in range(n_part):
            lat[ps][pl] = int(round(dist[("l2", rep_slice[pl])]))
    return ChipWiring(graph=g, sm_partition=sm_partition, slice_partition=slice_partition, latency=lat)
