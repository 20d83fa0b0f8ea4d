#!/usr/bin/env python3
"""Fails on an import cycle among the sibling modules of a crate's non-test code.

Usage: hack/import-cycles.py SRC_DIR...   (each a crate's src/ directory)

An edge a -> b is recorded when a file of module a names a path (a `use`, or a `crate::`,
`super::` or `self::` path) that resolves inside module b. Both ends are lifted to the
children of their closest common ancestor, so a child using what its parent module
declares is no edge, and what remains must be acyclic at every level of the tree. Test
files and `#[cfg(test)]` items are left out. Each cycle is printed with the files that
make its edges.

cargo-modules answers the same question but builds rust-analyzer's libraries to do it,
minutes on a CI machine for a check that takes a fraction of a second here.
"""
import os
import re
import sys
from collections import defaultdict

TEST_FILE = re.compile(r"(^|/)(tests?|testkit|[a-z_]*_tests|test_[a-z_]*)(\.rs|/)")
USE = re.compile(r"\buse\s+([^;]+);")
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def module_of(src, file):
    parts = os.path.relpath(file, src)[:-3].split("/")
    return tuple(parts[:-1]) if parts[-1] in ("mod", "lib", "main") else tuple(parts)


def without_test_items(text):
    """The text with every `#[cfg(test)]` item cut out (a `mod x;` or a braced block)."""
    out, at = [], 0
    while (start := text.find("#[cfg(test)]", at)) >= 0:
        out.append(text[at:start])
        brace, semi = text.find("{", start), text.find(";", start)
        if semi >= 0 and (brace < 0 or semi < brace):
            at = semi + 1
            continue
        depth, at = 0, brace
        while at < len(text):
            depth += {"{": 1, "}": -1}.get(text[at], 0)
            at += 1
            if depth == 0:
                break
    out.append(text[at:])
    return "".join(out)


def use_paths(tree):
    """`a::{b, c::{d}}` as [[a, b], [a, c, d]]."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree.split("::")]
    prefix = [p for p in tree[:brace].split("::") if p]
    items, depth, item = [], 0, ""
    for ch in tree[brace + 1 : tree.rfind("}")]:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += ch
    items.append(item)
    return [prefix + path for item in items if item for path in use_paths(item)]


def edges_of(src):
    files = [os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs")]
    modules = {module_of(src, f): f for f in files}
    edges = defaultdict(set)
    for module, file in modules.items():
        if TEST_FILE.search(os.path.relpath(file, src)):
            continue
        text = re.sub(r"//.*", "", without_test_items(open(file, encoding="utf-8").read()))
        paths = [p for m in USE.finditer(text) for p in use_paths(m.group(1))]
        paths += [m.group(1).split("::") for m in PATH.finditer(text)]
        for path in paths:
            if not path or path[0] not in ("crate", "super", "self"):
                continue
            base = [] if path[0] == "crate" else list(module)
            rest = path[1:] if path[0] == "crate" else path
            while rest and rest[0] in ("super", "self"):
                base = base[:-1] if rest[0] == "super" else base
                rest = rest[1:]
            target = next((tuple(base + rest[:n]) for n in range(len(rest), -1, -1) if tuple(base + rest[:n]) in modules), None)
            if target is None:
                continue
            common = 0
            while common < min(len(module), len(target)) and module[common] == target[common]:
                common += 1
            if common < len(module) and common < len(target):
                edges[module[: common + 1]].add((target[: common + 1], file))
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {a: {b for b, _ in bs} for a, bs in edges.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def main(dirs):
    failed = False
    for src in (d.rstrip("/") for d in dirs):
        edges = edges_of(src)
        for component in cycles(edges):
            failed = True
            print(f"{src}: import cycle: {', '.join('::'.join(m) for m in component)}")
            for a in component:
                for b, file in sorted(edges[a]):
                    if b in component:
                        print(f"    {'::'.join(a)} -> {'::'.join(b)} ({os.path.relpath(file, src)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
