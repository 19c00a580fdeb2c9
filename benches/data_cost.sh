#!/usr/bin/env bash
# What hostmax's honesty costs, in alternated pairs on the same loop volumes on tmpfs (issue 11):
#   - unique, incompressible write data (the default) against constant buffers
#     (--dedupe-percentage 100: every write repeats one block, no per-I/O work), 4k randwrite;
#   - --verify against the same 4k randrw 50/50 run without it;
#   - hostmax against a bare io_uring loop (examples/bare_uring.rs), 4k randread.
# Prints each pair and the median ratio. Release builds only.
#
# Usage (as root):  benches/data_cost.sh
#   PAIRS=5 RUNTIME=6 VOLUMES=20 VOLUME_MIB=128 IODEPTH=32
#   COMPARE="data verify bare"   which of the comparisons to run (also "baseline", with
#                                BASELINE=<hostmax built from 911975a, the commit before unique
#                                data>: that build, this one's constant buffers and its unique
#                                data in rotated rounds, and "ab":
#                                A=<hostmax> B=<hostmax> AB_ARGS="--rw randwrite --allow-write",
#                                two builds on the same workload; A=B gives the noise floor)
#   HOSTMAX=... BARE=...     binaries to use instead of building them
#   DEVICES="/dev/nvme1n1 ..."  run on these volumes instead of loop devices over tmpfs
#                            (DESTROYS THEIR DATA; they are not filled first)
# Every loop device and file it makes is removed on exit, Ctrl-C or kill.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAIRS=${PAIRS:-5}
RUNTIME=${RUNTIME:-6}
VOLUMES=${VOLUMES:-20}
VOLUME_MIB=${VOLUME_MIB:-128}
IODEPTH=${IODEPTH:-32}
COMPARE=${COMPARE:-"data verify bare"}

die() {
    echo "data_cost: $*" >&2
    exit 2
}
[[ $(id -u) == 0 ]] || die "run as root (it makes loop devices)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON reports"

if [[ -z ${HOSTMAX:-} || -z ${BARE:-} ]]; then
    target=$(cd "$REPO" && cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    (cd "$REPO" && cargo build --release -p hostmax --bin hostmax --example bare_uring >&2)
    HOSTMAX=${HOSTMAX:-$target/release/hostmax}
    BARE=${BARE:-$target/release/examples/bare_uring}
fi

WORK=$(mktemp -d /dev/shm/hostmax-datacost.XXXXXX)
LOOPS=()
cleanup() {
    trap - EXIT INT TERM
    for dev in "${LOOPS[@]}"; do losetup -d "$dev" 2>/dev/null || echo "data_cost: could not detach $dev" >&2; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -n ${DEVICES:-} ]]; then
    # Real volumes instead of loop devices over tmpfs (their data is destroyed): where a write
    # is DMA, not a memory copy, unique data's cost is the stamps alone.
    read -r -a VOLS <<<"$DEVICES"
    FORCE=()
else
    # The script's own volumes: their random contents can look like a signature (one run met
    # libblkid's hfsplus magic at 0x400 of data hostmax had written), so write runs force.
    FORCE=(--force)
    for i in $(seq 1 "$VOLUMES"); do
        img=$WORK/vol$i.img
        truncate -s "${VOLUME_MIB}M" "$img"
        LOOPS+=("$(losetup -f --show --direct-io=on "$img")")
    done
    # Every volume written once first: a first write to a tmpfs page costs more than a rewrite.
    for dev in "${LOOPS[@]}"; do
        dd if=/dev/zero of="$dev" bs=1M count="$VOLUME_MIB" oflag=direct status=none
    done
    VOLS=("${LOOPS[@]}")
fi
CPUS=$(python3 -c 'import os; print(",".join(str(c) for c in sorted(os.sched_getaffinity(0))))')

# Runs a command and prints the CPU seconds (user + system) it and its children used.
cpu_of() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
if out.returncode != 0:
    said = out.stderr.decode(errors="replace").strip().splitlines()[-3:]
    sys.exit(f"data_cost: {sys.argv[1]} exited {out.returncode}: " + " / ".join(said))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(out.stdout.decode())
print(r.ru_utime + r.ru_stime)
PY
}

# I/Os the kernel completed on the volumes so far (reads, writes and their merges: fields 1, 2,
# 5 and 6 of each device's stat), so CPU per I/O counts every I/O of a run (ramp, window, drain,
# --verify's read-back) whatever the build's report says.
kernel_ios() {
    local dev total=0 reads read_merges writes write_merges
    for dev in "${VOLS[@]}"; do
        read -r reads read_merges _ _ writes write_merges _ <"/sys/class/block/$(basename "$(readlink -f "$dev")")/stat"
        total=$((total + reads + read_merges + writes + write_merges))
    done
    echo "$total"
}

# Prints "IOPS CPU-microseconds-per-I/O" of one hostmax run.
hostmax_iops() {
    local cpu before after force=()
    # --force goes with --allow-write only (a read run refuses it).
    [[ " $* " == *" --allow-write "* ]] && force=("${FORCE[@]}")
    before=$(kernel_ios)
    cpu=$(cpu_of "$HOSTMAX" --devices "${VOLS[@]}" --iodepth "$IODEPTH" --runtime "${RUNTIME}s" \
        --ramp 1s --json "$WORK/r.json" "${force[@]}" "$@" 2>"$WORK/err") ||
        die "hostmax $* failed: $(tail -n 2 "$WORK/err")"
    after=$(kernel_ios)
    python3 - "$WORK/r.json" "$cpu" "$((after - before))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(round(r["host"]["iops"]), f"{float(sys.argv[2]) * 1e6 / int(sys.argv[3]):.2f}")
PY
}
bare_iops() {
    local cpu iops before after
    before=$(kernel_ios)
    cpu=$(cpu_of "$BARE" "$RUNTIME" "$IODEPTH" 4096 "$CPUS" "${VOLS[@]}" 2>"$WORK/bare.out")
    after=$(kernel_ios)
    iops=$(awk '/^IOPS/ {print $2}' "$WORK/bare.out")
    python3 -c "print($iops, f'{$cpu * 1e6 / ($after - $before):.2f}')"
}

# pair NAME A-COMMAND B-COMMAND: PAIRS alternated runs (A first on odd pairs), then the
# medians of A/B for IOPS and for CPU per I/O (which contention on a shared machine moves
# less than IOPS).
pair() {
    local name=$1 a=$2 b=$3 ratios=() cpu_ratios=() va vb
    echo "== $name ($PAIRS pairs, alternated): IOPS, CPU-us per I/O"
    for p in $(seq 1 "$PAIRS"); do
        if ((p % 2)); then va=$(eval "$a"); vb=$(eval "$b"); else vb=$(eval "$b"); va=$(eval "$a"); fi
        read -r ia ca <<<"$va"
        read -r ib cb <<<"$vb"
        ratios+=("$(python3 -c "print(f'{$ia/$ib:.3f}')")")
        cpu_ratios+=("$(python3 -c "print(f'{$ca/$cb:.3f}')")")
        echo "pair $p: IOPS $ia / $ib = ${ratios[-1]}; CPU-us/IO $ca / $cb = ${cpu_ratios[-1]}"
    done
    python3 -c "import statistics,sys; r=sorted(map(float,sys.argv[1:])); print(f'median IOPS ratio {statistics.median(r):.3f} (range {r[0]:.3f}-{r[-1]:.3f})')" "${ratios[@]}"
    python3 -c "import statistics,sys; r=sorted(map(float,sys.argv[1:])); print(f'median CPU-per-I/O ratio {statistics.median(r):.3f} (range {r[0]:.3f}-{r[-1]:.3f})')" "${cpu_ratios[@]}"
}

# rotate NAME "LABEL=COMMAND" ...: PAIRS rounds in which every command runs once, each round
# starting one command later (so none always runs first or after the same one), then each
# command's medians over the rounds of its IOPS and CPU per I/O against the first command's
# in the same round.
rotate() {
    local name=$1 n r k i label v
    shift
    local specs=("$@") labels=() iops=() cpus=()
    n=${#specs[@]}
    echo "== $name ($PAIRS rounds, rotated): IOPS, CPU-us per I/O"
    for r in $(seq 0 $((PAIRS - 1))); do
        for k in $(seq 0 $((n - 1))); do
            i=$(((k + r) % n))
            label=${specs[i]%%=*}
            v=$(eval "${specs[i]#*=}")
            labels[i]=$label
            read -r "iops[$((r * n + i))]" "cpus[$((r * n + i))]" <<<"$v"
            echo "round $((r + 1)): $label IOPS ${v% *}, CPU-us/IO ${v#* }"
        done
    done
    python3 - "$n" "${labels[@]}" -- "${iops[@]}" -- "${cpus[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
args = sys.argv[2:]
labels, rest = args[:n], args[n + 1:]
iops, cpus = [float(x) for x in rest[:rest.index("--")]], [float(x) for x in rest[rest.index("--") + 1:]]
rounds = len(iops) // n
for i in range(1, n):
    for name, v in (("IOPS", iops), ("CPU-per-I/O", cpus)):
        r = sorted(v[k * n + i] / v[k * n] for k in range(rounds))
        print(f"{labels[i]} / {labels[0]}: median {name} ratio {statistics.median(r):.3f} (range {r[0]:.3f}-{r[-1]:.3f})")
PY
}

[[ " $COMPARE " == *" data "* ]] && pair "4k randwrite: unique data / constant buffers (--dedupe-percentage 100)" \
    'hostmax_iops --rw randwrite --allow-write' \
    'hostmax_iops --rw randwrite --allow-write --dedupe-percentage 100'
# The issue's own baseline: constant buffers as hostmax had them before unique data (each
# slot of a device filled once from a fixed seed, never rewritten), from a build of the commit
# before it (BASELINE=path; 911975a, the parent of 25cafdf, has no data options at all),
# rotated with this build's constant buffers and its unique data, so that the data's cost and
# the rest of the build's come apart.
[[ " $COMPARE " == *" baseline "* ]] && {
    [[ -x ${BASELINE:-} ]] || die "COMPARE=baseline needs BASELINE=<hostmax built before unique data: commit 911975a>"
    rotate "4k randwrite: this build against the one before unique data ($BASELINE)" \
        'before=HOSTMAX=$BASELINE hostmax_iops --rw randwrite --allow-write' \
        'constant=hostmax_iops --rw randwrite --allow-write --dedupe-percentage 100' \
        'unique=hostmax_iops --rw randwrite --allow-write'
}
[[ " $COMPARE " == *" ab "* ]] && {
    [[ -x ${A:-} && -x ${B:-} ]] || die "COMPARE=ab needs A=<hostmax> and B=<hostmax>"
    pair "${AB_ARGS:=--rw randwrite --allow-write}: $A / $B" \
        'HOSTMAX=$A hostmax_iops $AB_ARGS' \
        'HOSTMAX=$B hostmax_iops $AB_ARGS'
}
[[ " $COMPARE " == *" verify "* ]] && pair "4k randrw: --verify / without" \
    'hostmax_iops --rw randrw --allow-write --verify' \
    'hostmax_iops --rw randrw --allow-write'
[[ " $COMPARE " == *" bare "* ]] && pair "4k randread: hostmax / bare io_uring loop" \
    'hostmax_iops --rw randread' \
    'bare_iops'
exit 0
