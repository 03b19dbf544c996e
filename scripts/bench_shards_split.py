#!/usr/bin/env python3
"""Splits a sharded run's wall time into its parts, for scripts/bench-shards.sh.

  bench_shards_split.py CASE ONE_MACHINE_S DIR SHARDS LABEL   -> one JSON line
  bench_shards_split.py --table ROWS.jsonl                    -> the Markdown table

DIR holds shard-0 … shard-(N-1), merged/ and `times` (launch, --start-at, merge end). The
slots come from the shards' rows (`shard.slot`: each slot's instants and, per shard, when its
preparation was done); a build from before slots were recorded has none, and only its totals
are given. The last slot's drain limit is never waited out (each shard ends once its own
requests have), so the time from the last cell's close to the merged run is the tail.
"""
import datetime
import json
import os
import sys


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def split(case, one_s, d, shards, label):
    launch, start_at, end = open(os.path.join(d, "times")).read().split()
    launch, end = float(launch), float(end)
    start = datetime.datetime.strptime(start_at, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    slots = {}
    for i in range(int(shards)):
        for r in rows(os.path.join(d, f"shard-{i}", "cells.jsonl")):
            rec = (r.get("shard") or {}).get("slot")
            if not rec:
                continue
            s = rec["slot"]
            got = slots.setdefault(s["start_unix_ns"], {"slot": s, "ready": 0})
            got["ready"] = max(got["ready"], rec.get("ready_ns") or 0)
    merged = rows(os.path.join(d, "merged", "cells.jsonl"))
    out = {
        "case": case, "label": label, "one_s": float(one_s), "sharded_s": end - launch,
        "lead_s": start - launch, "cells": len(merged),
        "valid": sum(1 for r in merged if r["status"] == "valid"),
        "complete": sum(1 for r in merged if (r.get("merged") or {}).get("complete")),
    }
    if slots:
        order = [slots[k] for k in sorted(slots)]
        sec = lambda a, b: sum((x["slot"][b] - x["slot"][a]) / 1e9 for x in order)
        out.update({
            "prep_s": sec("start_unix_ns", "origin_unix_ns"),
            "prep_used_s": sum(x["ready"] / 1e9 for x in order),
            "ramp_s": sec("origin_unix_ns", "open_unix_ns"),
            "body_s": sec("open_unix_ns", "close_unix_ns"),
            # Every slot's drain limit but the last's.
            "drain_s": sec("close_unix_ns", "end_unix_ns")
            - (order[-1]["slot"]["end_unix_ns"] - order[-1]["slot"]["close_unix_ns"]) / 1e9,
            "tail_s": end - order[-1]["slot"]["close_unix_ns"] / 1e9,
        })
    return out


def table(path):
    def f(v):
        return "—" if v is None else f"{v:,.1f}"
    print("| case | build | one machine, s | sharded, s | overhead | lead | prep (used) | ramps | "
          "windows, schedules | drains | tail | rows valid, complete |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows(path):
        over = (r["sharded_s"] - r["one_s"]) / r["one_s"] * 100
        prep = None if "prep_s" not in r else f"{r['prep_s']:,.1f} ({r['prep_used_s']:,.2f})"
        print(f"| {r['case']} | {r['label']} | {f(r['one_s'])} | {f(r['sharded_s'])} | {over:+.0f} % "
              f"| {f(r['lead_s'])} | {prep or '—'} | {f(r.get('ramp_s'))} | {f(r.get('body_s'))} "
              f"| {f(r.get('drain_s'))} | {f(r.get('tail_s'))} | {r['valid']}/{r['cells']}, "
              f"{r['complete']}/{r['cells']} |")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        print(json.dumps(split(*sys.argv[1:6])))
