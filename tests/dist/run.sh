#!/usr/bin/env bash
# What ships, checked where a user runs it (README "Install"). After `cargo xtask dist`:
#
#   bash tests/dist/run.sh
#
# 1. The static binary (target/dist/hostmax-VERSION-x86_64-linux): its .sha256 checks, it asks
#    for no dynamic loader, and in an empty root holding only /dev, /proc and /sys (bind mounts)
#    and the binary it prints its version, runs `doctor` and measures a loop volume for 2 s.
# 2. The Debian package: lintian finds no error; in a fresh Debian 12 root (debootstrap
#    minbase, from the mirror this machine's apt uses) `dpkg -i` installs it, and there
#    `hostmax --version`, `hostmax doctor` and a 2-second run work, every man page renders,
#    bash loads the completion; `dpkg -r` takes every file away again.
# 3. The container image (OCI archive): its layers unpacked into a root, that root's hostmax
#    runs as in 1 with the image's PATH, its wipefs and dmsetup start, and a write run on a
#    volume holding ext4 is refused there. `podman run` is tried too and its outcome printed:
#    on a machine whose cgroups crun cannot use (this kind's), the unpacked root is the proof.
#
# Root, loop devices and the artifacts are needed; debootstrap and lintian are installed when
# missing. The Debian root is made once and kept (as a tarball under target/dist-work). Every
# loop device, mount and folder this script makes is removed on exit, failure and Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
target=${CARGO_TARGET_DIR:-$repo/target}
dist=$target/dist
work=$target/dist-work/check
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
binary=$dist/hostmax-$version-x86_64-linux
deb=$dist/hostmax_${version}_amd64.deb
image=$dist/hostmax-$version-image.tar

say() { echo "dist-check: $*" >&2; }
die() { say "FAIL: $*"; exit 1; }
pass() { say "PASS: $*"; }

[[ $(id -u) == 0 ]] || die "run as root: the checks chroot and make loop devices"
for f in "$binary" "$deb" "$image"; do
  [[ -f $f ]] || die "$f is missing: run 'cargo xtask dist' first"
done

apt_updated=0
need() { # need COMMAND PACKAGE
  command -v "$1" >/dev/null && return
  if ((apt_updated == 0)); then apt-get update -q >&2; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2" >&2
}
need debootstrap debootstrap
need lintian lintian
need python3 python3
need mkfs.ext4 e2fsprogs
need man man-db
chroot=$(command -v chroot)

# Clean-up of everything below, whatever ends the script. A root is removed only once nothing
# is mounted under it, and never across filesystems.
loops=()
roots=()
cleanup() {
  local status=$?
  local root dev
  for root in "${roots[@]}"; do
    if [[ -d $root ]]; then
      umount --recursive --lazy "$root/dev" "$root/proc" "$root/sys" 2>/dev/null || true
      if findmnt -rn -o TARGET | grep -q "^$root/"; then
        say "mounts are left under $root; not removing it"
      else
        rm -rf --one-file-system "$root"
      fi
    fi
  done
  for dev in "${loops[@]}"; do losetup -d "$dev" 2>/dev/null || true; done
  rm -f "$work"/volume-*.img
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$work"

# A loop volume over a tmpfs file (/dev/shm: the chroots see it through their /dev), in
# $volume. Not called in a subshell: the clean-up must see it in $loops.
new_volume() { # new_volume NAME SIZE_MIB
  local img=/dev/shm/hostmax-dist-$$-$1.img
  truncate -s "$2M" "$img"
  volume=$(losetup --find --show "$img")
  rm -f "$img" # the loop device holds it open; nothing else needs its name
  loops+=("$volume")
}

# A root with /dev, /proc and /sys of this machine bind-mounted in.
bind_system() { # bind_system ROOT
  local d
  for d in dev proc sys; do
    mkdir -p "$1/$d"
    mount --rbind "/$d" "$1/$d"
    mount --make-rslave "$1/$d"
  done
}

# hostmax in a root: version, doctor, a 2-second read run whose JSON report counts I/Os.
exercise() { # exercise WHAT ROOT HOSTMAX [ENV...]
  local what=$1 root=$2 bin=$3
  shift 3
  # env runs here, chroot's program in the root (an empty root has no env).
  local run=(env -i "$@" "$chroot" "$root" "$bin")
  local out
  out=$("${run[@]}" --version) || die "$what: --version failed"
  [[ $out == "hostmax $version"* ]] || die "$what: --version printed '$out'"
  pass "$what: $out"
  out=$("${run[@]}" doctor --devices "$volume" --ceiling-runtime 0s 2>&1) ||
    die "$what: doctor failed: $out"
  pass "$what: doctor ran ($(wc -l <<<"$out") lines)"
  local report
  report=$("${run[@]}" --devices "$volume" --runtime 2s --ramp 0s --iodepth 8 --json - 2>/dev/null) ||
    die "$what: the 2-second run failed"
  local ios
  ios=$(python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["host"]["read"]["ios"])' <<<"$report") ||
    die "$what: the run's report is not JSON: ${report:0:200}"
  ((ios > 0)) || die "$what: the 2-second run counted no I/O"
  pass "$what: a 2-second run on $volume counted $ios reads"
}

new_volume read 64
started=$SECONDS

# 1. The static binary in an empty root.
(cd "$dist" && sha256sum --quiet -c "$(basename "$binary").sha256") || die "the binary's SHA-256 does not match"
ldd_out=$(ldd "$binary" 2>&1 || true)
[[ $ldd_out == *"statically linked"* || $ldd_out == *"not a dynamic executable"* ]] ||
  die "ldd sees a dynamic binary: $ldd_out"
pass "static binary: $(file -b "$binary" | cut -d, -f1-4), ldd: $(echo $ldd_out)"
empty=$work/empty-root
roots+=("$empty")
rm -rf --one-file-system "$empty"
mkdir -p "$empty"
cp "$binary" "$empty/hostmax"
bind_system "$empty"
leftover=$(ls -A "$empty" | sort | tr '\n' ' ')
[[ $leftover == "dev hostmax proc sys " ]] || die "the empty root holds more: $leftover"
exercise "empty root" "$empty" /hostmax

# 2. The Debian package: lintian, then a fresh Debian 12 root.
lintian_out=$(lintian --fail-on error --allow-root "$deb" 2>&1) || die "lintian: $lintian_out"
pass "lintian: no error${lintian_out:+ (${lintian_out//$'\n'/; })}"
(cd "$dist" && sha256sum --quiet -c "$(basename "$deb").sha256") || die "the package's SHA-256 does not match"
cached=$target/dist-work/debian12-minbase.tar
if [[ ! -f $cached ]]; then
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
  [[ -n $mirror ]] || mirror=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [[ -n $mirror ]] || die "no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
  fresh=$work/debootstrap
  roots+=("$fresh")
  rm -rf --one-file-system "$fresh"
  say "debootstrap --variant=minbase bookworm from $mirror (once; kept in $cached)"
  debootstrap --variant=minbase bookworm "$fresh" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -n 5 "$work/debootstrap.log")"
  tar -C "$fresh" -cf "$cached.part" . && mv "$cached.part" "$cached"
  rm -rf --one-file-system "$fresh"
fi
debian=$work/debian-root
roots+=("$debian")
rm -rf --one-file-system "$debian"
mkdir -p "$debian"
tar -C "$debian" -xf "$cached"
grep -q '^12' "$debian/etc/debian_version" || die "the root is not Debian 12: $(cat "$debian/etc/debian_version")"
[[ ! -e $debian/usr/bin/hostmax ]] || die "the fresh root already has hostmax"
bind_system "$debian"
cp "$deb" "$debian/tmp/"
chroot "$debian" dpkg -i "/tmp/$(basename "$deb")" >"$work/dpkg.log" 2>&1 || die "dpkg -i: $(cat "$work/dpkg.log")"
pass "dpkg -i on a fresh Debian $(cat "$debian/etc/debian_version") root"
exercise "Debian 12 root" "$debian" hostmax PATH=/usr/sbin:/usr/bin:/sbin:/bin
for page in "$debian"/usr/share/man/man1/hostmax*.1.gz; do
  name=$(basename "$page" .1.gz)
  text=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || die "man $name: $text"
  [[ -z $text ]] || die "man $name warns: $text"
done
pass "every man page renders without a warning ($(ls "$debian"/usr/share/man/man1/hostmax*.1.gz | wc -l) pages)"
completion=$(chroot "$debian" bash -c '. /usr/share/bash-completion/completions/hostmax && complete -p hostmax') ||
  die "bash cannot load the completion"
pass "bash completion: $completion"
for f in usr/share/zsh/vendor-completions/_hostmax usr/share/fish/vendor_completions.d/hostmax.fish \
    usr/share/doc/hostmax/copyright usr/share/doc/hostmax/README.md.gz; do
  [[ -s $debian/$f ]] || die "the package did not install /$f"
done
chroot "$debian" dpkg -r hostmax >"$work/dpkg.log" 2>&1 || die "dpkg -r: $(cat "$work/dpkg.log")"
[[ ! -e $debian/usr/bin/hostmax && ! -e $debian/usr/share/man/man1/hostmax.1.gz ]] ||
  die "dpkg -r left hostmax's files"
pass "dpkg -r removes it"

# 3. The image: unpack its layers, run its hostmax there.
(cd "$dist" && sha256sum --quiet -c "$(basename "$image").sha256") || die "the image's SHA-256 does not match"
oci=$work/oci
rm -rf "$oci"
mkdir -p "$oci"
tar -C "$oci" -xf "$image"
image_root=$work/image-root
roots+=("$image_root")
rm -rf --one-file-system "$image_root"
mkdir -p "$image_root"
layers=$(python3 - "$oci" "$version" <<'EOF'
import json, sys, os
oci, version = sys.argv[1], sys.argv[2]
blob = lambda d: os.path.join(oci, "blobs", *d.split(":"))
index = json.load(open(os.path.join(oci, "index.json")))
manifest = index["manifests"][0]
name = manifest.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
if not name.endswith(version):
    sys.exit(f"the archive's image is named {name!r}, not :{version}")
m = json.load(open(blob(manifest["digest"])))
config = json.load(open(blob(m["config"]["digest"])))["config"]
if config.get("Entrypoint") != ["/usr/bin/hostmax"]:
    sys.exit(f"entrypoint {config.get('Entrypoint')}")
labels = config.get("Labels") or {}
if labels.get("org.opencontainers.image.version") != version:
    sys.exit(f"version label {labels.get('org.opencontainers.image.version')!r}")
for layer in m["layers"]:
    print(blob(layer["digest"]))
EOF
) || die "the image archive: $layers"
for layer in $layers; do tar -C "$image_root" -xf "$layer"; done
rm -rf "$oci"
bind_system "$image_root"
exercise "image root" "$image_root" /usr/bin/hostmax PATH=/usr/sbin:/usr/bin
env -i PATH=/usr/sbin:/usr/bin "$chroot" "$image_root" wipefs --version >/dev/null || die "the image's wipefs does not start"
dm=$(env -i PATH=/usr/sbin:/usr/bin "$chroot" "$image_root" dmsetup version 2>&1 || true)
[[ $dm == *"Library version"* ]] || die "the image's dmsetup does not start: $dm"
pass "the image's wipefs and dmsetup start"
mkfs.ext4 -q -F "$volume"
refused=0
out=$(env -i PATH=/usr/sbin:/usr/bin "$chroot" "$image_root" /usr/bin/hostmax --devices "$volume" \
  --rw randwrite --allow-write --runtime 1s --ramp 0s 2>&1) || refused=$?
((refused == 2)) || die "a write run on a volume holding ext4 was not refused in the image (exit $refused): $out"
pass "the image refuses a write run on a volume holding ext4: $out"
if command -v podman >/dev/null; then
  if out=$(timeout 60 podman run --rm "localhost/hostmax:$version" --version 2>&1); then
    pass "podman run: $out"
  else
    say "note: podman cannot start the image's container on this machine (${out//$'\n'/; }); the unpacked root above is the proof"
  fi
fi

say "all checks passed in $((SECONDS - started)) s"
