#!/usr/bin/env python3
"""Fail when the files of a crate import each other in a circle (issues 18 and 30: the house
stays layered, so each file can be read, tested and moved with only what it imports below it).

What is checked, per crate (crates/<crate>/src):
- A node is one .rs FILE (`foo.rs`, `foo/mod.rs` and the files of folder modules alike); its
  module path comes from where it lies (`wire/stream.rs` is `crate::wire::stream`) or from the
  `#[path = "..."] mod x;` that declares it.
- An edge A -> B is every import of B by A: `use` trees (nested `{}` groups over several lines,
  `self`, `as` aliases, globs), inline paths in code (`crate::a::b::f(..)`), `super::` (any
  number), `self::`, a child module declared in the file (`mod x;` then `x::y`) and names
  bound by an earlier `use` (`use crate::wire; wire::stream::f()`). A path goes to the deepest
  module that has a file (`crate::wire::stream::measure` -> `wire/stream.rs`); a name that a
  module only re-exports or imports (`crate::Engine`, with `pub use engine::{Engine, ..}` in
  lib.rs) goes to where that `use` points, following chains, never to the re-exporting hub.
- A hub is not an importer: a `mod x;` declaration and a `pub use` / `pub(crate) use` of the
  file's own child modules make no edge (otherwise every mod.rs would form a circle with its
  children), unless the file's own code uses the re-exported name. A plain `use` of a child in a
  mod.rs with real code is an edge.
- Test code may reach anywhere and is left out where it really is: `#[cfg(test)]` (or
  `cfg(all(test, ..))`) and `#[test]` items, found by brace matching, so code after a test module
  is still read; files declared by `#[cfg(test)] mod x;`, files named `tests.rs` or `*_tests.rs`,
  files under a `tests/` folder of src and files starting `#![cfg(test)]` are no nodes.
- Comments and string/char literals are blanked before anything is read.
- No exemption: every file is its own node, the engine adapters and their dispatcher included
  (their shared types live in `engine/dialect.rs`, `discovery.rs` and `options.rs`, below both).

Rooms: a top-level folder of a crate's src whose mod.rs says `//! May import: ...` is a room
(crates/client: machine/, wire/, server/, prompts/, progress/, cells/). The first sentence after
`May import:` names, in backticks, the rooms its files may import; an import of any other room
is reported (`wire/` never imports `cells/`), so the rule each room's comment states is checked,
not only read. A room that names no room (`llmib-core` only) may import none.

Each strongly connected component of more than one node is reported once, with one actual circle
through it and the import that makes each step (file:line and the path as written), so a
developer can see which import to break. Exit 1 if any, else print `no module import cycles`.

Usage: python3 scripts/module-cycles.py [root]   (root defaults to .)
Limits: macro-generated paths (`$crate::`) are not followed; a crate with both lib.rs and main.rs
is checked from lib.rs (main.rs is another crate, importing the library by name).
"""
import os
import re
import sys
from collections import deque

# Comments, string literals (normal, byte, C, raw with any number of #) and char literals; found
# leftmost-first, so `"//"` is a string and `// "x"` a comment. Lifetimes ('a) never match.
LEX = re.compile(
    r"""(?P<lc>//[^\n]*)"""
    r"""|(?P<bc>/\*)"""
    r"""|(?P<raw>[bc]?r(?P<h>\#*)"(?P<rawbody>[\s\S]*?)"(?P=h))"""
    r"""|(?P<str>[bc]?"(?P<body>(?:[^"\\]|\\[\s\S])*)")"""
    r"""|(?P<chr>b?'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,6}\}|[^xu\n]))')"""
)
TOKEN = re.compile(r"::|[A-Za-z_]\w*|\d\w*|\S")
IDENT = re.compile(r"[A-Za-z_]\w*\Z")
STR_TOKEN = re.compile(r"__lit_str_(\d+)__\Z")
DEFINED = re.compile(r"\b(?:fn|struct|enum|trait|type|const|static|union|mod|macro_rules\s*!)"
                     r"\s+([A-Za-z_]\w*)")
NOT_A_USE = {"let", "mut", "ref", "fn", "struct", "enum", "trait", "type", "const", "static",
             "union", "mod"}
VISIT = {"{", "}", "mod", "use", "pub", "::"}


def blank(text):
    """The text with comments dropped and literals replaced by placeholders (`__lit_str_N__`
    for strings, kept in a list for `#[path]`, `__lit_chr__` for chars); newlines are kept so
    line numbers stay right."""
    out, strings, pos = [], [], 0
    while True:
        m = LEX.search(text, pos)
        if not m:
            out.append(text[pos:])
            break
        out.append(text[pos:m.start()])
        if m.group("lc") is not None:
            end = m.end()
        elif m.group("bc") is not None:  # block comments nest in Rust
            depth, end = 1, m.end()
            while depth and end < len(text):
                if text.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif text.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
        else:
            end = m.end()
            if m.group("chr") is not None:
                out.append(" __lit_chr__ ")
            else:
                body = m.group("rawbody") if m.group("raw") is not None else m.group("body")
                out.append(f" __lit_str_{len(strings)}__ ")
                strings.append(body)
        out.append("\n" * text.count("\n", m.start(), end))
        pos = end
    return "".join(out), strings


def test_only(pred):
    """Whether a cfg predicate (its tokens) holds only under test: `test`, `all(.., test, ..)`."""
    if pred == ["test"]:
        return True
    if len(pred) > 2 and pred[0] == "all" and pred[1] == "(" and pred[-1] == ")":
        args, depth, cur = [], 0, []
        for t in pred[2:-1]:
            if t == "," and depth == 0:
                args.append(cur)
                cur = []
                continue
            depth += (t in "([{") - (t in ")]}")
            cur.append(t)
        args.append(cur)
        return any(test_only(a) for a in args)
    return False


def match_close(toks, i):
    """Index of the bracket closing the one at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def item_end(toks, j):
    """Index of the last token of the item starting at toks[j]: its `;` or its closing `}`."""
    depth = 0
    k = j
    while k < len(toks):
        t = toks[k]
        if t in ("(", "["):
            depth += 1
        elif t in (")", "]"):
            depth -= 1
        elif t == "{" and depth == 0:
            return match_close(toks, k)
        elif t == "{":
            depth += 1
        elif t == "}":
            if depth == 0:  # end of the enclosing block: the item ended before it
                return k - 1
            depth -= 1
        elif t == ";" and depth == 0:
            return k
        k += 1
    return len(toks) - 1


def mod_decl(toks, j):
    """(name, is_block) when an item `[pub[(..)]] mod NAME ;|{` starts at toks[j], else None."""
    if j < len(toks) and toks[j] == "pub":
        j += 1
        if j < len(toks) and toks[j] == "(":
            j = match_close(toks, j) + 1
    if j + 2 < len(toks) and toks[j] == "mod" and IDENT.match(toks[j + 1]):
        if toks[j + 2] in (";", "{"):
            return toks[j + 1], toks[j + 2] == "{"
    return None


class Source:
    """One file, read: what it declares, imports and names, test code cut."""

    def __init__(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            clean, strings = blank(f.read())
        toks, lines = [], []
        for number, text in enumerate(clean.split("\n"), 1):
            found = TOKEN.findall(text)
            if found:
                toks += found
                lines += [number] * len(found)
        self.inner_test = False
        self.mods = []  # (inline ctx, name, path attr or None, test?)
        self.uses = []  # (ctx, pub?, line, [(segments, binding or None or '*')])
        self.paths = []  # (ctx, line, segments)
        self.defined = set(DEFINED.findall(clean))  # names of items defined here (fn, struct..)
        self.inline = set()  # inline module ctxs (tuples of names, relative to the file)
        self._names = None
        self._use_spans = []  # (first, last) kept-token index of each use declaration
        cut = []  # (first, last) token index of each test item
        path_attr = {}  # token index of an item -> its #[path] string

        # Pass 1: attributes; cut test items, note #[path].
        n = len(toks)
        i = 0
        for h in [k for k, x in enumerate(toks) if x == "#"]:
            if h < i or h + 1 >= n:
                continue
            i = h
            if toks[i + 1] == "!" and i + 2 < n and toks[i + 2] == "[":
                close = match_close(toks, i + 2)
                body = toks[i + 3:close]
                if body[:2] == ["cfg", "("] and test_only(body[2:-1]):
                    self.inner_test = True
                i = close + 1
                continue
            if toks[i + 1] != "[":
                continue
            start, test, path = i, False, None
            while i + 1 < n and toks[i] == "#" and toks[i + 1] == "[":
                close = match_close(toks, i + 1)
                body = toks[i + 2:close]
                if body == ["test"] or (body[:2] == ["cfg", "("] and test_only(body[2:-1])):
                    test = True
                if len(body) == 3 and body[0] == "path" and body[1] == "=":
                    lit = STR_TOKEN.match(body[2])
                    if lit:
                        path = strings[int(lit.group(1))]
                i = close + 1
            if i >= n:
                break
            if path is not None:
                path_attr[i] = path
            if test:
                decl = mod_decl(toks, i)
                end = item_end(toks, i)
                if decl and not decl[1]:
                    # a test file's declaration (its file is no node), at the file's top level
                    self.mods.append(((), decl[0], path, True))
                cut.append((start, end))
                i = end + 1
            # else: go on inside the item (a test module may sit in an inline module, a fn, ..)

        # Pass 2: the kept tokens: module declarations, uses, paths (only the tokens that can
        # start one are visited).
        if cut:
            keep, last = [], 0
            for first, end in cut:
                keep.extend(range(last, first))
                last = end + 1
            keep.extend(range(last, n))
            t = [toks[k] for k in keep]
            ln = [lines[k] for k in keep]
            item_at = {j: path_attr[k] for j, k in enumerate(keep) if k in path_attr}
        else:
            t, ln, item_at = toks, lines, path_attr
        self.tokens = t
        n = len(t)
        stack = []  # (inline module name, brace depth inside it)
        depth = 0
        skip_to = 0
        for i in [k for k, x in enumerate(t) if x in VISIT]:
            if i < skip_to:
                continue
            tok = t[i]
            if tok == "{":
                depth += 1
                continue
            if tok == "}":
                if stack and stack[-1][1] == depth:
                    stack.pop()
                depth -= 1
                continue
            ctx = tuple(s[0] for s in stack)
            if tok == "mod":
                if i + 2 < n and IDENT.match(t[i + 1]) and t[i + 2] in (";", "{"):
                    if t[i + 2] == "{":
                        stack.append((t[i + 1], depth + 1))
                        self.inline.add(ctx + (t[i + 1],))
                    else:
                        # its #[path] sits before `pub(..)`/`mod`: look back to the item start
                        j = i
                        while j > 0 and t[j - 1] in ("pub", "(", ")", "crate", "super", "in",
                                                     "self"):
                            j -= 1
                        self.mods.append((ctx, t[i + 1], item_at.get(j), False))
                continue
            if tok == "use":
                if i == 0 or t[i - 1] != ".":
                    pub = i > 0 and (t[i - 1] == "pub" or (t[i - 1] == ")" and
                                                           pub_paren(t, i - 1)))
                    items, end = parse_use(t, i + 1)
                    if items:
                        self.uses.append((ctx, pub, ln[i], items))
                    self._use_spans.append((i, end))
                    skip_to = end + 1
                continue
            if tok == "pub":
                if i + 2 < n and t[i + 1] == "(" and t[i + 2] == "in":
                    skip_to = match_close(t, i + 1) + 1  # pub(in path): a visibility
                continue
            # `::`: a path starts at the identifier before it, unless that is inside a path
            k = i - 1
            if k < 0 or not IDENT.match(t[k]) or (k > 0 and t[k - 1] in ("::", "$", ".")):
                continue
            segs, j = [t[k]], i
            while j + 1 < n and t[j] == "::" and IDENT.match(t[j + 1]):
                segs.append(t[j + 1])
                j += 2
            self.paths.append((ctx, ln[k], segs))
            skip_to = j

    @property
    def names(self):
        """Identifiers the code uses as names (not a method/field after `.`, not being defined
        or bound, not a field label before `:`); use declarations left out."""
        if self._names is None:
            t = list(self.tokens)
            for first, last in self._use_spans:
                t[first:last + 1] = [";"] * (last + 1 - first)
            self._names = {
                x for k, x in enumerate(t)
                if IDENT.match(x) and (k == 0 or (t[k - 1] not in NOT_A_USE and
                                                  t[k - 1] not in (".", "::")))
                and not (k + 1 < len(t) and t[k + 1] == ":")
            }
        return self._names


def pub_paren(t, close):
    """Whether the `)` at t[close] ends a `pub(..)` visibility."""
    depth = 0
    for j in range(close, -1, -1):
        if t[j] == ")":
            depth += 1
        elif t[j] == "(":
            depth -= 1
            if depth == 0:
                return j > 0 and t[j - 1] == "pub"
    return False


def parse_use(t, i):
    """The paths of the use tree starting at t[i], as [(segments, binding)], and the index of its
    `;`. binding: the name it brings into scope, '*' for a glob, None for `as _`. A leading `::`
    or `$crate` makes segments start with '::' (not this crate)."""
    items = []

    def tree(i, prefix):
        segs = list(prefix)
        if i < len(t) and t[i] == "$":
            segs.append("::")
            i += 1
        while i < len(t):
            tok = t[i]
            if tok == "::":
                if not segs:
                    segs.append("::")
                i += 1
            elif tok == "{":
                i += 1
                while i < len(t) and t[i] != "}":
                    if t[i] == ",":
                        i += 1
                        continue
                    j = tree(i, segs)
                    if j == i:  # not understood: give up on this group
                        return skip(i)
                    i = j
                return i + 1
            elif tok == "*":
                items.append((segs, "*"))
                return i + 1
            elif IDENT.match(tok):
                segs.append(tok)
                i += 1
                if i < len(t) and t[i] == "::":
                    continue
                bind = segs[-1]
                if i + 1 < len(t) and t[i] == "as":
                    bind = None if t[i + 1] == "_" else t[i + 1]
                    i += 2
                if segs[-1] == "self":
                    segs = segs[:-1]
                    if bind == "self":
                        bind = segs[-1] if segs else None
                items.append((segs, bind))
                return i
            else:
                return i
        return i

    def skip(i):
        while i < len(t) and t[i] != ";":
            i += 1
        return i

    end = tree(i, [])
    end = skip(end)
    return [(s, b) for s, b in items if s and s[0] != "::"], end


class Crate:
    """The files of one crate, their module paths, and the imports between them."""

    def __init__(self, name, src):
        self.name, self.src = name, src
        self.files = {}  # rel path -> Source
        for dp, dirs, fs in os.walk(src):
            dirs.sort()
            for f in sorted(fs):
                if f.endswith(".rs"):
                    full = os.path.join(dp, f)
                    rel = os.path.relpath(full, src).replace(os.sep, "/")
                    if rel.startswith("bin/") or (rel == "main.rs" and
                                                   os.path.exists(os.path.join(src, "lib.rs"))):
                        continue
                    self.files[rel] = Source(full)
        self._module_paths()
        self._bind_memo, self._busy = {}, set()

    # --- where each file sits in the module tree -------------------------------------------
    def _module_paths(self):
        def fs_path(rel):
            parts = rel[:-3].split("/")
            if parts in (["lib"], ["main"]):
                return ()
            if parts[-1] == "mod":
                parts = parts[:-1]
            return tuple(parts)

        self.modpath = {rel: fs_path(rel) for rel in self.files}
        test_mods = set()
        # #[path] and #[cfg(test)] declarations: (declaring file, ctx, name) -> target file.
        for _ in range(3):  # a #[path] file may itself declare one; settle in a few rounds
            for rel, s in self.files.items():
                base = self.modpath[rel]
                d = os.path.dirname(rel)
                stem = os.path.basename(rel)[:-3]
                mod_rs = stem in ("mod", "lib", "main")
                for ctx, name, path, test in s.mods:
                    if path is not None:
                        target = os.path.normpath(os.path.join(d, *ctx, path)).replace(os.sep, "/")
                        cands = [target]
                    else:
                        folder = os.path.join(d, *([] if mod_rs else [stem]), *ctx, name)
                        folder = folder.replace(os.sep, "/").lstrip("/")
                        cands = [folder + ".rs", folder + "/mod.rs"]
                    mp = base + ctx + (name,)
                    for c in cands:
                        if c in self.files:
                            if path is not None:
                                self.modpath[c] = mp
                            break
                    if test:
                        test_mods.add(mp)
        self.test = set()
        for rel, s in self.files.items():
            parts = rel.split("/")
            mp = self.modpath[rel]
            if (parts[-1] == "tests.rs" or parts[-1].endswith("_tests.rs") or "tests" in parts[:-1]
                    or s.inner_test or any(mp[:k] in test_mods for k in range(1, len(mp) + 1))):
                self.test.add(rel)
        self.mod2file = {}
        self.children = {}
        for rel in sorted(self.files, key=lambda r: (r in self.test, r.endswith("main.rs"))):
            mp = self.modpath[rel]
            if rel in self.test:
                continue
            self.mod2file.setdefault(mp, rel)
            for k in range(len(mp)):
                self.children.setdefault(mp[:k], set()).add(mp[k])
        for rel, s in self.files.items():
            if rel in self.test:
                continue
            mp = self.modpath[rel]
            for ctx in s.inline:
                self.mod2file.setdefault(mp + ctx, rel)
                self.children.setdefault(mp + ctx[:-1], set()).add(ctx[-1])
            for ctx, name, _, test in s.mods:
                if not test:
                    self.children.setdefault(mp + ctx, set()).add(name)
        # The `use` bindings of each module: module path -> {name: (segments, ctx)}, and globs.
        self.bindings, self.globs = {}, {}
        for rel, s in self.files.items():
            if rel in self.test:
                continue
            mp = self.modpath[rel]
            for ctx, _, _, items in s.uses:
                for segs, bind in items:
                    if bind == "*":
                        self.globs.setdefault(mp + ctx, []).append(segs)
                    elif bind:
                        self.bindings.setdefault(mp + ctx, {}).setdefault(bind, segs)

    # --- resolving a path ---------------------------------------------------------------------
    def absolute(self, ctx, segs):
        """The crate-absolute module path of `segs` written in module `ctx`, or None when it is
        not in this crate (std, another crate, a local name)."""
        first = segs[0]
        if first == "crate":
            return tuple(segs[1:])
        if first in ("self", "super"):
            base, k = list(ctx), 1 if first == "self" else 0
            while k < len(segs) and segs[k] == "super":
                if not base:
                    return None
                base.pop()
                k += 1
            return tuple(base) + tuple(segs[k:])
        if first in self.children.get(ctx, ()):
            return tuple(ctx) + tuple(segs)
        b = self.binding(ctx, first)
        return None if b is None else b + tuple(segs[1:])

    def binding(self, module, name):
        """Where the name that `module` imports (or re-exports) as `name` points, or None."""
        key = (module, name)
        if key in self._bind_memo:
            return self._bind_memo[key]
        if key in self._busy:
            return None
        self._busy.add(key)
        out = None
        segs = self.bindings.get(module, {}).get(name)
        if segs is not None:
            out = self.absolute(module, segs)
        elif name not in self._defined(module):
            for g in self.globs.get(module, ()):
                base = self.absolute(module, g)
                if base is None:
                    continue
                if name in self.children.get(base, ()):
                    out = base + (name,)
                elif name in self.bindings.get(base, {}) or self.globs.get(base):
                    out = self.binding(base, name)
                if out is None and name in self._defined(base):
                    out = base + (name,)
                if out is not None:
                    break
        self._busy.discard(key)
        self._bind_memo[key] = out
        return out

    def _defined(self, module):
        rel = self.mod2file.get(module)
        return self.files[rel].defined if rel else ()

    def locate(self, path, seen=None):
        """The file that a crate-absolute path lands in: the deepest module with a file, or where
        a name it only imports/re-exports comes from."""
        seen = seen or set()
        for k in range(len(path), -1, -1):
            if path[:k] in self.mod2file:
                break
        else:
            return None
        module, rest = path[:k], path[k:]
        if rest and rest[0] not in self.children.get(module, ()):
            target = self.binding(module, rest[0])
            if target is not None and target + rest[1:] not in seen:
                seen.add(path)
                found = self.locate(target + rest[1:], seen)
                if found:
                    return found
        return self.mod2file[module]

    # --- the graph -----------------------------------------------------------------------------
    def edges(self):
        """{node: {node: (file, line, import as written)}}, the first import making each edge."""
        out = {}

        def add(rel, line, label, target):
            if target is None or target in self.test:
                return
            a, b = rel, target
            if a == b:
                return
            prev = out.setdefault(a, {}).get(b)
            if prev is None or (prev[0], prev[1]) > (rel, line):
                out[a][b] = (rel, line, label)

        for rel in sorted(self.files):
            if rel in self.test:
                continue
            s, mp = self.files[rel], self.modpath[rel]
            for ctx, pub, line, items in s.uses:
                for segs, bind in items:
                    ab = self.absolute(mp + ctx, segs)
                    if ab is None:
                        continue
                    text = "::".join(segs) + ("::*" if bind == "*" else "")
                    if pub and len(ab) > len(mp) and ab[:len(mp)] == mp:
                        # a hub re-exporting its own children: an edge only if its code uses it
                        if bind and bind != "*" and bind in s.names:
                            add(rel, line, f"{bind}, re-exported from {text}", self.locate(ab))
                        continue
                    add(rel, line, text, self.locate(ab))
            for ctx, line, segs in s.paths:
                ab = self.absolute(mp + ctx, segs)
                if ab is not None:
                    add(rel, line, "::".join(segs), self.locate(ab))
        return out


def components(edges):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    nodes = sorted(set(edges) | {w for v in edges.values() for w in v})
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
    return sorted(comps)


def shortest_cycle(edges, comp, start):
    """A shortest circle from start through the component, as a list of nodes (start at both
    ends)."""
    inside = set(comp)
    prev, queue = {start: None}, deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges.get(v, ())):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start, start]  # not reached: every node of a component lies on a circle


MAY_IMPORT = re.compile(r"May import:(.*?)(?:\.\s|\.$|$)", re.S)


def rooms(src):
    """{room folder: set of rooms it may import}, from each top-level folder's mod.rs comment."""
    out = {}
    for name in sorted(os.listdir(src)):
        mod = os.path.join(src, name, "mod.rs")
        if not os.path.isfile(mod):
            continue
        with open(mod, encoding="utf-8") as f:
            doc = " ".join(l.strip()[3:].strip() for l in f if l.strip().startswith("//!"))
        m = MAY_IMPORT.search(doc)
        if m:
            out[name] = set(re.findall(r"`([\w-]+)`", m.group(1)))
    return {r: allowed & set(out) for r, allowed in out.items()}


def room_breaches(name, src, edges):
    """Report lines for every import of a room that its mod.rs does not allow."""
    allowed, bad = rooms(src), []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            ra, rb = a.split("/")[0], b.split("/")[0]
            if ra in allowed and rb in allowed and ra != rb and rb not in allowed[ra]:
                rel, line, label = edges[a][b]
                may = ", ".join(f"{r}/" for r in sorted(allowed[ra])) or "no other room"
                bad.append(f"crates/{name}: room {ra}/ imports {rb}/ (it may import {may}): "
                           f"{a} -> {b} ({label}, at {rel}:{line})")
    return bad


def check(root):
    """The report lines for every crate under root/crates: per component, one circle in the
    heading, the import making each step, and (when the component is bigger) a circle through
    each file the first one misses, so that every file in it is shown with its imports."""
    bad = []
    crates_dir = os.path.join(root, "crates")
    for name in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, name, "src")
        if not os.path.isdir(src):
            continue
        crate = Crate(name, src)
        edges = crate.edges()
        bad.extend(room_breaches(name, src, edges))
        for comp in components(edges):
            cyc = shortest_cycle(edges, comp, comp[0])
            bad.append(f"crates/{name}: files import each other in a circle: {' -> '.join(cyc)}")
            shown, covered, indent = set(), set(cyc), "    "
            while True:
                for a, b in zip(cyc, cyc[1:]):
                    if (a, b) not in shown:
                        shown.add((a, b))
                        rel, line, label = edges[a][b]
                        bad.append(f"{indent}{a} -> {b} ({label}, at {rel}:{line})")
                rest = [v for v in comp if v not in covered]
                if not rest:
                    break
                if indent == "    ":
                    bad.append(f"    the circle holds {len(comp)} files: {', '.join(comp)}; "
                               "through the others:")
                    indent = "      "
                cyc = shortest_cycle(edges, comp, rest[0])
                covered.update(cyc)
                bad.append(f"    {' -> '.join(cyc)}")
    return bad


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    if not os.path.isdir(os.path.join(root, "crates")):
        print(f"module-cycles: no crates/ folder under {os.path.abspath(root)}", file=sys.stderr)
        return 2
    bad = check(root)
    print("\n".join(bad) if bad else "no module import cycles")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
