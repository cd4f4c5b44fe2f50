"""The warp timeline in Chrome's trace event format, for Perfetto (ui.perfetto.dev) and chrome://tracing.

One process per SM (``pid`` = SM index), one thread per warp slot (``tid`` = sub-partition * max warps + the
slot's row, the rows of the HTML timeline), one complete event (``"ph": "X"``) per interval of the engine's
event log, named by the warp's state (``selected`` = issuing, ``selected (lanes masked)`` when some of its
instructions ran with fewer than 32 active lanes, else the stall reason); ``args`` name the CTA, the warp, the
ops issued with their labels, source lines and active lanes.  Times are microseconds at the preset clock.
Several reports (the steps of a launch) are laid end to end: each starts where the previous one's cycles end.
An extra process, "kernels" (``pid`` = the SM count), holds one event per kernel.

Past ``max_events`` intervals, touching intervals of a warp with the same name are merged into one event
(no time is lost; ``args.intervals`` counts them), and if that is not enough a deterministic subset of SMs is
kept; ``otherData.notes`` says what was done.
"""
from __future__ import annotations

import json

import numpy as np

from ..timing.sm import STALL_REASONS
from .timeline import CATEGORIES, STATE_CATEGORY, OpDescriber, place_warps, sample_sms

_DIGITS = 5                 # microsecond timestamps rounded to 10 ps: endpoints, not durations, are rounded
DEFAULT_MAX_EVENTS = 300_000


def _intervals(rep, want: set[int] | None):
    """Per warp, its log records as [t0, t1, name, cat, args-static, n], sorted by time."""
    res = rep.engine
    desc = OpDescriber(rep)
    static_cache: dict = {}
    wait_cache: dict = {}
    per: dict[int, list[list]] = {}
    for (sm, _sub, uid, t0, t1, st, f, l) in res.timeline:
        if want is not None and sm not in want:
            continue
        name = STALL_REASONS[st]
        cat = STATE_CATEGORY.get(st, "other")
        static = None
        if st == 0 and f >= 0:
            it = desc.interval(uid, f, l)
            static = static_cache.get(it)
            if static is None:
                tab, _ = desc.table(uid)
                static = static_cache[it] = {
                    "ops": list(it.ops), "labels": [desc.op_name(tab.ops[k]) for k in it.ops],
                    "lines": sorted({tab.ops[k].line for k in it.ops}),
                    "lanes": list(it.lanes) if it.n_masked else 32, "inst": it.n_inst}
            if it.n_masked:
                name, cat = "selected (lanes masked)", "masked"
        elif f >= 0:
            tab, _ = desc.table(uid)
            key = (id(tab), f)
            static = wait_cache.get(key)
            if static is None:
                static = wait_cache[key] = {"waiting_op": f, "label": desc.op_name(tab.ops[f]),
                                            "line": tab.ops[f].line}
        per.setdefault(uid, []).append([t0, t1, name, cat, static, 1])
    for recs in per.values():
        recs.sort(key=lambda r: (r[0], r[1]))
    return per


def _merge_touching(per: dict[int, list[list]]) -> int:
    """Merge touching same-name intervals of each warp; returns the number of events left."""
    n = 0
    for uid, recs in per.items():
        out = []
        for r in recs:
            p = out[-1] if out else None
            if p is not None and p[2] == r[2] and r[0] <= p[1] + 1e-9:
                p[1] = max(p[1], r[1])
                p[5] += r[5]
                p[6].append(r[4])
            else:
                out.append([r[0], r[1], r[2], r[3], r[4], r[5], [r[4]]])
        for p in out:
            if p[5] > 1:
                p[4] = _merge_args(p.pop())
            else:
                p.pop()
        per[uid] = out
        n += len(out)
    return n


def _merge_args(parts: list) -> dict | None:
    """The args of several consecutive intervals: first and last op, labels, lines, fewest lanes."""
    parts = [a for a in parts if a]
    if not parts or "ops" not in parts[0]:
        return parts[0] if parts else None
    ops = [a["ops"] for a in parts if a["ops"]]
    labels = list(dict.fromkeys(lab for a in parts for lab in a["labels"]))
    lanes = min(min(a["lanes"]) if isinstance(a["lanes"], list) else a["lanes"] for a in parts)
    return {"ops": [ops[0][0], ops[-1][-1]] if ops else [], "labels": labels[:8],
            "lines": sorted({ln for a in parts for ln in a["lines"]}), "lanes": lanes,
            "inst": sum(a["inst"] for a in parts)}


def chrome_trace(reports, max_sms: int | None = None, max_events: int | None = DEFAULT_MAX_EVENTS) -> dict:
    """The whole trace document (JSON object format): every SM unless ``max_sms`` samples them as the HTML
    timeline does, or ``max_events`` forces it (see the module docstring)."""
    if not isinstance(reports, (list, tuple)):
        reports = [reports]
    reports = list(reports)
    notes: list[str] = []
    kpid = max((r.config.chip.sm_count for r in reports), default=0)   # the "kernels" process, after the SMs
    per_rep = []
    for rep in reports:
        tl = rep.engine.timeline
        sms = None if max_sms is None or not tl else sample_sms(rep, max_sms)
        per_rep.append((sms, _intervals(rep, None if sms is None else set(sms)) if tl else {}))
    n = sum(len(v) for _, per in per_rep for v in per.values())
    if max_events is not None and n > max_events:
        n0 = n
        n = sum(_merge_touching(per) for _, per in per_rep)
        notes.append(f"touching intervals of a warp in the same state were merged: {n0:,} intervals, "
                     f"{n:,} events (args.intervals counts them; args.ops gives the first and last op)")
        if n > max_events:
            kept = []
            for ri, (sms, per) in enumerate(per_rep):
                have = sms if sms is not None else _sms_of(reports[ri])
                k = max(1, int(len(have) * max_events / n))
                idx = np.round(np.linspace(0, len(have) - 1, k)).astype(int) if have else np.zeros(0, int)
                chosen = [have[i] for i in sorted(set(idx.tolist()))]
                kept.append(chosen)
                per_rep[ri] = (chosen, per)
            notes.append("too many events for one file: kept SMs " +
                         "; ".join(", ".join(map(str, c)) for c in kept) + " (every warp of these SMs)")
    events: list[dict] = []
    meta: list[dict] = []
    named: set = set()
    offset_us = 0.0
    for ri, (rep, (sms, per)) in enumerate(zip(reports, per_rep)):
        res = rep.engine
        clock = rep.config.chip.sm_clock_mhz
        kern = {"name": rep.kernel, "ph": "X", "pid": kpid, "tid": 0, "ts": round(offset_us, _DIGITS),
                "dur": round(float(res.cycles) / clock, _DIGITS), "cat": "kernel",
                "args": {"kernel": rep.kernel, "gpu": rep.gpu, "grid": list(rep.context.get("grid", [])),
                         "block": list(rep.context.get("block", [])), "cycles": float(res.cycles), "step": ri}}
        events.append(kern)
        if per:
            places = place_warps(rep, sms)
            keep = None if sms is None else set(sms)
            for uid, recs in per.items():
                sm = places.sm.get(uid)
                if sm is None or (keep is not None and sm not in keep):
                    continue
                tid = places.slot(uid)
                if (sm, tid) not in named:
                    named.add((sm, tid))
                    meta.append({"name": "thread_name", "ph": "M", "pid": sm, "tid": tid, "ts": 0,
                                 "args": {"name": f"SP {places.sub[uid]} slot {places.row[uid]}"}})
                    meta.append({"name": "thread_sort_index", "ph": "M", "pid": sm, "tid": tid, "ts": 0,
                                 "args": {"sort_index": tid}})
                if sm not in named:
                    named.add(sm)
                    meta.append({"name": "process_name", "ph": "M", "pid": sm, "tid": 0, "ts": 0,
                                 "args": {"name": f"SM {sm}"}})
                    meta.append({"name": "process_sort_index", "ph": "M", "pid": sm, "tid": 0, "ts": 0,
                                 "args": {"sort_index": sm}})
                cta, w_in = res.warps[uid][0], res.warps[uid][1]
                for t0, t1, name, cat, static, cnt in recs:
                    ts = round(offset_us + t0 / clock, _DIGITS)
                    te = round(offset_us + t1 / clock, _DIGITS)
                    args = {"cta": cta, "warp": w_in}
                    if static:
                        args.update(static)
                    if cnt > 1:
                        args["intervals"] = cnt
                    events.append({"name": name, "cat": cat, "ph": "X", "pid": sm, "tid": tid, "ts": ts,
                                   "dur": round(te - ts, _DIGITS), "args": args})
        offset_us = kern["ts"] + kern["dur"]
    if reports:
        meta.append({"name": "process_name", "ph": "M", "pid": kpid, "tid": 0, "ts": 0, "args": {"name": "kernels"}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": kpid, "tid": 0, "ts": 0,
                     "args": {"sort_index": -1}})
        meta.append({"name": "thread_name", "ph": "M", "pid": kpid, "tid": 0, "ts": 0,
                     "args": {"name": "launches"}})
    events.sort(key=lambda e: (e["pid"], e["tid"], e["ts"]))
    return {"traceEvents": meta + events, "displayTimeUnit": "ns",
            "otherData": {"producer": "gpusim", "kernels": [r.kernel for r in reports],
                          "gpu": reports[0].gpu if reports else "",
                          "states": {k: label for k, label, _ in CATEGORIES}, "notes": notes}}


def _sms_of(rep) -> list[int]:
    return sorted({sm for _, sm, _, _ in rep.engine.cta_spans})


def chrome_trace_events(reports, max_sms: int | None = None, max_events: int | None = DEFAULT_MAX_EVENTS
                        ) -> list[dict]:
    """Just the events of ``chrome_trace``."""
    return chrome_trace(reports, max_sms, max_events)["traceEvents"]


def write_chrome_trace(reports, path, max_sms: int | None = None,
                       max_events: int | None = DEFAULT_MAX_EVENTS) -> None:
    """Write ``reports``' warp timelines (``record_timeline=True``) as a Chrome trace JSON file."""
    text = json.dumps(chrome_trace(reports, max_sms, max_events), separators=(",", ":"))  # the C encoder
    with open(path, "w") as f:
        f.write(text)
