#!/usr/bin/env python3
"""Fail when the modules of a crate import each other in a circle (issue 18: the house stays
layered). A module is a top-level file or folder under crates/*/src; an edge A -> B is any
`crate::B` path in A's files (unit tests aside, they may reach anywhere). The engine adapters
(client/src/engine/*) are one module here: inside it the adapters and their dispatcher may
refer to each other by design. Prints every cycle found; exit 1 if any."""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
bad = []
for crate in sorted(os.listdir(os.path.join(root, "crates"))):
    src = os.path.join(root, "crates", crate, "src")
    if not os.path.isdir(src):
        continue
    edges = {}
    for dp, _, fs in os.walk(src):
        rel = os.path.relpath(dp, src)
        for f in fs:
            if not f.endswith(".rs"):
                continue
            top = (rel.split(os.sep)[0] if rel != "." else f[:-3])
            if top in ("lib", "main", "tests") or "/tests" in dp or f.endswith("tests.rs"):
                continue
            text = open(os.path.join(dp, f), encoding="utf-8").read()
            # Unit tests may reach anywhere: cut the test module.
            text = re.split(r"#\[cfg\(test\)\]\s*\n\s*mod \w+", text)[0]
            # Comments (docs naming a module) are not imports.
            text = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))
            for m in re.finditer(r"\bcrate::(\w+)", text):
                if m.group(1) != top:
                    edges.setdefault(top, set()).add(m.group(1))
    # Find cycles with a DFS (report each strongly connected component once).
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
    def strong(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))
    for v in list(edges):
        if v not in index:
            strong(v)
    for c in comps:
        bad.append(f"crates/{crate}: modules import each other in a circle: {' <-> '.join(c)}")
print("\n".join(bad) if bad else "no module import cycles")
sys.exit(1 if bad else 0)
