#!/usr/bin/env bash
# The container image (scripts/image.py, `make image`): built twice, from two copies of the
# binary in two folders, it is byte for byte the same archive with the same manifest digest; its
# layer holds exactly the binary, the libraries `ldd` lists for it (loader included, real files
# at the paths ldd gives), the CA bundle, /etc/passwd and /etc/group, all owned 0:0 and dated
# SOURCE_DATE_EPOCH; the config runs a non-root user; the layout's blobs are named by their
# sha256. A static program (gs-probe) gets no library. No containerd needed.
. "$(dirname "$0")/lib.sh"
GS="$(realpath "$GS")"
IMAGE="$SRC/scripts/image.py"
CA=/etc/ssl/certs/ca-certificates.crt
PROBE="$(dirname "$GS")/gs-probe"
for tool in python3 ldd tar gzip sha256sum; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done
[ -f "$CA" ] || skip "$CA is missing (Debian package ca-certificates)"
export SOURCE_DATE_EPOCH=1700000000
REF=gpusched.local/gpusched:0.0.0-test

# build DIR BINARY [ARGS...]: image.py run from DIR, archive DIR/img.tar, output DIR/out
build() {
    local dir="$1" bin="$2"
    shift 2
    mkdir -p "$dir"
    (cd "$dir" && python3 "$IMAGE" --binary "$bin" --out img.tar "$@") >"$dir/out" 2>"$dir/err"
}
digest() { awk '$1 == "manifest" {print $2}' "$1/out"; }

# the same binary under another name in another folder
mkdir -p "$TMP/b/bin"
cp "$GS" "$TMP/b/bin/gpusched"
args=(--path /usr/local/bin/gpusched --ref "$REF" --ca-certs "$CA")
if ! build "$TMP/a" "$GS" "${args[@]}"; then
    fail "image.py:"
    cat "$TMP/a/err"
    finish
    exit
fi
ok
if build "$TMP/b" "$TMP/b/bin/gpusched" "${args[@]}"; then ok; else
    fail "image.py (b):"
    cat "$TMP/b/err"
fi
da="$(digest "$TMP/a")"
db="$(digest "$TMP/b")"
echo "manifest digests: $da $db"
if [[ "$da" =~ ^sha256:[0-9a-f]{64}$ ]] && [ "$da" = "$db" ]; then ok; else
    fail "digests differ"
fi
if cmp "$TMP/a/img.tar" "$TMP/b/img.tar"; then ok; else fail "the two archives differ"; fi
last="$(tail -n 1 "$TMP/a/out")"
if [ "$last" = "$TMP/a/img.tar" ] || [ "$last" = "$(cd "$TMP/a" && pwd -P)/img.tar" ]; then ok; else
    fail "last line is not the archive's path: $last"
fi
sed 's/^/    /' "$TMP/a/out"
echo "archive: $(stat -c %s "$TMP/a/img.tar") bytes"

# another date is another image: the date is an input, not the wall clock
if SOURCE_DATE_EPOCH=1700000001 build "$TMP/c" "$GS" "${args[@]}" &&
    [ "$(digest "$TMP/c")" != "$da" ]; then
    ok
else
    fail "SOURCE_DATE_EPOCH did not change the manifest digest"
fi

# the layout: every blob named by its digest; index -> manifest -> config and layer
X="$TMP/x"
mkdir -p "$X"
tar -xf "$TMP/a/img.tar" -C "$X"
has "$X/oci-layout" '"imageLayoutVersion":"1.0.0"'
for blob in "$X"/blobs/sha256/*; do
    if [ "$(sha256sum <"$blob" | cut -d' ' -f1)" = "$(basename "$blob")" ]; then ok; else
        fail "blob $(basename "$blob") does not match its content"
    fi
done
python3 - "$X" "$REF" >"$TMP/layout" 2>&1 <<'EOF'
import json, sys
x, ref = sys.argv[1], sys.argv[2]
blob = lambda d: json.load(open(f"{x}/blobs/sha256/{d.split(':')[1]}"))
idx = json.load(open(f"{x}/index.json"))
assert len(idx["manifests"]) == 1, idx
m = idx["manifests"][0]
ann = m["annotations"]
assert ann["io.containerd.image.name"] == ref, ann
assert ann["org.opencontainers.image.ref.name"] == ref.rsplit(":", 1)[1], ann
man = blob(m["digest"])
cfg = blob(man["config"]["digest"])
assert len(man["layers"]) == 1, man
c = cfg["config"]
user = c["User"].split(":")
assert user[0].isdigit() and int(user[0]) != 0 and int(user[1]) != 0, f"User {c['User']}"
assert c["Entrypoint"] == ["/usr/local/bin/gpusched"], c
assert any(e.startswith("PATH=") for e in c["Env"]), c
assert cfg["architecture"] == "amd64" and cfg["os"] == "linux", cfg
assert cfg["created"] == "2023-11-14T22:13:20Z", cfg["created"]
assert all(h["created"] == cfg["created"] for h in cfg["history"]), cfg["history"]
print(man["layers"][0]["digest"].split(":")[1], cfg["rootfs"]["diff_ids"][0].split(":")[1],
      c["User"])
EOF
if [ $? -ne 0 ]; then
    fail "layout: $(tail -n 1 "$TMP/layout")"
    finish
    exit
fi
read -r layer diff_id user <"$TMP/layout"
L="$X/blobs/sha256/$layer"
if [ "$(gzip -dc "$L" | sha256sum | cut -d' ' -f1)" = "$diff_id" ]; then ok; else
    fail "the config's diff_id is not the uncompressed layer's digest"
fi
echo "user $user; layer: $(stat -c %s "$L") bytes gzipped, $(gzip -dc "$L" | wc -c) uncompressed"

# the layer's files against ldd's own list: expected = binary + libraries + etc files
expected() { # expected BINARY PATH_IN_IMAGE [EXTRA...]
    local bin="$1"
    shift
    {
        printf '%s\n' "$@"
        ldd "$bin" 2>/dev/null | sed -nE 's|^.*=> (/[^ ]+) \(0x[0-9a-f]+\)$|\1|p
            s|^\s*(/[^ ]+) \(0x[0-9a-f]+\)$|\1|p'
    } | sed 's|^/||' | sort -u
}
# layer_check LAYER EXPECTED_LIST: regular files and directories only, all 0:0 and dated
layer_check() {
    local layer="$1" want="$2"
    TZ=UTC tar --numeric-owner -tvzf "$layer" >"$TMP/listing"
    if awk '$2 != "0/0" || $4 != "2023-11-14" || substr($1, 1, 1) !~ /^[-d]$/ {bad = 1; print}
            END {exit bad}' "$TMP/listing"; then ok; else
        fail "entries not 0:0, not dated, or not plain files"
    fi
    awk 'substr($1, 1, 1) == "-" {print $6}' "$TMP/listing" | sort >"$TMP/files"
    if diff "$want" "$TMP/files" >"$TMP/diff"; then ok; else
        fail "layer files differ from ldd's list (< expected, > in the layer):"
        cat "$TMP/diff"
    fi
}
expected "$GS" usr/local/bin/gpusched etc/passwd etc/group etc/ssl/certs/ca-certificates.crt \
    >"$TMP/want"
n_libs=$(ldd "$GS" | grep -c '/')
echo "ldd lists $n_libs libraries (loader included); the layer holds $(wc -l <"$TMP/want") files"
if [ "$n_libs" -ge 2 ]; then ok; else fail "ldd lists $n_libs libraries for $GS: not dynamic?"; fi
layer_check "$L" "$TMP/want"

# contents: the real files at ldd's paths, the CA bundle, one non-root user
R="$TMP/root"
mkdir -p "$R"
tar -xzf "$L" -C "$R"
if cmp "$GS" "$R/usr/local/bin/gpusched" && cmp "$CA" "$R/etc/ssl/certs/ca-certificates.crt"; then
    ok
else
    fail "binary or CA bundle differs"
fi
while read -r f; do
    case "$f" in
    usr/local/bin/gpusched | etc/*) ;;
    *) cmp "/$f" "$R/$f" || fail "/$f differs from the host's" ;;
    esac
done <"$TMP/want"
if [ ! -L "$R/lib64/ld-linux-x86-64.so.2" ] && [ -x "$R/usr/local/bin/gpusched" ]; then ok; else
    fail "a symbolic link in the layer, or the binary is not executable"
fi
has "$R/etc/passwd" "gpusched:x:65532:65532:"
has "$R/etc/group" "gpusched:x:65532:"
if grep -q '^root:\|:0:' "$R/etc/passwd"; then fail "root in the image's passwd"; else ok; fi

# a static program: the binary and the user only
if [ -x "$PROBE" ]; then
    if build "$TMP/p" "$PROBE" --path /gs-probe --ref gpusched.local/gpu-probe:1; then ok; else
        fail "image.py (probe):"
        cat "$TMP/p/err"
    fi
    mkdir -p "$TMP/px"
    tar -xf "$TMP/p/img.tar" -C "$TMP/px"
    player=$(ls -S "$TMP/px/blobs/sha256" | head -n 1)
    printf '%s\n' etc/group etc/passwd gs-probe >"$TMP/pwant"
    layer_check "$TMP/px/blobs/sha256/$player" "$TMP/pwant"
    echo "probe image: $(digest "$TMP/p")"
else
    fail "$PROBE was not built"
fi

# --add and --env (the e2e tests' image with our fake nvidia-cuda-mps-control): the program
# with its libraries beside the binary, the variable after PATH
FAKE="$(dirname "$GS")/fake-mps/nvidia-cuda-mps-control"
if build "$TMP/f" "$PROBE" --path /gs-probe --ref "$REF" --add "$FAKE:/opt/bin/fake" \
    --env GS_X=/a/b; then
    mkdir -p "$TMP/fx"
    tar -xf "$TMP/f/img.tar" -C "$TMP/fx"
    if python3 - "$TMP/fx" "$FAKE" <<'EOF'; then ok; else fail "--add/--env: not in the image"; fi
import io, json, os, sys, tarfile
x, fake = sys.argv[1], sys.argv[2]
blobs = {f: open(f"{x}/blobs/sha256/{f}", "rb").read() for f in os.listdir(f"{x}/blobs/sha256")}
cfg = next(json.loads(b) for b in blobs.values() if b.startswith(b'{"architecture"'))
assert cfg["config"]["Env"][1:] == ["GS_X=/a/b"], cfg["config"]["Env"]
layer = tarfile.open(fileobj=io.BytesIO(max(blobs.values(), key=len)))
assert layer.extractfile("opt/bin/fake").read() == open(fake, "rb").read()
assert any(n.startswith(("lib", "usr/lib")) for n in layer.getnames()), "no libraries"
EOF
else
    fail "image.py --add --env:"
    cat "$TMP/f/err"
fi

# bad input changes nothing and says why
expect 2 python3 "$IMAGE" --binary "$TMP/none" --path /x --ref "$REF" --out "$TMP/d/img.tar" &&
    has "$TMP/err" "no such file"
expect 2 python3 "$IMAGE" --binary "$GS" --path /x --ref gpusched:latest --out "$TMP/d/img.tar" &&
    has "$TMP/err" "--ref"
expect 2 python3 "$IMAGE" --binary "$CA" --path /x --ref "$REF" --out "$TMP/d/img.tar" &&
    has "$TMP/err" "not a 64-bit"
expect 2 python3 "$IMAGE" --binary "$GS" --path /x --ref "$REF" --user root:0:0 \
    --out "$TMP/d/img.tar"
expect 2 python3 "$IMAGE" --binary "$GS" --path /x --ref "$REF" --add "$CA:/ca" \
    --out "$TMP/d/img.tar" && has "$TMP/err" "--add"
expect 2 python3 "$IMAGE" --binary "$GS" --path /x --ref "$REF" --env PATH=/x \
    --out "$TMP/d/img.tar" && has "$TMP/err" "--env"
if [ ! -e "$TMP/d" ]; then ok; else fail "a refused build wrote $TMP/d"; fi
finish
