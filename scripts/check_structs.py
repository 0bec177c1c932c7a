#!/usr/bin/env python3
"""check_structs.py - list which modules of a folder reach into each struct its headers define.

usage: check_structs.py [--max N] [--value NAME[,NAME...]] [-v] LAYER_DIR...

A struct defined in a header of src/<layer>/ is handed to a module when that module's .c file
reads or writes its fields; STYLE.md wants each struct handed to at most N (default 2) modules
of its folder: the owner and one other. For each struct defined in LAYER_DIR/*.h, prints the
.c files of LAYER_DIR that access its fields, and marks with "!" those handed to more than N
(-v: with the first access seen in each file). Exits 1 when any is, else 0.

The rule is about state: a struct that a component owns (with its lock) is read and written
through that component's API. A value type is different: a record handed out by copy or as a
contract between implementations (a GPU backend's readings, the copy of the GPU table the
sampler gives its readers, an options record) is meant to be read where it is handed.
--value names such types, each by name, so that every exception stands in the test's
command line; they are listed, marked "=", and not counted.

A heuristic, not a compiler: in each function (and at file scope) it notes the names
declared with a struct type of the folder (`struct T *x`, `const struct T x[4]`, parameters
too), then follows each chain `x->a[i].b->f` from such a name through the members' declared
types (the structs of the folder's headers and of the file itself): a field of T named on
the way is an access to T; so is a designator in an initializer of T (`(struct T){.f = 1}`).
Accesses through a cast, a function's return or a macro are not seen.
"""
import os
import re
import sys

IDX = r"(?:\s*\[(?:[^\[\]]|\[[^\]]*\])*\])*"  # [i] or [idx[i]], repeated
# at every position (overlapping): [-> or .] base[i]... -> or . field
ACCESS = re.compile(r"(?=(->|\.)?\s*\b(\w+)" + IDX + r"\s*(?:->|\.)\s*(\w+)\b)")


def strip(text):
    """The text without comments, literals and preprocessor lines (newlines kept)."""
    blank = lambda m: " " + "\n" * m.group(0).count("\n")
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    return re.sub(r"^[ \t]*#[^\n]*(?:\\\n[^\n]*)*", blank, text, flags=re.M)


def struct_bodies(text):
    """{name: body} of every `struct name { ... }` definition in text (stripped)."""
    out = {}
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1)] = text[m.end():i - 1]
    return out


def fields(body):
    """[(field name, struct type or None)] of a struct body; nested members flattened."""
    out = []
    body_flat = body
    # nested struct/union bodies: their fields count as the outer struct's (anonymous members)
    while True:
        m = re.search(r"\{[^{}]*\}", body_flat)
        if not m:
            break
        out += fields(m.group(0)[1:-1])
        body_flat = body_flat[:m.start()] + " " + body_flat[m.end():]
    for decl in body_flat.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
        if fp:  # function pointer or pointer to array
            t = re.match(r"(?:const\s+)?struct\s+(\w+)", decl)
            out.append((fp.group(1), t.group(1) if t else None))
            continue
        t = re.match(r"(?:const\s+)?(?:struct|union|enum)\s+(\w+)", decl)
        typ = t.group(1) if t and decl.lstrip().replace("const ", "").startswith("struct") else None
        rest = decl[t.end():] if t else decl
        rest = re.sub(r"\[[^\]]*\]", "", rest)
        rest = re.sub(r":\s*\w+", "", rest)
        for d in rest.split(","):
            ids = re.findall(r"\w+", d)
            if ids:
                out.append((ids[-1], typ))
    return out


def chunks(text):
    """[(offset, text)]: the file cut after each top-level closing brace (a function, with the
    file-scope declarations before it)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                out.append((start, text[start:i + 1]))
                start = i + 1
    out.append((start, text[start:]))
    return out


DECL = re.compile(r"\bstruct\s+(\w+)\b(?!\s*\{)((?:\s*(?:const\b|\*))*)\s*(\w+)")
CHAIN = re.compile(r"(?<![\w.>])(\w+)((?:" + IDX + r"\s*(?:->|\.)\s*\w+)+)")
STEP = re.compile(IDX + r"\s*(?:->|\.)\s*(\w+)")
INIT = re.compile(r"\(\s*(?:const\s+)?struct\s+(\w+)\s*\)\s*\{"
                  r"|\bstruct\s+(\w+)\s+\w+(\s*\[[^\]]*\])?\s*=\s*\{")


def declared(text, known):
    """({name: {struct type}} declared in text, for types in known; {those at file scope})."""
    names, globs = {}, {}
    for m in DECL.finditer(text):
        typ, name = m.group(1), m.group(3)
        if typ not in known or name == "const":
            continue
        found = [name]
        tail = text[m.end():m.end() + 200]
        # more declarators of one statement: `struct T *a, *b;`
        found += re.findall(r"^" + IDX + r"\s*,\s*\**\s*(\w+)", tail)
        for n in found:
            names.setdefault(n, set()).add(typ)
        depth = text.count("{", 0, m.start()) - text.count("}", 0, m.start())
        if depth == 0 and re.match(IDX + r"\s*[;=]", tail):
            for n in found:
                globs.setdefault(n, set()).add(typ)
    return names, globs


def initialised(text, pos, array):
    """The designators (.f = ...) of the initializer whose "{" is at text[pos - 1]."""
    out, depth, want, i = [], 1, 2 if array else 1, pos
    while i < len(text) and depth:
        ch = text[i]
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == "." and depth == want:
            m = re.match(r"\.\s*(\w+)\s*=", text[i:])
            if m:
                out.append(m.group(1))
        i += 1
    return out


def accesses(text, types):
    """{struct type: (offset, "expr")} of the first access to a field of each struct of types
    in text ({type: {field: member type or None}})."""
    first, globs = {}, {}
    for _, part in chunks(text):
        for n, t in declared(part, types)[1].items():
            globs.setdefault(n, set()).update(t)
    for off, part in chunks(text):
        vars_, _ = declared(part, types)
        for n, t in globs.items():
            vars_.setdefault(n, set()).update(t)
        for m in CHAIN.finditer(part):
            cur = vars_.get(m.group(1), set())
            expr = m.group(1)
            for st in STEP.finditer(m.group(2)):
                fld = st.group(1)
                expr += "." + fld
                nxt = set()
                for t in cur:
                    if fld in types[t]:
                        first.setdefault(t, (off + m.start(), expr))
                        if types[t][fld]:
                            nxt.add(types[t][fld])
                cur = nxt & types.keys()
                if not cur:
                    break
        for m in INIT.finditer(part):
            t = m.group(1) or m.group(2)
            if t in types and any(f in types[t] for f in initialised(part, m.end(), m.group(3))):
                first.setdefault(t, (off + m.start(), "{." + "..}"))
    return first


def main():
    args = sys.argv[1:]
    limit, verbose, values = 2, False, set()
    while args and args[0].startswith("-"):
        if args[0] == "--max" and len(args) >= 2:
            limit, args = int(args[1]), args[2:]
        elif args[0] == "--value" and len(args) >= 2:
            values |= {v for v in args[1].split(",") if v}
            args = args[2:]
        elif args[0] == "-v":
            verbose, args = True, args[1:]
        else:
            break
    if not args:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    bad = 0
    for folder in args:
        hdrs = sorted(f for f in os.listdir(folder) if f.endswith(".h"))
        srcs = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
        text = {f: strip(open(os.path.join(folder, f), encoding="utf-8").read())
                for f in hdrs + srcs}
        public = {}  # struct defined in a header -> the header
        types = {}  # every struct defined here -> {field: struct type of the field or None}
        for f in hdrs:
            for name, body in struct_bodies(text[f]).items():
                public[name] = f
                types[name] = dict(fields(body))
        users = {name: [] for name in public}
        for c in srcs:
            mine = dict(types)
            for name, body in struct_bodies(text[c]).items():
                mine.setdefault(name, dict(fields(body)))
            for t, (off, expr) in accesses(text[c], mine).items():
                if t in public:
                    line = text[c].count("\n", 0, off) + 1
                    users[t].append((c, f"{c}:{line}: {expr}"))
        for name in sorted(public, key=lambda s: (public[s], s)):
            us = users[name]
            over = len(us) > limit and name not in values
            mark = "!" if over else "=" if name in values else " "
            bad += over
            print(f"{mark} {folder.rstrip('/')}/{public[name]}: struct {name}: {len(us)} "
                  f"{'module' if len(us) == 1 else 'modules'}: {' '.join(c for c, _ in us) or '-'}")
            if verbose and len(us) > limit:
                for _, h in us:
                    print(f"      first access: {h}")
    print(f"check_structs: {bad} {'struct' if bad == 1 else 'structs'} handed to more than "
          f"{limit} modules of {'its folder' if len(args) == 1 else 'their folders'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
