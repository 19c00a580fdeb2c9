#!/usr/bin/env bash
# The load generator's own ceiling, hostmax against fio, alternated in one sitting (issue 20,
# item 5): `hostmax doctor`'s measurement (its worker loop issuing io_uring NOPs, one worker
# per CPU, no device) against fio's peer, `ioengine=null` with one job per CPU (split). No
# device is touched, so it needs no root.
#
# Usage:  benches/ceiling.sh
#   PAIRS=5 RUNTIME=5 IODEPTH=32 CPUS=0-1      pairs, seconds per run, depth, CPUs (default: all
#                                              this process may use)
#   HOSTMAX=/path/to/hostmax                   use this binary instead of building one
#   OUT=benches/results/ceiling-<date>.md      where the results go

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAIRS=${PAIRS:-5}
RUNTIME=${RUNTIME:-5}
IODEPTH=${IODEPTH:-32}
CPUS=${CPUS:-$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')}
OUT=${OUT:-$REPO/benches/results/ceiling-$(date +%Y%m%d-%H%M%S).md}

die() {
    echo "ceiling: $*" >&2
    exit 2
}
for n in PAIRS RUNTIME IODEPTH; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "$n='${!n}' is not a whole number"
done
command -v fio >/dev/null || die "fio is missing: apt-get install fio"
if [[ -z ${HOSTMAX:-} ]]; then
    cargo build --release --quiet --manifest-path "$REPO/Cargo.toml" -p hostmax
    HOSTMAX=$REPO/target/release/hostmax
fi
# shellcheck source=benches/lib.sh
source "$REPO/benches/lib.sh"
JOBS=$(count_cpus "$CPUS") || die "CPUS='$CPUS' is not a CPU list such as 0-1 or 0,2"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT INT TERM

hostmax_run() {
    "$HOSTMAX" doctor --cpus "$CPUS" --iodepth "$IODEPTH" --ceiling-runtime "${RUNTIME}s" \
        --json "$scratch/h.json" >/dev/null
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["load_generator_ceiling"]; print(sum(x["ios_per_sec"] for x in c["cpus"]))' "$scratch/h.json"
}

fio_run() {
    (cd "$scratch" && fio --name=ceiling --ioengine=null --rw=randread --bs=4k --size=1g \
        --iodepth="$IODEPTH" --numjobs="$JOBS" --cpus_allowed="$CPUS" --cpus_allowed_policy=split \
        --time_based --runtime="$RUNTIME" --ramp_time=1 --group_reporting --output-format=json \
        --output="$scratch/f.json" >/dev/null)
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$scratch/f.json"
}

hostmax_rates=()
fio_rates=()
for ((i = 1; i <= PAIRS; i++)); do
    h=$(hostmax_run)
    f=$(fio_run)
    hostmax_rates+=("$h")
    fio_rates+=("$f")
    printf 'pair %d: hostmax %.0f/s  fio %.0f/s\n' "$i" "$h" "$f" >&2
done

mkdir -p "$(dirname "$OUT")"
python3 - "$OUT" "$CPUS" "$IODEPTH" "$RUNTIME" "$(fio --version)" "${hostmax_rates[*]}" "${fio_rates[*]}" <<'EOF'
import statistics, sys
out, cpus, depth, runtime, fio_version, h, f = sys.argv[1:]
h = [float(x) for x in h.split()]
f = [float(x) for x in f.split()]
hm, fm = statistics.median(h), statistics.median(f)
text = f"""# Load generator ceiling: hostmax NOPs vs fio ioengine=null

CPUs {cpus}, depth {depth}, {runtime} s per run, {len(h)} pairs alternated (hostmax first); {fio_version}.

| | median I/Os per second (all CPUs) | runs |
|---|---|---|
| hostmax doctor (io_uring NOPs through the worker loop) | {hm:,.0f} | {", ".join(f"{x:,.0f}" for x in h)} |
| fio ioengine=null, numjobs per CPU, split | {fm:,.0f} | {", ".join(f"{x:,.0f}" for x in f)} |

hostmax / fio: {hm / fm:.2f}x
"""
open(out, "w").write(text)
print(text)
EOF
echo "written: $OUT" >&2
