# shellcheck shell=bash
# Helpers the bench scripts share; sourced, not run.

# The number of CPUs in a CPU list such as 0-3,6 (fails on anything else).
count_cpus() {
    python3 - "$1" <<'PY'
import sys
n = 0
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    n += int(b or a) - int(a) + 1
print(n)
PY
}

# A bench script's scratch folder and devices, removed on exit, Ctrl-C or kill: call once
# with the script's name (for messages). WORK is the folder (in /dev/shm); a script adds the
# loop devices it attaches to LOOPS, the zram device it makes is ZRAM_ID (make_zram_device),
# and CHILD is the pid of a run to stop first.
bench_scratch() {
    BENCH_NAME=$1
    WORK=$(mktemp -d "/dev/shm/hostmax-$BENCH_NAME.XXXXXX")
    LOOPS=()
    ZRAM_ID=
    CHILD=
    trap bench_cleanup EXIT
    trap 'echo "$BENCH_NAME: interrupted" >&2; exit 130' INT
    trap 'echo "$BENCH_NAME: terminated" >&2; exit 143' TERM
}

bench_cleanup() {
    local rc=$? dev
    trap - EXIT INT TERM
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    if [[ -n $ZRAM_ID ]]; then
        echo "$ZRAM_ID" >/sys/class/zram-control/hot_remove 2>/dev/null ||
            echo "$BENCH_NAME: could not remove /dev/zram$ZRAM_ID" >&2
    fi
    for dev in "${LOOPS[@]}"; do
        [[ $dev == /dev/loop* ]] || continue
        losetup -d "$dev" 2>/dev/null || echo "$BENCH_NAME: could not detach $dev" >&2
    done
    rm -rf "$WORK"
    exit "$rc"
}

# Makes one lz4 zram device of $1 MiB (ZRAM_ID, removed by bench_cleanup); fails where the
# kernel has no zram or no lz4.
make_zram_device() {
    [[ -w /sys/class/zram-control/hot_add ]] || {
        echo "$BENCH_NAME: no zram here (/sys/class/zram-control/hot_add): modprobe zram, as root" >&2
        exit 2
    }
    ZRAM_ID=$(cat /sys/class/zram-control/hot_add)
    echo lz4 >"/sys/block/zram$ZRAM_ID/comp_algorithm" || {
        echo "$BENCH_NAME: zram has no lz4 compressor" >&2
        exit 2
    }
    echo "$1M" >"/sys/block/zram$ZRAM_ID/disksize"
}
