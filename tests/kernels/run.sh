#!/usr/bin/env bash
# The kernel test matrix: boots each distribution kernel in a virtme-ng VM (qemu, emulated: no
# KVM needed) with this machine's filesystem as the guest's root, and runs there the integration
# tests that depend on the kernel, with real null_blk (poll queues too), loop and cgroup v2.
#
#   bash tests/kernels/run.sh            # Debian 12's 6.1 and the 6.12 LTS, one after the other
#   HOSTMAX_KERNELS=6.12 bash tests/kernels/run.sh
#   HOSTMAX_MATRIX_ONLY="trim" bash tests/kernels/run.sh   # only these test binaries' chosen tests
#
# Each kernel boots twice: a 2-CPU VM for the null_blk, loop and cgroup tests, then a 4-CPU VM
# with cloud-style qemu disks (multi-queue virtio-blk and NVMe, one LUN on two paths, a volume
# under qemu's IOPS cap) for the tests that need them (guest.sh's selection_disks).
#
# Installs what it needs when missing (root): qemu-system-x86 and the newest Debian kernel
# package of each series (apt), virtme-ng (pip, in a venv under the target directory). Builds the
# test executables here, then prints one line per kernel and test:
#   kernel 6.1.0-56-amd64  PASS  faults::read_only_flip...  (12.3 s)
# and a wall time per kernel. Any failure (or a VM that does not come back) exits non-zero;
# the full output of a failed test is printed after its line. The VM emulates the CPU: the tests
# chosen here check behaviour and exact counts, never speed (see tests/kernels/guest.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
export CARGO_TERM_COLOR=never
target=${CARGO_TARGET_DIR:-$repo/target}
work=$target/kernel-matrix
mkdir -p "$work"
series=${HOSTMAX_KERNELS:-6.1 6.12}
# Test binaries to run (space-separated, e.g. "trim accuracy", or "engine_api", the engine
# package's): only their tests of the selection in guest.sh, and only they are built; the demo
# and sysctl checks are left out.
only=${HOSTMAX_MATRIX_ONLY:-}
# virtme-ng's version is pinned: its command line is what this script speaks.
vng_version=1.42

say() { echo "kernel-matrix: $*" >&2; }
die() { say "$*"; exit 1; }

apt_updated=0
apt_install() {
  [[ $(id -u) == 0 ]] || die "installing $* needs root: run 'apt-get install -y $*' or run this as root"
  if ((apt_updated == 0)); then apt-get update -q >&2; apt_updated=1; fi
  # INITRD=No: virtme-ng boots the kernel without the distribution's initramfs; making one per
  # kernel would cost minutes.
  DEBIAN_FRONTEND=noninteractive INITRD=No apt-get install -y -q -o DPkg::Lock::Timeout=900 \
    --no-install-recommends "$@" >&2
}

# The installed kernel of a series ("6.1" -> /boot/vmlinuz-6.1.0-56-amd64), newest first.
installed_kernel() {
  local pattern
  case $1 in
    6.1) pattern='/boot/vmlinuz-6.1.0-*-amd64' ;;
    *) pattern="/boot/vmlinuz-$1.*+deb*-amd64" ;;
  esac
  # No match is no kernel yet, not a failure (pipefail would end the script with ls's 2).
  # shellcheck disable=SC2086
  { ls -1 $pattern 2>/dev/null || true; } | sort -V | tail -n 1
}

# The newest Debian package of a series' kernel image.
kernel_package() {
  local regex
  case $1 in
    6.1) regex='^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
    *) regex="^linux-image-${1//./\\.}\\.[0-9]+\\+deb[0-9]+-amd64\$" ;;
  esac
  apt-cache pkgnames linux-image- | grep -E "$regex" | sort -V | tail -n 1
}

# --- what the matrix needs -----------------------------------------------------------------
command -v qemu-system-x86_64 >/dev/null || apt_install qemu-system-x86
# virtme-ng makes its small initramfs from a statically linked busybox.
dpkg -s busybox-static >/dev/null 2>&1 || apt_install busybox-static
# The device-mapper tests (dm-delay for a stalled device, dm-linear over test volumes) drive
# dmsetup in the guest.
command -v dmsetup >/dev/null || [[ -x /sbin/dmsetup ]] || apt_install dmsetup
# mdadm in the guest (an md array over loop devices: tests/same_media.rs).
command -v mdadm >/dev/null || [[ -x /sbin/mdadm ]] || apt_install mdadm
kernels=()
for s in $series; do
  k=$(installed_kernel "$s")
  if [[ -z $k ]]; then
    if ((apt_updated == 0)) && [[ $(id -u) == 0 ]]; then apt-get update -q >&2; apt_updated=1; fi
    pkg=$(kernel_package "$s")
    [[ -n $pkg ]] || die "no Debian package of kernel $s (apt-cache pkgnames linux-image-$s finds none)"
    apt_install "$pkg"
    k=$(installed_kernel "$s")
    [[ -n $k ]] || die "installed $pkg but no /boot/vmlinuz of $s appeared"
  fi
  kernels+=("$k")
done
venv=$work/venv
if [[ ! -x $venv/bin/vng ]] || [[ $("$venv/bin/vng" --version 2>/dev/null) != *"$vng_version"* ]]; then
  python3 -m venv "$venv" || die "python3 -m venv failed: apt-get install -y python3-venv"
  "$venv/bin/pip" install -q "virtme-ng==$vng_version" >&2
fi
# vng runs its helpers (virtme-run) from PATH.
export PATH=$venv/bin:$PATH

# --- the test executables, built here --------------------------------------------------------
# Every integration test binary the guest runs, by name; their paths come from cargo. Optimised:
# under emulation a debug build's own CPU time, not the kernel, would limit the tests. The
# `matrix` profile (Cargo.toml) is release without LTO and with more codegen units: optimised
# code at a fraction of the release profile's build time on two cores.
build_targets=(--workspace)
if [[ -n $only ]]; then
  # The packages whose tests the guest may run: the CLI's (tests/) and the libraries' own
  # (crates/engine/tests, crates/aggregate/tests); cargo builds each named test from whichever
  # package has it.
  build_targets=(-p hostmax -p hostmax-engine -p hostmax-aggregate)
  for binary in $only; do build_targets+=(--test "$binary"); done
fi
cargo test "${build_targets[@]}" --locked --profile matrix --no-run --message-format=json-render-diagnostics \
  >"$work/build.json"
python3 - "$work/build.json" >"$work/executables" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
            and msg["target"]["kind"] == ["test"]:
        print(msg["target"]["name"], msg["executable"])
PY
hostmax=$target/matrix/hostmax
# Built with the CLI's tests, which run it; the guest runs it itself (the demo, the sysctl
# check) only when no test binaries are chosen, and a choice of the libraries' tests alone
# builds none.
[[ -x $hostmax || -n $only ]] || die "no $hostmax after the build"

# --- the cloud-style disks of the second VM ----------------------------------------------------
# Real virtio-blk and NVMe devices with several hardware queues, as cloud volumes and local NVMe
# are, which null_blk and loop cannot stand in for: per-queue interrupt lines, a LUN reached by
# two paths, qemu's combined read+write IOPS cap (a cloud volume's promise; blk-throttle caps
# reads and writes apart). Tests find each by its serial (tests/support: VM_DISK_SERIALS) and
# skip elsewhere. Fresh sparse images every run: nothing a test wrote survives it.
disks=$work/disks
vm_capped_iops=2000 # tests/support: VM_CAPPED_DISK_IOPS
vm_disk_opts() {
  rm -rf "$disks"
  mkdir -p "$disks"
  local img
  for img in lun mq nvme capped; do truncate -s 256M "$disks/$img.img"; done
  local opts=()
  # One image, two virtio-blk devices with one serial: two paths to one LUN (multipath's
  # view). share-rw lets qemu attach one image twice; locking off for the same reason.
  for path in a b; do
    opts+=(-drive "file=$disks/lun.img,if=none,id=lun_$path,format=raw,file.locking=off"
      -device "virtio-blk-pci,drive=lun_$path,serial=hostmax-lun,share-rw=on")
  done
  opts+=(-drive "file=$disks/mq.img,if=none,id=mq,format=raw"
    -device "virtio-blk-pci,drive=mq,num-queues=4,serial=hostmax-mq")
  opts+=(-drive "file=$disks/nvme.img,if=none,id=nvm,format=raw"
    -device "nvme,drive=nvm,serial=hostmax-nvme,max_ioqpairs=4")
  opts+=(-drive "file=$disks/capped.img,if=none,id=cap,format=raw,throttling.iops-total=$vm_capped_iops"
    -device "virtio-blk-pci,drive=cap,serial=hostmax-capped,num-queues=4")
  echo "${opts[*]}"
}

# --- two VMs per kernel, one after the other ---------------------------------------------------
# Two cores: two emulated VMs at once would each run at half speed and double the timeouts'
# risk, for no gain in wall time. The first VM (2 CPUs) runs the null_blk/loop/cgroup tests;
# the second (4 CPUs, as the multi-queue recipes need) the tests of the cloud-style disks.
failed=0
summary=()
boot() { # KERNEL KIND CPUS [QEMU_OPTS]
  local kernel=$1 kind=$2 cpus=$3 qemu_opts=${4:-}
  local version=${kernel#/boot/vmlinuz-}
  local out=$work/$version
  [[ $kind == main ]] || out=$work/$version-$kind
  rm -rf "$out"
  mkdir -p "$out"
  local started took vm_status
  started=$(date +%s)
  say "booting $version ($kind VM, $cpus CPUs, emulated; the first lines take about 20 s)"
  local vng_args=(--run "$kernel" --disable-kvm --cpus "$cpus" --memory 4G --rwdir "$out")
  [[ -z $qemu_opts ]] || vng_args+=("--qemu-opts=$qemu_opts")
  # A VM that never ran the guest script (no results file: seen once, virtme-ng exited 255
  # after 14 s with an empty console) is booted once more, and says so; one that ran it and
  # failed is not: its failure is the test's.
  local attempt
  for attempt in 1 2; do
    set +e
    timeout --kill-after=30 "${HOSTMAX_KERNEL_TIMEOUT:-1800}" \
      "$venv/bin/vng" "${vng_args[@]}" \
      --exec "bash $repo/tests/kernels/guest.sh $out $work/executables $hostmax '$only' $kind" \
      </dev/null >"$out/console.log" 2>&1
    vm_status=$?
    set -e
    [[ ! -e $out/results && $attempt == 1 ]] || break
    say "the $version $kind VM exited $vm_status after $(($(date +%s) - started)) s before its guest script ran; its console's last lines:"
    tail -n 10 "$out/console.log" >&2
    say "booting it once more"
    cp "$out/console.log" "$out/console-first-boot.log"
  done
  took=$(($(date +%s) - started))
  grep -h '^kernel ' "$out/results" 2>/dev/null || true
  if [[ ! -s $out/done ]]; then
    echo "kernel $version ($kind VM)  FAIL  the VM did not finish (exit $vm_status); its console:"
    tail -n 40 "$out/console.log"
    failed=1
  elif grep -q '  FAIL  ' "$out/results"; then
    failed=1
    for log in "$out"/failed/*.log; do
      [[ -e $log ]] || continue
      echo "---- $(basename "$log" .log) ----"
      tail -n 60 "$log"
    done
  fi
  count() { grep -c "  $1  " "$out/results" 2>/dev/null || true; }
  summary+=("kernel $version ($kind VM): $(count PASS) passed, $(count FAIL) failed, $(count SKIP) skipped, $(count KNOWN) known failures of other issues, wall time ${took} s")
}
for kernel in "${kernels[@]}"; do
  # Each VM only when one of its tests was chosen (HOSTMAX_MATRIX_ONLY).
  if [[ -z $only ]] || bash tests/kernels/guest.sh --wants main "$only"; then
    boot "$kernel" main 2
  fi
  if [[ -z $only ]] || bash tests/kernels/guest.sh --wants disks "$only"; then
    boot "$kernel" disks 4 "$(vm_disk_opts)"
  fi
done
rm -rf "$disks"
printf '%s\n' "${summary[@]}"
if ((failed)); then
  say "FAILED (logs in $work)"
  exit 1
fi
say "all kernels passed"
