#!/usr/bin/env python3
"""check_sizes.py - fail when a function or a file of src/ outgrows the house limits.

usage: check_sizes.py SRC_DIR [MAX_FUNCTION_LINES [MAX_FILE_LINES]]

A module that needs more than MAX_FILE_LINES (default 1,200) lines, or a function of more
than MAX_FUNCTION_LINES (default 150) lines, is several things that were never named
(STYLE.md). Functions are found as clang-format lays them out (Linux braces): a function's
body opens with "{" alone at column 0 and closes with "}" at column 0; its length counts from
the "{" line to the "}" line. Prints one line per offender (file:line name length) and exits
1; exits 0 when there is none, with a summary line.
"""
import os
import re
import sys


def functions(path):
    """[(name, line of its signature, body length)] of one .c file."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    out, start = [], None
    for i, line in enumerate(lines):
        if line == "{":
            start = i
        elif line.startswith("}") and start is not None:
            j = start - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j])
            out.append((m.group(1) if m else "?", j + 1, i - start + 1))
            start = None
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    src = sys.argv[1]
    max_fn = int(sys.argv[2]) if len(sys.argv) > 2 else 150
    max_file = int(sys.argv[3]) if len(sys.argv) > 3 else 1200
    bad, nfiles, nfns, longest = [], 0, 0, (0, "")
    for root, _, files in sorted(os.walk(src)):
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            path = os.path.join(root, f)
            nfiles += 1
            with open(path, encoding="utf-8", errors="replace") as fh:
                nlines = sum(1 for _ in fh)
            if nlines > max_file:
                bad.append(f"{path}: {nlines} lines (at most {max_file})")
            for name, line, n in functions(path):
                nfns += 1
                longest = max(longest, (n, f"{path}:{line} {name}"))
                if n > max_fn:
                    bad.append(f"{path}:{line}: function '{name}' is {n} lines (at most {max_fn})")
    for b in bad:
        print(b)
    print(f"check_sizes: {nfiles} files, {nfns} functions; longest {longest[1]} ({longest[0]} lines); "
          f"{len(bad)} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
