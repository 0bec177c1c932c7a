#!/usr/bin/env python3
"""check_layers.py - fail when a file under src/ includes a header of a layer it may not use.

usage: check_layers.py SRC_DIR ARCHITECTURE_MD

The layers and what each may use are read from the table under "## Layers" in
docs/architecture.md (ctest's check_layers passes the repository's own copy): one row per
folder (`src/<layer>/`), the last column naming the layers it may use (other words there, such
as libc or libcurl, are libraries and ignored; "all of the above" is every layer in an earlier
row). A layer may use what the layers it names may use, in turn (sched names kube, kube names
formats, so sched may include formats' headers too): the same closure the link order of the
per-layer libraries allows. A folder under src/ that the table does not name is an error, so a
new layer has to be placed in the architecture first.

Includes are the quoted ones ("../kube/client.h", or "kube/client.h" from src/); system
headers (<...>) and generated ones (not under src/) are not checked. Prints one line per
offending include (file:line) and exits 1; 0 when there is none; 2 when the table cannot be
read (a missing file included: the table is part of the repository, so nothing skips).
"""
import os
import re
import sys


def read_layers(design_md):
    """[(layer, [layers it names])] in the table's order."""
    with open(design_md, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Layers[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        raise ValueError("no '## Layers' section")
    layers = []
    for line in m.group(1).splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        folder = re.fullmatch(r"`src/([a-z0-9_]+)/`", cells[0])
        if not folder:
            continue  # the header row and the separator
        name, uses = folder.group(1), cells[-1]
        earlier = [l for l, _ in layers]
        if "all of the above" in uses:
            deps = earlier
        else:
            deps = [w for w in re.findall(r"[a-z0-9_]+", uses) if w in earlier]
        layers.append((name, deps))
    if not layers:
        raise ValueError("the Layers table names no src/ folder")
    return layers


def allowed_sets(layers):
    """layer -> the layers it may include from: itself, what it names, and their closure."""
    allowed = {}
    for name, deps in layers:
        s = {name}
        for d in deps:
            s |= allowed[d]
        allowed[name] = s
    return allowed


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def check(src, layers):
    allowed = allowed_sets(layers)
    src = os.path.realpath(src)
    problems = []
    for folder in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, folder)) and folder not in allowed:
            problems.append("src/%s/: not in the Layers table of docs/architecture.md" % folder)
    for layer in allowed:
        top = os.path.join(src, layer)
        for root, _, files in os.walk(top):
            for fn in sorted(files):
                if not fn.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, fn)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = None
                        for base in (root, src):
                            t = os.path.realpath(os.path.join(base, m.group(1)))
                            if os.path.exists(t):
                                target = t
                                break
                        if not target or not target.startswith(src + os.sep):
                            continue
                        used = os.path.relpath(target, src).split(os.sep)[0]
                        if used in allowed[layer]:
                            continue
                        problems.append(
                            "%s:%d: includes src/%s: %s may use %s (docs/architecture.md, Layers)"
                            % (os.path.relpath(path, os.path.dirname(src)), lineno,
                               os.path.relpath(target, src), layer,
                               ", ".join(sorted(allowed[layer] - {layer})) or "no other layer"))
    return problems


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        layers = read_layers(argv[2])
    except (OSError, ValueError) as e:
        print("check_layers: %s: %s" % (argv[2], e), file=sys.stderr)
        return 2
    problems = check(argv[1], layers)
    for p in problems:
        print(p)
    print("check_layers: %d layers (%s), %d offending include%s"
          % (len(layers), ", ".join(l for l, _ in layers), len(problems),
             "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
