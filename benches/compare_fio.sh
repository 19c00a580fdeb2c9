#!/usr/bin/env bash
# hostmax against tuned fio, side by side, on the same loop volumes on tmpfs (issue 6).
#
# Builds VOLUMES loop devices (256 MiB tmpfs files, direct I/O), then for each workload runs
# hostmax and fio alternately PAIRS times with the same runtime and ramp, plus hostmax with
# --no-latency, and prints medians, ratios, I/Os per CPU-second and peak RSS. SCALING=1
# instead runs hostmax 4k randread at 1, 2, 4, 8, 16, 20 and 32 volumes.
#
# Usage (as root):  benches/compare_fio.sh
#   PAIRS=3 RUNTIME=10s RAMP=2s VOLUMES=20     hostmax/fio pairs per workload, their times
#   NOLAT_RUNS=1                               hostmax --no-latency runs per workload
#   WORKLOADS="randread randwrite randrw seqread"   subset to run
#   IODEPTH=32 VOLUME_MIB=256                  depth per volume, volume size
#   CPUS=0-1                                   fio's CPUs (default: all online); hostmax keeps its defaults
#   FIO_BATCH_SUBMIT=32 FIO_BATCH_COMPLETE=64  fio's iodepth_batch_submit / _complete_max
#   FIO_EXTRA="gtod_reduce=1"                  more fio job options (space separated k=v)
#   HOSTMAX=/path/to/hostmax                   use this binary instead of building one
#   OUT=benches/results/compare-<date>.md      where the results go
#   SCALING=1 SCALING_VOLUMES="1 2 4 8 16 20 32"   the scaling table instead
#   ZRAM=1 ZRAM_MIB=1024                       one zram device (lz4) instead of the loop volumes:
#                                              a device that compresses on the submitting CPU, so
#                                              it scales with submitting CPUs (default workload
#                                              randwrite; hostmax with no placement flags, fio
#                                              with one job per CPU on it, split)
#
# Every loop device and file it makes is removed on exit, Ctrl-C or kill.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAIRS=${PAIRS:-3}
RUNTIME=${RUNTIME:-10s}
RAMP=${RAMP:-2s}
VOLUMES=${VOLUMES:-20}
VOLUME_MIB=${VOLUME_MIB:-256}
IODEPTH=${IODEPTH:-32}
NOLAT_RUNS=${NOLAT_RUNS:-1}
WORKLOADS_SET=${WORKLOADS:-}
WORKLOADS=${WORKLOADS:-"randread randwrite randrw seqread"}
FIO_BATCH_SUBMIT=${FIO_BATCH_SUBMIT:-32}
FIO_BATCH_COMPLETE=${FIO_BATCH_COMPLETE:-64}
FIO_EXTRA=${FIO_EXTRA:-}
SCALING=${SCALING:-0}
SCALING_VOLUMES=${SCALING_VOLUMES:-"1 2 4 8 16 20 32"}
ZRAM=${ZRAM:-0}
ZRAM_MIB=${ZRAM_MIB:-1024}
if ((ZRAM == 1)); then
    VOLUMES=1
    WORKLOADS=${WORKLOADS_SET:-randwrite}
fi
if [[ $SCALING == 1 ]]; then kind=scaling; elif [[ $ZRAM == 1 ]]; then kind=zram; else kind=compare; fi
OUT=${OUT:-$REPO/benches/results/$kind-$(date +%Y%m%d-%H%M%S).md}

die() {
    echo "compare_fio: $*" >&2
    exit 2
}
say() { echo "== $*" >&2; }

# Seconds in a duration such as 10s, 500ms, 2m or 10.
seconds_of() {
    python3 - "$1" <<'EOF'
import re, sys
m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", sys.argv[1])
if not m:
    sys.exit(f"compare_fio: bad duration '{sys.argv[1]}': use e.g. 10s, 500ms, 2m")
v = float(m.group(1)) * {"ms": 0.001, None: 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
print(v)
EOF
}

# ---- checks and tools -------------------------------------------------------------------

[[ $(id -u) == 0 ]] || die "must run as root (it makes loop devices): sudo $0"
command -v python3 >/dev/null || die "python3 is needed to read the JSON reports"
for n in PAIRS VOLUMES VOLUME_MIB IODEPTH NOLAT_RUNS FIO_BATCH_SUBMIT FIO_BATCH_COMPLETE; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "$n='${!n}' is not a whole number"
done
((PAIRS >= 1 && VOLUMES >= 1)) || die "PAIRS and VOLUMES must be at least 1"
RUNTIME_S=$(seconds_of "$RUNTIME")
RAMP_S=$(seconds_of "$RAMP")
for w in $WORKLOADS; do
    case $w in randread | randwrite | randrw | seqread) ;;
    *) die "unknown workload '$w' in WORKLOADS: use randread randwrite randrw seqread" ;;
    esac
done

apt_updated=0
need_package() { # command package
    command -v "$1" >/dev/null && return
    say "installing $2"
    if ((apt_updated == 0)); then
        apt-get update -qq >&2 || true
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2 ||
        die "could not install $2; install it and run again"
}
[[ -x /usr/bin/time ]] || need_package /usr/bin/time time
((SCALING == 1)) || need_package fio fio

if [[ -z ${HOSTMAX:-} ]]; then
    say "building hostmax (release)"
    (cd "$REPO" && cargo build --release --quiet -p hostmax --bin hostmax) >&2
    target_dir=$(cd "$REPO" && cargo metadata --no-deps --format-version 1 |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    HOSTMAX=$target_dir/release/hostmax
fi
[[ -x $HOSTMAX ]] || die "no hostmax binary at $HOSTMAX"
"$HOSTMAX" --help | grep -q -- --no-latency ||
    die "$HOSTMAX has no --no-latency flag: build it from a tree with the CLI arguments"

# fio's CPUs: one job per CPU.
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
# shellcheck source=benches/lib.sh
source "$REPO/benches/lib.sh"
FIO_JOBS=$(count_cpus "$CPUS") || die "CPUS='$CPUS' is not a CPU list such as 0-1 or 0,2"

# ---- volumes, always cleaned up --------------------------------------------------------

bench_scratch compare_fio

mkdir "$WORK/runs"
if ((ZRAM == 1)); then
    make_zram_device "$ZRAM_MIB"
    LOOPS=("/dev/zram$ZRAM_ID")
    VOLUME_MIB=$ZRAM_MIB
    say "volume: ${LOOPS[*]} (zram, lz4, $ZRAM_MIB MiB)"
else
    max_volumes=$VOLUMES
    if ((SCALING == 1)); then
        max_volumes=0
        for n in $SCALING_VOLUMES; do
            [[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || die "SCALING_VOLUMES has '$n': give whole numbers >= 1"
            ((n > max_volumes)) && max_volumes=$n
        done
    fi
    need_kib=$((max_volumes * VOLUME_MIB * 1024))
    avail_kib=$(df --output=avail -k /dev/shm | tail -1)
    ((need_kib < avail_kib)) ||
        die "need $((need_kib / 1024)) MiB in /dev/shm for $max_volumes volumes, have $((avail_kib / 1024)) MiB: lower VOLUMES or VOLUME_MIB"

    say "making $max_volumes loop volumes of $VOLUME_MIB MiB in $WORK"
    mkdir "$WORK/vol"
    for ((i = 0; i < max_volumes; i++)); do
        img=$WORK/vol/v$i.img
        # Allocated, not sparse, so reads and writes see the same pages from the first run on.
        fallocate -l "${VOLUME_MIB}M" "$img"
        LOOPS+=("$(losetup -f --show --direct-io=on "$img")")
    done
    say "volumes: ${LOOPS[*]}"
fi
# tmpfs pages that fallocate made are zeroed on their first write, so the first write run
# would pay for that and the runs after it not: write every volume once before measuring.
if [[ " $WORKLOADS " == *write* || " $WORKLOADS " == *randrw* ]]; then
    say "writing every volume once (first writes to fallocated tmpfs pages cost more)"
    # zram keeps a zero page as a flag, not a compressed page: fill it with data it must store.
    fill=/dev/zero
    ((ZRAM == 0)) || fill=/dev/urandom
    for dev in "${LOOPS[@]}"; do
        dd if="$fill" of="$dev" bs=1M count="$VOLUME_MIB" oflag=direct status=none
    done
fi

# ---- one measured run ------------------------------------------------------------------

RECORDS=$WORK/records.tsv
: >"$RECORDS"

# I/Os issued to the given devices so far, by the kernel's count (/sys/block/*/stat): reads
# and writes completed plus those merged into a neighbour (sequential I/O merges, and how much
# differs between tools), so that it is what the tool submitted.
kernel_ios() {
    local total=0 dev r rm w wm
    for dev in "$@"; do
        read -r r rm _ _ w wm _ </sys/block/"${dev#/dev/}"/stat
        total=$((total + r + rm + w + wm))
    done
    echo "$total"
}

# run_one TOOL WORKLOAD PAIR NVOL -- command...: runs the command under /usr/bin/time and
# appends a record: mode workload tool pair nvol iops user sys maxrss_kib kernel_ios.
# The command writes its JSON report to $WORK/runs/current.json.
run_one() {
    local tool=$1 workload=$2 pair=$3 nvol=$4
    shift 5
    local devs=("${LOOPS[@]:0:nvol}") json=$WORK/runs/current.json
    local log=$WORK/runs/$tool-$workload-$pair-$nvol.log timing=$WORK/runs/time
    rm -f "$json" "$timing"
    local before after rc=0
    before=$(kernel_ios "${devs[@]}")
    local limit
    limit=$(python3 -c "print(int($RUNTIME_S + $RAMP_S + 60))")
    # Runs in the background so a Ctrl-C reaches the trap at once; timeout kills its group.
    timeout --signal=TERM --kill-after=10 "$limit" \
        /usr/bin/time -f '%U %S %M' -o "$timing" "$@" >"$log" 2>&1 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=
    after=$(kernel_ios "${devs[@]}")
    if ((rc != 0)) || [[ ! -s $json ]]; then
        echo "compare_fio: $tool $workload run $pair failed (exit $rc); its output:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    python3 - "$tool" "$json" "$timing" "$workload" "$pair" "$nvol" "$((after - before))" \
        "${MODE:-compare}" >>"$RECORDS" <<'EOF'
import json, sys
tool, path, timing, workload, pair, nvol, kios, mode = sys.argv[1:]
text = open(path).read()
# fio can print warnings before its JSON; start at the first brace.
doc = json.loads(text[text.index("{"):])
if tool == "fio":
    iops = sum(j["read"]["iops"] + j["write"]["iops"] for j in doc["jobs"])
    errors = sum(j.get("error", 0) for j in doc["jobs"])
else:
    iops = doc["host"]["iops"]
    errors = doc["host"]["errors"]
if errors:
    sys.exit(f"compare_fio: {tool} {workload} reported {errors} errors: see {path}")
lines = open(timing).read().split("\n")
# /usr/bin/time writes "Command exited with non-zero status" first on failure; take the last.
user, sys_s, rss = [l for l in lines if l.strip()][-1].split()
print("\t".join([mode, workload, tool, pair, nvol, f"{iops:.1f}", user, sys_s, rss, kios]))
EOF
    awk -F'\t' 'END { printf "   %-16s %-9s run %s: %8.0f IOPS  cpu %5.2fs+%5.2fs  rss %6.1f MiB\n",
        $3, $2, $4, $6, $7, $8, $9 / 1024 }' "$RECORDS" >&2
}

# workload name -> hostmax arguments / fio options. The volumes are this script's own, and
# their random contents can look like a signature (one run met libblkid's hfsplus magic at
# 0x400 of data hostmax had written): --force, as fio would write them anyway.
hostmax_args() {
    case $1 in
    randread) echo "--rw randread --bs 4k" ;;
    randwrite) echo "--rw randwrite --bs 4k --allow-write --force" ;;
    randrw) echo "--rw randrw --rwmixread 50 --bs 4k --allow-write --force" ;;
    seqread) echo "--rw read --bs 128k" ;;
    esac
}
fio_opts() {
    case $1 in
    randread) echo "rw=randread bs=4k" ;;
    randwrite) echo "rw=randwrite bs=4k" ;;
    randrw) echo "rw=randrw rwmixread=50 bs=4k" ;;
    seqread) echo "rw=read bs=128k" ;;
    esac
}

run_hostmax() { # workload pair nvol [extra flags]
    local workload=$1 pair=$2 nvol=$3 tool=hostmax
    shift 3
    [[ " $* " == *" --no-latency "* ]] && tool=hostmax-nolat
    # shellcheck disable=SC2046 # the workload's flags are meant to split
    run_one "$tool" "$workload" "$pair" "$nvol" -- \
        "$HOSTMAX" --devices "${LOOPS[@]:0:nvol}" $(hostmax_args "$workload") \
        --iodepth "$IODEPTH" --runtime "$RUNTIME" --ramp "$RAMP" \
        --json "$WORK/runs/current.json" "$@"
}

# fio at its best here: io_uring with registered files and buffers, batched submit and
# reap, one thread per CPU over all volumes, the same total depth as hostmax.
run_fio() { # workload pair nvol
    local workload=$1 pair=$2 nvol=$3
    local depth=$(((IODEPTH * nvol + FIO_JOBS - 1) / FIO_JOBS))
    local files job=$WORK/runs/job.fio
    files=$(
        IFS=:
        echo "${LOOPS[*]:0:nvol}"
    )
    {
        echo "[global]"
        printf '%s\n' ioengine=io_uring direct=1 fixedbufs=1 registerfiles=1 thread=1 \
            norandommap=1 randrepeat=0 time_based=1 group_reporting=1 \
            "runtime=$RUNTIME" "ramp_time=$RAMP" "iodepth=$depth" \
            "iodepth_batch_submit=$FIO_BATCH_SUBMIT" "iodepth_batch_complete_min=1" \
            "iodepth_batch_complete_max=$FIO_BATCH_COMPLETE" \
            "numjobs=$FIO_JOBS" "cpus_allowed=$CPUS" cpus_allowed_policy=split \
            "filename=$files" $(fio_opts "$workload") $FIO_EXTRA
        echo "[all-volumes]"
    } >"$job"
    cp "$job" "$WORK/runs/fio-$workload.fio"
    run_one fio "$workload" "$pair" "$nvol" -- \
        fio --output-format=json --output="$WORK/runs/current.json" "$job"
}

# ---- the runs ----------------------------------------------------------------------------

mkdir -p "$(dirname "$OUT")"
HEADER="$(date -Is) $(uname -r), $(nproc) CPUs, $(fio --version 2>/dev/null || echo 'no fio'), hostmax $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')"

if ((SCALING == 1)); then
    MODE=scaling
    for n in $SCALING_VOLUMES; do
        say "scaling: 4k randread over $n volumes"
        for ((p = 1; p <= PAIRS; p++)); do
            run_hostmax randread "$p" "$n"
        done
    done
else
    MODE=compare
    for w in $WORKLOADS; do
        say "$w over $VOLUMES volumes, iodepth $IODEPTH each; fio: $FIO_JOBS jobs x iodepth $(((IODEPTH * VOLUMES + FIO_JOBS - 1) / FIO_JOBS))"
        for ((p = 1; p <= PAIRS; p++)); do
            run_hostmax "$w" "$p" "$VOLUMES"
            run_fio "$w" "$p" "$VOLUMES"
            if ((p <= NOLAT_RUNS)); then
                run_hostmax "$w" "$p" "$VOLUMES" --no-latency
            fi
        done
    done
fi

# ---- the report --------------------------------------------------------------------------

python3 - "$RECORDS" "$OUT" "$HEADER" "$MODE" "$VOLUMES" "$IODEPTH" "$RUNTIME" "$RAMP" \
    "$FIO_JOBS" "$VOLUME_MIB" "$WORK/runs" "$kind" <<'EOF'
import glob, os, statistics as st, sys
records, out, header, mode, volumes, iodepth, runtime, ramp, jobs, vol_mib, runs, kind = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(records) if l.strip()]
recs = [dict(mode=r[0], workload=r[1], tool=r[2], pair=int(r[3]), nvol=int(r[4]),
             iops=float(r[5]), cpu=float(r[6]) + float(r[7]), rss_kib=int(r[8]), kios=int(r[9]))
        for r in rows]
for r in recs:
    r["ios_per_cpu_s"] = r["kios"] / r["cpu"] if r["cpu"] > 0 else float("nan")

def med(xs):
    return st.median(xs) if xs else float("nan")

def k(x):
    return f"{x / 1000:.0f}K" if x == x else "-"

lines = [f"# hostmax {'scaling' if mode == 'scaling' else 'vs fio'}{' on zram' if kind == 'zram' else ''}", "", f"{header}", ""]
summary = []
if mode == "compare":
    what = (f"one zram device (lz4, {vol_mib} MiB)" if kind == "zram"
            else f"{volumes} loop volumes on tmpfs ({vol_mib} MiB, direct I/O)")
    lines.append(f"{what}, iodepth {iodepth} per volume, "
                 f"runtime {runtime}, ramp {ramp}; fio: io_uring, fixedbufs, registerfiles, {jobs} jobs "
                 "(one per CPU, split) over all volumes. I/Os per CPU-s: I/Os the kernel completed on the "
                 "volumes during the process (/sys/block/*/stat, completed + merged) over its user+sys time.")
    lines.append("")
    summary = ["| workload | hostmax IOPS | fio IOPS | hostmax/fio (pairs) | hostmax I/Os per CPU-s | fio I/Os per CPU-s | ratio | hostmax peak RSS | no-latency IOPS | latency cost |",
               "|---|---|---|---|---|---|---|---|---|---|"]
    for w in dict.fromkeys(r["workload"] for r in recs):
        by = lambda t: [r for r in recs if r["workload"] == w and r["tool"] == t]
        hm, fio, nl = by("hostmax"), by("fio"), by("hostmax-nolat")
        hm_iops, fio_iops = med([r["iops"] for r in hm]), med([r["iops"] for r in fio])
        pair_ratios = [h["iops"] / f["iops"] for h in hm for f in fio if h["pair"] == f["pair"] and f["iops"]]
        hm_eff, fio_eff = med([r["ios_per_cpu_s"] for r in hm]), med([r["ios_per_cpu_s"] for r in fio])
        rss = max((r["rss_kib"] for r in hm), default=0) / 1024
        nl_iops = med([r["iops"] for r in nl])
        # Latency cost: IOPS lost with recording on, against the same pairs' no-latency runs.
        lat_hm = med([r["iops"] for r in hm if r["pair"] in {n["pair"] for n in nl}])
        cost = f"{(nl_iops - lat_hm) / nl_iops * 100:+.1f}%" if nl and nl_iops else "-"
        spread = f" ({min(pair_ratios):.2f}-{max(pair_ratios):.2f})" if len(pair_ratios) > 1 else ""
        summary.append(f"| {w} | {k(hm_iops)} | {k(fio_iops)} | {hm_iops / fio_iops:.2f}x{spread} | "
                       f"{k(hm_eff)} | {k(fio_eff)} | {hm_eff / fio_eff:.2f}x | {rss:.1f} MiB | "
                       f"{k(nl_iops)} | {cost} |")
else:
    lines.append(f"hostmax 4k randread, iodepth {iodepth} per volume, runtime {runtime}, ramp {ramp}, "
                 f"{vol_mib} MiB loop volumes on tmpfs. CPU per I/O: user+sys over the I/Os the kernel "
                 "completed on the volumes during the process. Buffers: volumes x iodepth x 4 KiB.")
    lines.append("")
    summary = ["| volumes | IOPS | CPU-us per I/O | peak RSS | RSS less buffers |", "|---|---|---|---|---|"]
    for n in sorted({r["nvol"] for r in recs}):
        rs = [r for r in recs if r["nvol"] == n]
        rss = max(r["rss_kib"] for r in rs) / 1024
        buffers = n * int(iodepth) * 4096 / 2**20
        summary.append(f"| {n} | {k(med([r['iops'] for r in rs]))} | "
                       f"{med([r['cpu'] / r['kios'] * 1e6 for r in rs if r['kios']]):.2f} | "
                       f"{rss:.1f} MiB | {rss - buffers:.1f} MiB |")
lines += summary + ["", "## Runs", "", "| workload | tool | run | volumes | IOPS | user+sys s | peak RSS MiB | kernel I/Os | I/Os per CPU-s |",
                    "|---|---|---|---|---|---|---|---|---|"]
for r in recs:
    lines.append(f"| {r['workload']} | {r['tool']} | {r['pair']} | {r['nvol']} | {r['iops']:.0f} | {r['cpu']:.2f} | "
                 f"{r['rss_kib'] / 1024:.1f} | {r['kios']} | {r['ios_per_cpu_s']:.0f} |")
jobs_files = sorted(glob.glob(os.path.join(runs, "fio-*.fio")))
if jobs_files:
    lines += ["", "## fio job files", ""]
    for f in jobs_files:
        lines += ["```ini", open(f).read().rstrip(), "```"]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(summary))
EOF
say "results written to $OUT"
