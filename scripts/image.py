#!/usr/bin/env python3
"""image.py - a container image of one binary, without a container daemon or a base image.

Writes an OCI image layout (oci-layout, index.json, blobs/sha256/...) packed in one tar, which
`ctr images import`, `podman load` and `skopeo copy oci-archive:` read. The image has one layer
holding exactly:

  - the binary, at --path (mode 0755);
  - the shared libraries it loads, as `ldd` resolves them on this machine, the dynamic loader
    included; a symbolic link is followed, and the real file is stored at the path the loader
    looks the library up by (/lib/x86_64-linux-gnu/libcurl.so.4 holds libcurl.so.4.8.0's
    bytes); nothing for a static binary;
  - /etc/passwd and /etc/group naming the one non-root user the image runs as (--user);
  - /etc/ssl/certs/ca-certificates.crt when --ca-certs is given;
  - each --add PROGRAM:PATH, another program at PATH with its ldd libraries as above (the e2e
    tests' images put a test double beside the binary this way; `make image` adds nothing).

--env NAME=VALUE adds a variable to the image's environment (after PATH).

No /etc/ld.so.cache: the loader finds the libraries in its system search path, and a library
that ldd resolved anywhere else is refused rather than left out of reach.

Reproducible: the same inputs give a byte-identical archive. Entries are sorted, owned by 0:0
(root), dated --epoch (default $SOURCE_DATE_EPOCH, else 0), written as ustar (no pax headers,
so no atime or ctime); the layer is gzipped at level 9 with no name and mtime 0; JSON is
written with sorted keys; the config's "created" is the same epoch, never the wall clock.

Prints the reference, the manifest digest, the compressed and uncompressed layer sizes and, on
its last line, the archive's path. Exit 0 ok, 1 failure (ldd, I/O), 2 bad input.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CA_PATH = "etc/ssl/certs/ca-certificates.crt"
GZIP_LEVEL = 9
EM_X86_64 = 62

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


class BadInput(Exception):
    """Input the caller got wrong (exit 2)."""


class Failure(Exception):
    """Something that failed on the way (exit 1)."""


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def elf_interp(path):
    """The ELF's e_machine and its PT_INTERP string (None for a static binary). Refuses what
    is not a 64-bit little-endian ELF."""
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise BadInput(f"'{path}': not a 64-bit little-endian ELF file")
        machine = int.from_bytes(head[18:20], "little")
        phoff = int.from_bytes(head[32:40], "little")
        phentsize = int.from_bytes(head[54:56], "little")
        phnum = int.from_bytes(head[56:58], "little")
        if phnum > 4096 or phentsize < 56:
            raise BadInput(f"'{path}': implausible program headers")
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(56)
            if len(ph) < 56:
                raise BadInput(f"'{path}': truncated program headers")
            if int.from_bytes(ph[0:4], "little") == 3:  # PT_INTERP
                off = int.from_bytes(ph[8:16], "little")
                size = int.from_bytes(ph[32:40], "little")
                if size > 4096:
                    raise BadInput(f"'{path}': implausible PT_INTERP")
                f.seek(off)
                return machine, f.read(size).rstrip(b"\0").decode()
        return machine, None


def ldd_paths(binary):
    """The absolute paths ldd resolves for binary's libraries and loader, in ldd's order; []
    for a static binary. A library ldd cannot find is an error."""
    try:
        r = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
    except OSError as e:
        raise Failure(f"running ldd: {e}") from e
    out = r.stdout + r.stderr
    if "not a dynamic executable" in out or "statically linked" in out:
        return []
    if r.returncode != 0:
        raise Failure(f"ldd '{binary}' exited {r.returncode}: {out.strip()}")
    paths = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        m = re.match(r"^(\S+) => (.*?)(?: \(0x[0-9a-f]+\))?$", line)
        if m:
            if m.group(2) == "not found":
                raise Failure(f"'{binary}': ldd cannot find {m.group(1)}")
            if m.group(2).startswith("/"):
                paths.append(m.group(2))
            continue  # "=>" with nothing (the vdso on some systems)
        m = re.match(r"^(/\S+) \(0x[0-9a-f]+\)$", line)
        if m:
            paths.append(m.group(1))  # the loader
            continue
        if re.match(r"^\S+ \(0x[0-9a-f]+\)$", line):
            continue  # linux-vdso.so.1: in the kernel, not a file
        raise Failure(f"ldd '{binary}': unexpected line '{line}'")
    return paths


def loader_search_dirs(loader):
    """The loader's system search path (`ld.so --help`, glibc 2.33 and later); None when it
    does not say."""
    try:
        r = subprocess.run([loader, "--help"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    dirs = re.findall(r"^\s+(/\S+) \(system search path\)$", r.stdout, re.M)
    return [os.path.normpath(d) for d in dirs] or None


def parse_user(text):
    m = re.fullmatch(r"([a-z_][a-z0-9_-]{0,31}):([0-9]{1,9}):([0-9]{1,9})", text)
    if not m:
        raise BadInput(f"--user '{text}': expected NAME:UID:GID")
    name, uid, gid = m.group(1), int(m.group(2)), int(m.group(3))
    if uid == 0 or gid == 0 or name == "root":
        raise BadInput(f"--user '{text}': the image runs as a non-root user")
    return name, uid, gid


def parse_ref(ref):
    """A reference NAME:TAG (NAME with a registry host for containerd: gpusched.local/x)."""
    m = re.fullmatch(r"([a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+)"
                     r":([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", ref)
    if not m:
        raise BadInput(f"--ref '{ref}': expected REGISTRY/NAME:TAG (gpusched.local/gpusched:0.1.0)")
    return m.group(2)


class Tree:
    """Files by path relative to the root (no leading slash), written as a reproducible tar:
    a layer, and the archive of the layout itself."""

    def __init__(self):
        self.files = {}  # path -> (bytes, mode)

    def add(self, path, data, mode):
        path = path.lstrip("/")
        if path in self.files:
            if self.files[path] != (data, mode):
                raise Failure(f"'/{path}' twice with different contents")
            return
        self.files[path] = (data, mode)

    def tar(self, epoch):
        dirs = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        clash = dirs & set(self.files)
        if clash:
            raise Failure(f"'/{sorted(clash)[0]}' is both a file and a directory")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for path in sorted(dirs | set(self.files)):
                info = tarfile.TarInfo(path)
                info.mtime = epoch
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                if path in dirs:
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    t.addfile(info)
                else:
                    data, mode = self.files[path]
                    info.type = tarfile.REGTYPE
                    info.mode = mode
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        return buf.getvalue()


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def mb(n):
    return f"{n / 1e6:.1f} MB ({n} bytes)"


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise BadInput(f"reading '{path}': {e.strerror}") from e


def add_program(layer, binary, path, interp):
    """binary at path in layer, with the libraries ldd lists for it; returns their paths."""
    layer.add(path, read_file(binary), 0o755)
    libs = ldd_paths(binary)
    if interp and interp not in libs:
        raise Failure(f"'{binary}': ldd does not list its loader '{interp}'")
    if not interp and libs:
        raise Failure(f"'{binary}': no loader (PT_INTERP), yet ldd lists libraries")
    search = loader_search_dirs(interp) if interp else None
    for lib in libs:
        lib = os.path.normpath(lib)
        if lib != interp and search is not None and os.path.dirname(lib) not in search:
            raise Failure(f"'{lib}' is outside the loader's search path {search}: "
                          "the image has no ld.so.cache to find it")
        real = os.path.realpath(lib)
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode):
            raise Failure(f"'{lib}' is not a regular file")
        layer.add(lib, read_file(real), 0o755)
    return libs


def parse_adds(adds):
    """--add PROGRAM:PATH values as (program, path) pairs, each an x86-64 ELF file."""
    out = []
    for a in adds:
        binary, sep, path = a.rpartition(":")
        if not sep or not binary or not path.startswith("/") or os.path.normpath(path) != path:
            raise BadInput(f"--add '{a}': expected PROGRAM:/ABSOLUTE/PATH")
        if not os.path.isfile(binary):
            raise BadInput(f"--add '{a}': no such file '{binary}'")
        try:
            machine = elf_interp(binary)[0]
        except BadInput as e:
            raise BadInput(f"--add '{a}': {e}") from e
        if machine != EM_X86_64:
            raise BadInput(f"--add '{a}': not an x86-64 program")
        out.append((binary, path))
    return out


def parse_envs(envs):
    """--env NAME=VALUE values, checked."""
    for e in envs:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=[^\n]*", e) or e.startswith("PATH="):
            raise BadInput(f"--env '{e}': expected NAME=VALUE (PATH is the image's own)")
    return list(envs)


def build(args):
    tag = parse_ref(args.ref)
    name, uid, gid = parse_user(args.user)
    if not args.path.startswith("/") or os.path.normpath(args.path) != args.path:
        raise BadInput(f"--path '{args.path}': expected an absolute, normal path")
    if args.epoch is None:
        env = os.environ.get("SOURCE_DATE_EPOCH", "0")
        if not re.fullmatch(r"[0-9]{1,12}", env):
            raise BadInput(f"SOURCE_DATE_EPOCH '{env}': expected seconds since 1970")
        args.epoch = int(env)
    if not os.path.isfile(args.binary):
        raise BadInput(f"--binary '{args.binary}': no such file")
    machine, interp = elf_interp(args.binary)
    if machine != EM_X86_64:
        raise BadInput(f"--binary '{args.binary}': not an x86-64 program (e_machine {machine})")
    extra = parse_adds(args.add)
    envs = parse_envs(args.env)

    layer = Tree()
    libs = add_program(layer, args.binary, args.path, interp)
    for binary, path in extra:
        libs += add_program(layer, binary, path, elf_interp(binary)[1])
    layer.add("etc/passwd", f"{name}:x:{uid}:{gid}:{name}:/:/sbin/nologin\n".encode(), 0o644)
    layer.add("etc/group", f"{name}:x:{gid}:\n".encode(), 0o644)
    if args.ca_certs:
        layer.add(CA_PATH, read_file(args.ca_certs), 0o644)

    layer_tar = layer.tar(args.epoch)
    gz = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=gz, compresslevel=GZIP_LEVEL,
                       mtime=0) as z:
        z.write(layer_tar)
    layer_gz = gz.getvalue()

    created = datetime.datetime.fromtimestamp(args.epoch, datetime.timezone.utc)
    created = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    config = canonical_json({
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": f"{uid}:{gid}",
            "Entrypoint": [args.path],
            "Env": [PATH_ENV] + envs,
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [sha(layer_tar)]},
        "history": [{"created": created,
                     "created_by": f"scripts/image.py {os.path.basename(args.path)}"}],
    })
    manifest = canonical_json({
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": {"mediaType": MT_CONFIG, "digest": sha(config), "size": len(config)},
        "layers": [{"mediaType": MT_LAYER, "digest": sha(layer_gz), "size": len(layer_gz)}],
    })
    index = canonical_json({
        "schemaVersion": 2,
        "mediaType": MT_INDEX,
        "manifests": [{
            "mediaType": MT_MANIFEST,
            "digest": sha(manifest),
            "size": len(manifest),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {
                "io.containerd.image.name": args.ref,
                "org.opencontainers.image.ref.name": tag,
            },
        }],
    })

    archive = Tree()
    archive.add("oci-layout", canonical_json({"imageLayoutVersion": "1.0.0"}), 0o644)
    archive.add("index.json", index, 0o644)
    for blob in (config, manifest, layer_gz):
        archive.add("blobs/sha256/" + hashlib.sha256(blob).hexdigest(), blob, 0o644)
    out = archive.tar(args.epoch)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(out)
        os.replace(tmp, args.out)
    except OSError as e:
        raise Failure(f"writing '{args.out}': {e.strerror}") from e

    print(f"image      {args.ref}")
    print(f"manifest   {sha(manifest)}")
    print(f"layer      {mb(len(layer_gz))} gzipped, {mb(len(layer_tar))} uncompressed, "
          f"{len(layer.files)} files ({len(set(libs))} from ldd)")
    print(f"user       {name} {uid}:{gid}, entrypoint {args.path}")
    print(os.path.abspath(args.out))


def main():
    p = argparse.ArgumentParser(
        description="Write an OCI image archive of one binary, its ldd libraries, a non-root "
                    "user and optionally the CA bundle (reproducible; no daemon, no base image).")
    p.add_argument("--binary", required=True, help="the program (ELF, x86-64)")
    p.add_argument("--path", required=True,
                   help="where it lies in the image, also the entrypoint (/usr/local/bin/x)")
    p.add_argument("--ref", required=True, help="REGISTRY/NAME:TAG, e.g. gpusched.local/x:1")
    p.add_argument("--out", required=True, help="the archive to write")
    p.add_argument("--ca-certs", help="a CA bundle stored as /" + CA_PATH)
    p.add_argument("--user", default="gpusched:65532:65532",
                   help="NAME:UID:GID the image runs as (default gpusched:65532:65532)")
    p.add_argument("--add", action="append", default=[], metavar="PROGRAM:PATH",
                   help="another program at PATH with its libraries (repeatable; test images)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable of the image's environment (repeatable)")
    p.add_argument("--epoch", type=int,
                   help="mtime and created time, seconds (default $SOURCE_DATE_EPOCH, else 0)")
    args = p.parse_args()
    if args.epoch is not None and not 0 <= args.epoch < 1 << 33:
        print(f"image.py: --epoch {args.epoch}: out of range", file=sys.stderr)
        return 2
    try:
        build(args)
    except BadInput as e:
        print(f"image.py: {e}", file=sys.stderr)
        return 2
    except (Failure, OSError) as e:
        print(f"image.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
