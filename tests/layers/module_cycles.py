#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Find circles between the files of one module: a.c calls into b.c and b.c, directly or
through others of the same module, calls back into a.c. Files in a circle cannot be read,
tested or replaced one at a time, so the only module allowed one is the NIC's engine (src/nic,
whose requester, responder and completer call each other by design: docs/DESIGN.md, piece 3).

Usage: module_cycles.py [--allow MODULE]... OBJECT...
A file's module is the directory its object was compiled from (the part of the object's path
after the target's "NAME.dir/", or the target itself for a module built as its own library).
Arguments may also be ';'-separated lists, as CMake's $<TARGET_OBJECTS:...> gives them.
Exit status: 0 no circle, 1 a circle (each printed), 2 usage error or nm failed.
"""
import os
import re
import subprocess
import sys


def module_and_file(obj):
    """("link", "udp.c") for .../gpunic.dir/link/udp.c.o; ("gpunic_exp", "bench.c") for
    .../gpunic_exp.dir/bench.c.o."""
    m = re.search(r"([^/]+)\.dir/(.+)\.o(bj)?$", obj)
    if not m:
        return None, None
    target, rest = m.group(1), os.path.normpath(m.group(2))
    head, name = os.path.split(rest)
    return (head or target), name


def symbols(objs):
    """{object: (the global symbols it defines, those it uses)}, from one run of nm."""
    out = subprocess.run(["nm", "-P", "-A"] + objs, capture_output=True, text=True,
                         check=True).stdout
    table = {obj: (set(), set()) for obj in objs}
    for line in out.splitlines():
        obj, _, rest = line.rpartition(": ")
        parts = rest.split()
        if obj not in table or len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            table[obj][1].add(name)
        elif kind.isupper():  # global definitions; lower case kinds are the file's own
            table[obj][0].add(name)
    return table


def circles(graph):
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv):
    allow, objs = set(), []
    args = iter(argv)
    for a in args:
        if a == "--allow":
            allow.add(next(args, ""))
        else:
            objs.extend(x for x in a.split(";") if x)
    if not objs:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        table = symbols(objs)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"module_cycles: nm: {e}", file=sys.stderr)
        return 2
    files = {}  # (module, file) -> (defined, used)
    for obj in objs:
        mod, name = module_and_file(obj)
        if not mod:
            print(f"module_cycles: cannot tell the module of {obj}", file=sys.stderr)
            return 2
        files[(mod, name)] = table[obj]
    bad = 0
    for mod in sorted({m for m, _ in files}):
        mine = {f: s for (m, f), s in files.items() if m == mod}
        owner = {}
        for f, (defined, _) in mine.items():
            for sym in defined:
                owner[sym] = f
        graph = {f: {owner[s] for s in used if s in owner and owner[s] != f}
                 for f, (_, used) in mine.items()}
        for comp in circles(graph):
            if mod in allow:
                continue
            bad += 1
            calls = "; ".join(f"{a} -> {', '.join(sorted(graph[a] & set(comp)))}" for a in comp)
            print(f"module {mod}: files in a circle: {' '.join(comp)} ({calls})")
    print(f"module_cycles: {len(files)} files, {len({m for m, _ in files})} modules, "
          f"{bad} circle{'s' if bad != 1 else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
