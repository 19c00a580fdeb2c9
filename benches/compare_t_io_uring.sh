#!/usr/bin/env bash
# hostmax against fio's t/io_uring, the per-core peak tool, alternated in one sitting (issue 28,
# item 5). t/io_uring does fixed-depth random reads (or NOPs with -N1) with registered files
# and buffers and no latency recording: the most a core's io_uring loop can do, the bar
# hostmax's loop is held to. Three cases:
#
#   zram  one zram device (lz4) filled from /dev/urandom, 4k random reads, 2 threads of depth
#         32: hostmax --numjobs 2 --iodepth 32 (and the same with --no-latency) against
#         t/io_uring -n2 -d32 -p0 -B1 -F1 with -s8 -c8 and with -s32 -c32
#   nop   io_uring NOPs on the CPUs (no device): hostmax doctor's load generator ceiling at
#         depth 128 against t/io_uring -N1 -n2 -d128, and against t/io_uring-timed: the same
#         NOPs carrying what hostmax's carry, with latencies (build_t_io_uring_timed)
#   loop  20 loop volumes on tmpfs, 2 threads of 256 in flight each: hostmax --iodepth 26 a
#         volume (its default placement, a worker a CPU, splits them) against t/io_uring -n2
#         -d256 -s32 -c32 over all of them
#
# fio runs beside them, as in compare_fio.sh and ceiling.sh (FIO=0 leaves it out): io_uring
# with fixed buffers, registered files and batched submit and reap, the same threads (jobs,
# split over the CPUs) and depth; ioengine=null for the NOPs.
#
# Each case runs its tools one after another PAIRS times (a round), prints every run's IOPS
# and each round's ratios hostmax / t/io_uring (and / fio), then the medians.
#
# t/io_uring is built when missing, into target/t_io_uring/ (fio's source from Debian's
# source package: `apt-get source fio`, adding a deb-src entry beside the deb ones when there
# is none; then ./configure && make t/io_uring), and t/io_uring-timed beside it.
#
# Usage (as root):  benches/compare_t_io_uring.sh
#   PAIRS=3 RUNTIME=10                 rounds per case, seconds per run
#   CASES="zram nop loop"              which cases
#   ZRAM_MIB=1024                      the zram device's size
#   VOLUMES=20 VOLUME_MIB=256          the loop case's volumes
#   CPUS=0-1                           the nop case's CPUs, fio's (default: every online CPU)
#   FIO=1                              fio beside them (it is installed when missing)
#   HOSTMAX=/path/to/hostmax           use this binary instead of building one
#   T_IO_URING=/path/to/t/io_uring     use this binary instead of building one
#   T_IO_URING_TIMED=/path/to/binary   the same for t/io_uring-timed
#   OUT=benches/results/t_io_uring-<date>.md   where the results go
#
# Every zram and loop device and file it makes is removed on exit, Ctrl-C or kill.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAIRS=${PAIRS:-3}
RUNTIME=${RUNTIME:-10}
CASES=${CASES:-"zram nop loop"}
ZRAM_MIB=${ZRAM_MIB:-1024}
VOLUMES=${VOLUMES:-20}
VOLUME_MIB=${VOLUME_MIB:-256}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
FIO=${FIO:-1}
OUT=${OUT:-$REPO/benches/results/t_io_uring-$(date +%Y%m%d-%H%M%S).md}

die() {
    echo "compare_t_io_uring: $*" >&2
    exit 2
}
say() { echo "== $*" >&2; }

[[ $(id -u) == 0 ]] || die "must run as root (it makes zram and loop devices): sudo $0"
command -v python3 >/dev/null || die "python3 is needed to read the reports"
[[ $FIO == 0 || $FIO == 1 ]] || die "FIO='$FIO': give 0 or 1"
for n in PAIRS RUNTIME ZRAM_MIB VOLUMES VOLUME_MIB; do
    [[ ${!n} =~ ^[0-9]+$ && ${!n} -ge 1 ]] || die "$n='${!n}' is not a whole number of at least 1"
done
for c in $CASES; do
    case $c in zram | nop | loop) ;;
    *) die "unknown case '$c' in CASES: use zram nop loop" ;;
    esac
done
# shellcheck source=benches/lib.sh
source "$REPO/benches/lib.sh"
count_cpus "$CPUS" >/dev/null || die "CPUS='$CPUS' is not a CPU list such as 0-1 or 0,2"

TARGET_DIR=$(cd "$REPO" && cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

# ---- the tools -----------------------------------------------------------------------------

# A deb-src entry for each Debian deb entry of the deb822 .sources files, in a file of its
# own, when apt has no deb-src entry at all (apt-get source needs one).
add_deb_src() {
    local list=/etc/apt/sources.list.d/debian-src.sources
    if grep -rqsE '^(Types:.*\bdeb-src\b|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        return
    fi
    say "adding deb-src entries to $list (apt-get source needs them)"
    python3 - "$list" <<'EOF'
import glob, re, sys
stanzas = []
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read().strip()):
        types = re.search(r"^Types:\s*(.*)$", stanza, re.M)
        uris = re.search(r"^URIs:\s*(.*)$", stanza, re.M)
        if types and "deb" in types.group(1).split() and uris and "debian" in uris.group(1):
            stanzas.append(re.sub(r"^Types:.*$", "Types: deb-src", stanza, count=1, flags=re.M))
if not stanzas:
    sys.exit("compare_t_io_uring: no Debian deb entry in /etc/apt/sources.list.d/*.sources to copy")
open(sys.argv[1], "w").write("\n\n".join(stanzas) + "\n")
EOF
    apt-get update -qq >&2
}

# fio's source from Debian's source package, unpacked into $TARGET_DIR/t_io_uring/src and
# configured once (a folder left unconfigured by an interrupted run is configured now);
# prints its folder.
fio_source() {
    local cache=$TARGET_DIR/t_io_uring dir
    if ! command -v make >/dev/null || ! command -v cc >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential >&2
    fi
    dir=$(find "$cache/src" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' 2>/dev/null | head -1)
    if [[ -z $dir ]]; then
        command -v dpkg-source >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev >&2
        add_deb_src
        say "unpacking fio's Debian source package into $cache/src"
        rm -rf "$cache/src"
        mkdir -p "$cache/src"
        (cd "$cache/src" && apt-get source -qq fio >&2) || die "apt-get source fio failed"
        dir=$(find "$cache/src" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' | head -1)
        [[ -n $dir ]] || die "apt-get source fio unpacked no fio-* folder in $cache/src"
    fi
    # ./configure writes config-host.mak, which every build of t/io_uring includes.
    if [[ ! -f $dir/config-host.mak ]]; then
        (cd "$dir" && ./configure >&2) || die "fio's ./configure failed in $dir"
    fi
    echo "$dir"
}

# Builds fio's t/io_uring into $TARGET_DIR/t_io_uring/.
build_t_io_uring() {
    local cache=$TARGET_DIR/t_io_uring
    local built=$cache/io_uring dir
    if [[ -x $built ]]; then
        echo "$built"
        return
    fi
    dir=$(fio_source)
    say "building t/io_uring in $dir"
    (cd "$dir" && make -j"$(nproc)" t/io_uring >&2) || die "building t/io_uring failed in $dir"
    cp "$dir/t/io_uring" "$built"
    # one-core-peak.sh lists the settings a peak run wants; hostmax doctor names them too.
    cp "$dir/t/one-core-peak.sh" "$cache/" 2>/dev/null || true
    echo "$built"
}

# Builds t/io_uring-timed into $TARGET_DIR/t_io_uring/io_uring_timed_nops: t/io_uring whose
# NOPs carry what a timed, placed I/O carries, as hostmax's NOPs do: every field of the SQE
# written as for a read, a random offset drawn, the I/O's own user_data with its submit
# batch's clock index, so that with -t1 their latencies are recorded a batch at a time as
# t/io_uring records its reads'. (-N1 alone writes the opcode byte and records nothing.)
# The source is patched for the build and put back.
build_t_io_uring_timed() {
    local cache=$TARGET_DIR/t_io_uring
    local built=$cache/io_uring_timed_nops dir rc=0
    if [[ -x $built ]]; then
        echo "$built"
        return
    fi
    dir=$(fio_source)
    say "building t/io_uring with timed NOPs in $dir"
    cp "$dir/t/io_uring.c" "$dir/t/io_uring.c.orig"
    python3 - "$dir/t/io_uring.c" <<'EOF' || rc=$?
import sys
path = sys.argv[1]
src = open(path).read()
early = """	if (do_nop) {
		sqe->opcode = IORING_OP_NOP;
		return;
	}
"""
timed = """	if (do_nop) {
		sqe->opcode = IORING_OP_NOP;
		sqe->flags = 0;
		sqe->fd = 0;
		sqe->addr = (unsigned long) s->iovecs[index].iov_base;
		sqe->len = bs;
		sqe->buf_index = 0;
		sqe->ioprio = 0;
		sqe->rw_flags = 0;
		sqe->off = (__rand64(&s->rand_state) % 262143) * bs;
		sqe->user_data = index;
		if (stats && stats_running)
			sqe->user_data |= ((uint64_t)s->clock_index << 32);
		return;
	}
"""
if src.count(early) != 1:
    sys.exit("compare_t_io_uring: this fio's t/io_uring.c has no NOP early return to patch")
open(path, "w").write(src.replace(early, timed))
EOF
    if ((rc == 0)); then
        (cd "$dir" && make -j"$(nproc)" t/io_uring >&2 && cp t/io_uring "$built") || rc=$?
    fi
    mv "$dir/t/io_uring.c.orig" "$dir/t/io_uring.c"
    # Newer than the patched build's objects, so the next make builds the original again.
    touch "$dir/t/io_uring.c"
    ((rc == 0)) || die "building t/io_uring with timed NOPs failed in $dir"
    echo "$built"
}

T_IO_URING=${T_IO_URING:-$(build_t_io_uring)}
[[ -x $T_IO_URING ]] || die "no t/io_uring binary at $T_IO_URING"
if [[ " $CASES " == *" nop "* ]]; then
    T_IO_URING_TIMED=${T_IO_URING_TIMED:-$(build_t_io_uring_timed)}
    [[ -x $T_IO_URING_TIMED ]] || die "no t/io_uring-timed binary at $T_IO_URING_TIMED"
fi
if [[ ${BUILD_ONLY:-0} == 1 ]]; then
    echo "$T_IO_URING"
    exit 0
fi

if ((FIO == 1)) && ! command -v fio >/dev/null; then
    say "installing fio"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >&2 || die "could not install fio; install it or run with FIO=0"
fi

if [[ -z ${HOSTMAX:-} ]]; then
    say "building hostmax (release)"
    (cd "$REPO" && cargo build --release --quiet -p hostmax --bin hostmax) >&2
    HOSTMAX=$TARGET_DIR/release/hostmax
fi
[[ -x $HOSTMAX ]] || die "no hostmax binary at $HOSTMAX"
"$HOSTMAX" --help | grep -q -- --numjobs ||
    die "$HOSTMAX has no --numjobs flag: build it from a tree with the CLI arguments"

# ---- devices, always cleaned up ------------------------------------------------------------

bench_scratch compare_t_io_uring

# One lz4 zram device filled from /dev/urandom: zram keeps a page never written, or all
# zeros, as a flag and reads it back without decompressing anything.
make_zram() {
    make_zram_device "$ZRAM_MIB"
    say "filling /dev/zram$ZRAM_ID ($ZRAM_MIB MiB, lz4) from /dev/urandom"
    dd if=/dev/urandom of="/dev/zram$ZRAM_ID" bs=1M count="$ZRAM_MIB" oflag=direct status=none
    ZRAM_DEV=/dev/zram$ZRAM_ID
}

# VOLUMES loop devices over allocated tmpfs files, direct I/O, written once so reads see
# the same pages from the first run on.
make_loops() {
    local need_kib=$((VOLUMES * VOLUME_MIB * 1024)) avail_kib
    avail_kib=$(df --output=avail -k /dev/shm | tail -1)
    ((need_kib < avail_kib)) ||
        die "need $((need_kib / 1024)) MiB in /dev/shm for $VOLUMES volumes, have $((avail_kib / 1024)) MiB: lower VOLUMES or VOLUME_MIB"
    say "making $VOLUMES loop volumes of $VOLUME_MIB MiB in $WORK"
    mkdir -p "$WORK/vol"
    local i img
    for ((i = 0; i < VOLUMES; i++)); do
        img=$WORK/vol/v$i.img
        fallocate -l "${VOLUME_MIB}M" "$img"
        LOOPS+=("$(losetup -f --show --direct-io=on "$img")")
    done
    for dev in "${LOOPS[@]}"; do
        dd if=/dev/zero of="$dev" bs=1M count="$VOLUME_MIB" oflag=direct status=none
    done
}

# ---- one run -------------------------------------------------------------------------------

RECORDS=$WORK/records.tsv
: >"$RECORDS"

# run_one CASE TOOL ROUND KIND -- command...: runs the command (its output to a log) and
# appends "case tool round iops" to the records. KIND says where its IOPS are:
# report (hostmax's JSON host.iops), ceiling (hostmax doctor's JSON, all CPUs' NOP rates
# added), fio (its JSON, every job's reads), t_io_uring (its one IOPS= line a second, the
# first dropped as a ramp).
run_one() {
    local case=$1 tool=$2 round=$3 kind=$4
    shift 5
    local log=$WORK/$case-${tool//\//_}-$round.log json=$WORK/current.json rc=0
    rm -f "$json"
    timeout --signal=TERM --kill-after=10 $((RUNTIME + 60)) "$@" >"$log" 2>&1 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=
    if ((rc != 0)); then
        echo "compare_t_io_uring: $case $tool round $round failed (exit $rc); its output:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    python3 - "$kind" "$json" "$log" "$case" "$tool" "$round" >>"$RECORDS" <<'PY'
import json, re, statistics, sys
kind, path, log, case, tool, rnd = sys.argv[1:]
if kind == "report":
    doc = json.load(open(path))
    if doc["host"]["errors"]:
        sys.exit(f"compare_t_io_uring: {tool} reported {doc['host']['errors']} errors: see {log}")
    iops = doc["host"]["iops"]
elif kind == "ceiling":
    iops = sum(c["ios_per_sec"] for c in json.load(open(path))["load_generator_ceiling"]["cpus"])
elif kind == "fio":
    text = open(path).read()
    # fio can print warnings before its JSON; start at the first brace.
    jobs = json.loads(text[text.index("{"):])["jobs"]
    if any(j.get("error", 0) for j in jobs):
        sys.exit(f"compare_t_io_uring: fio reported errors: see {path}")
    iops = sum(j["read"]["iops"] for j in jobs)
else:
    scale = {"": 1, "K": 1e3, "M": 1e6}
    rates = [float(v) * scale[u] for v, u in re.findall(r"^IOPS=([\d.]+)([KM]?),", open(log).read(), re.M)]
    if not rates:
        sys.exit(f"compare_t_io_uring: no IOPS= line from t/io_uring: see {log}")
    # Its first second holds the threads' start: a ramp, as hostmax's --ramp is.
    iops = statistics.mean(rates[1:] if len(rates) > 1 else rates)
print(f"{case}\t{tool}\t{rnd}\t{iops:.1f}")
PY
    awk -F'\t' 'END { printf "   %-5s %-22s round %s: %10.0f IOPS\n", $1, $2, $3, $4 }' "$RECORDS" >&2
}

# t/io_uring runs 2 s more than RUNTIME: it prints a line for each whole second but the last,
# and the first is dropped, which leaves RUNTIME seconds.
t_io_uring() { # case tool round flags... -- files...
    local case=$1 tool=$2 round=$3
    shift 3
    run_one "$case" "$tool" "$round" t_io_uring -- "$T_IO_URING" -r $((RUNTIME + 2)) "$@"
}

# fio with its best options here (compare_fio.sh's), JOBS jobs split over CPUS, a 1 s ramp
# as hostmax's; its JSON goes where run_one reads it.
fio_run() { # case round options...
    local case=$1 round=$2
    shift 2
    ((FIO == 1)) || return 0
    run_one "$case" fio "$round" fio -- fio --name="$case" --thread --time_based \
        --runtime="$RUNTIME" --ramp_time=1 --group_reporting --rw=randread --bs=4k \
        --norandommap --randrepeat=0 --cpus_allowed="$CPUS" --cpus_allowed_policy=split \
        --output-format=json --output="$WORK/current.json" "$@"
}
# io_uring at its best, as compare_fio.sh runs it.
FIO_URING=(--ioengine=io_uring --direct=1 --fixedbufs=1 --registerfiles=1
    --iodepth_batch_submit=32 --iodepth_batch_complete_min=1 --iodepth_batch_complete_max=64)

hostmax_run() { # case tool round flags...
    local case=$1 tool=$2 round=$3
    shift 3
    run_one "$case" "$tool" "$round" report -- "$HOSTMAX" --runtime "${RUNTIME}s" --ramp 1s \
        --json "$WORK/current.json" "$@"
}

# ---- the cases -----------------------------------------------------------------------------

# Which fio the built t/io_uring came from (its source folder), or the binary given.
t_io_uring_from=$(find "$TARGET_DIR/t_io_uring/src" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' -printf '%f\n' 2>/dev/null | head -1)
[[ $T_IO_URING == "$TARGET_DIR/t_io_uring/io_uring" && -n $t_io_uring_from ]] || t_io_uring_from=$T_IO_URING
HEADER="$(date -Is) $(uname -r), $(nproc) CPUs, t/io_uring of $t_io_uring_from, hostmax $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')"

for c in $CASES; do
    case $c in
    zram)
        make_zram
        say "zram: 4k random reads on $ZRAM_DEV, 2 threads of depth 32"
        for ((r = 1; r <= PAIRS; r++)); do
            hostmax_run zram hostmax "$r" --devices "$ZRAM_DEV" --rw randread --bs 4k --numjobs 2 --iodepth 32
            t_io_uring zram t/io_uring-s8 "$r" -n2 -d32 -p0 -B1 -F1 -s8 -c8 "$ZRAM_DEV"
            hostmax_run zram hostmax-nolat "$r" --devices "$ZRAM_DEV" --rw randread --bs 4k --numjobs 2 --iodepth 32 --no-latency
            hostmax_run zram hostmax-c8 "$r" --devices "$ZRAM_DEV" --rw randread --bs 4k --numjobs 2 --iodepth 32 --complete-batch 8
            t_io_uring zram t/io_uring-s32 "$r" -n2 -d32 -p0 -B1 -F1 -s32 -c32 "$ZRAM_DEV"
            hostmax_run zram hostmax-c8-nolat "$r" --devices "$ZRAM_DEV" --rw randread --bs 4k --numjobs 2 --iodepth 32 --complete-batch 8 --no-latency
            hostmax_run zram hostmax-c32 "$r" --devices "$ZRAM_DEV" --rw randread --bs 4k --numjobs 2 --iodepth 32 --complete-batch 32
            fio_run zram "$r" "${FIO_URING[@]}" --numjobs=2 --iodepth=32 --filename="$ZRAM_DEV"
        done
        echo "$ZRAM_ID" >/sys/class/zram-control/hot_remove
        ZRAM_ID=
        ;;
    nop)
        say "nop: io_uring NOPs on CPUs $CPUS, depth 128 a thread"
        threads=$(count_cpus "$CPUS")
        for ((r = 1; r <= PAIRS; r++)); do
            run_one nop hostmax "$r" ceiling -- "$HOSTMAX" doctor --cpus "$CPUS" --iodepth 128 \
                --ceiling-runtime "${RUNTIME}s" --json "$WORK/current.json"
            t_io_uring nop t/io_uring "$r" -N1 -n"$threads" -d128
            run_one nop t/io_uring-timed "$r" t_io_uring -- "$T_IO_URING_TIMED" -r $((RUNTIME + 2)) \
                -N1 -n"$threads" -d128 -t1
            fio_run nop "$r" --ioengine=null --directory="$WORK" --size=1g --numjobs="$threads" --iodepth=128
        done
        ;;
    loop)
        make_loops
        say "loop: 4k random reads on $VOLUMES loop volumes, 2 threads of 256 in flight"
        per_volume=$(((2 * 256 + VOLUMES - 1) / VOLUMES))
        for ((r = 1; r <= PAIRS; r++)); do
            hostmax_run loop hostmax "$r" --devices "${LOOPS[@]}" --rw randread --bs 4k --iodepth "$per_volume"
            t_io_uring loop t/io_uring "$r" -n2 -d256 -p0 -B1 -F1 -s32 -c32 "${LOOPS[@]}"
            hostmax_run loop hostmax-nolat "$r" --devices "${LOOPS[@]}" --rw randread --bs 4k --iodepth "$per_volume" --no-latency
            hostmax_run loop hostmax-c8 "$r" --devices "${LOOPS[@]}" --rw randread --bs 4k --iodepth "$per_volume" --complete-batch 8
            fio_run loop "$r" "${FIO_URING[@]}" --numjobs=2 --iodepth=256 \
                --filename="$(
                    IFS=:
                    echo "${LOOPS[*]}"
                )"
        done
        for dev in "${LOOPS[@]}"; do losetup -d "$dev"; done
        LOOPS=()
        rm -rf "$WORK/vol"
        ;;
    esac
done

# ---- the report ----------------------------------------------------------------------------

mkdir -p "$(dirname "$OUT")"
python3 - "$RECORDS" "$OUT" "$HEADER" "$RUNTIME" "$PAIRS" "$VOLUMES" "$ZRAM_MIB" "$CPUS" <<'PY'
import statistics as st, sys
records, out, header, runtime, pairs, volumes, zram_mib, cpus = sys.argv[1:]
recs = [l.rstrip("\n").split("\t") for l in open(records) if l.strip()]
recs = [dict(case=c, tool=t, round=int(r), iops=float(i)) for c, t, r, i in recs]
what = {
    "zram": f"one zram device (lz4, {zram_mib} MiB, random data), 4k random reads, 2 threads of depth 32: "
            "hostmax --numjobs 2 --iodepth 32 (hostmax-c8: reaping 8 at a time, --complete-batch 8; -c8-nolat: the same with --no-latency; -c32: --complete-batch 32); t/io_uring -n2 -d32 -p0 -B1 -F1 -s8 -c8 / -s32 -c32",
    "nop": f"io_uring NOPs on CPUs {cpus}, depth 128 a thread: hostmax doctor's load generator ceiling "
           "(all CPUs' rates added); t/io_uring -N1 -d128, a thread a CPU; t/io_uring-timed: the same with "
           "NOPs that carry what hostmax's carry (every SQE field, a random offset, the I/O's own user_data) "
           "and latencies recorded a batch at a time (-t1)",
    "loop": f"{volumes} loop volumes on tmpfs, 4k random reads, 2 threads of 256 in flight: hostmax --iodepth "
            f"{-(-512 // int(volumes))} a volume (hostmax-c8: --complete-batch 8); t/io_uring -n2 -d256 -p0 -B1 -F1 -s32 -c32",
}
def k(x):
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}K"
lines = ["# hostmax against t/io_uring", "", header, "",
         f"{runtime} s runs (hostmax after a 1 s ramp; t/io_uring's first second dropped), {pairs} rounds, "
         "alternated within each round. Ratio: hostmax / the other tool in the same round. "
         "fio: io_uring, fixedbufs, registerfiles, batch 32/64, 2 jobs split over the CPUs (ioengine=null, "
         "a job a CPU, for the NOPs).", ""]
summary = []
for case in dict.fromkeys(r["case"] for r in recs):
    rs = [r for r in recs if r["case"] == case]
    tools = list(dict.fromkeys(r["tool"] for r in rs))
    mine = [t for t in tools if t.startswith("hostmax")]
    theirs = [t for t in tools if not t.startswith("hostmax")]
    summary += [f"## {case}", "", what[case], "",
                "| tool | median IOPS | runs |", "|---|---|---|"]
    for t in tools:
        xs = [r["iops"] for r in rs if r["tool"] == t]
        summary.append(f"| {t} | {k(st.median(xs))} | {', '.join(k(x) for x in xs)} |")
    summary += ["", "| ratio | median | per round |", "|---|---|---|"]
    pairs = [(m, t) for m in mine for t in theirs]
    # What timing its NOPs costs t/io_uring itself: the bar a tool that times every I/O meets.
    if "t/io_uring-timed" in theirs and "t/io_uring" in theirs:
        pairs.append(("t/io_uring-timed", "t/io_uring"))
    for m, t in pairs:
        by_round = {r["round"]: r["iops"] for r in rs if r["tool"] == t}
        ratios = [r["iops"] / by_round[r["round"]] for r in rs
                  if r["tool"] == m and by_round.get(r["round"])]
        if ratios:
            summary.append(f"| {m} / {t} | {st.median(ratios):.2f}x | "
                           f"{', '.join(f'{x:.2f}' for x in ratios)} |")
    summary.append("")
open(out, "w").write("\n".join(lines + summary))
print("\n".join(summary))
PY
say "results written to $OUT"
