#!/usr/bin/env bash
# Runs inside the kernel matrix's VM (tests/kernels/run.sh), as root:
#   guest.sh OUT EXECUTABLES HOSTMAX
# OUT is the host directory the guest may write (results, logs), EXECUTABLES lists
# "test-binary-name path" lines, HOSTMAX is the built binary. Writes one line per test to
# OUT/results ("kernel VERSION  PASS|FAIL|SKIP  NAME  (N s)"), the output of each failed test to
# OUT/failed/NAME.log, and OUT/done at the end.
set -uo pipefail
out=$1
executables=$2
hostmax=$3
kernel=$(uname -r)
results=$out/results
mkdir -p "$out/failed" "$out/passed"
: >"$results"

record() { # STATUS NAME SECONDS [DETAIL]
  printf 'kernel %s  %s  %s  (%s s)%s\n' "$kernel" "$1" "$2" "$3" "${4:+  $4}" >>"$results"
}

# What the tests expect of a machine with modules: loop and null_blk loaded (null_blk's devices
# get 2 poll queues each unless a test says otherwise), configfs mounted, cgroup v2 with io.
modprobe loop
modprobe null_blk nr_devices=0 poll_queues=2
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
export HOSTMAX_TEST_BACKEND=null_blk
export RUST_BACKTRACE=1
# The host's cargo home and rustup are not needed: the executables are built.
cd "$(dirname "$executables")"

# How the machine looked before any test: the clean-up check compares against it.
subtree_before=$(cat /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null)
own_cgroup_before=$(cat /proc/self/cgroup)

# The tests that depend on the kernel, as "BINARY [NAME-SUBSTRING ...]" (no substring: all of
# the binary's tests). Left out: bad_input (argument checks), suite (its rounds and Chromium
# rendering are CPU-bound; its block-device steps are what simhost and faults cover) and the
# rate tests of verify, whose knees under emulation would be the CPU's (see README).
selection=(
  "simhost"
  "accuracy"
  "polling"
  "demo"
  "faults"
  "cli_run"
  "engine_api"
  "safety"
  "verify"
  "fleet merged_report hdr_log sigint_while_waiting"
)

path_of() { awk -v n="$1" '$1 == n { print $2; exit }' "$executables"; }

run_one() { # BINARY EXECUTABLE TEST
  local name="$1::$3" log started took status
  log=$(mktemp)
  started=$(date +%s%N)
  timeout --kill-after=10 "${HOSTMAX_TEST_TIMEOUT:-600}" \
    "$2" --exact "$3" --test-threads=1 --nocapture >"$log" 2>&1
  status=$?
  took=$((($(date +%s%N) - started) / 100000000))
  took=$((took / 10)).$((took % 10))
  if ((status == 0)) && grep -q "^skipped $3: " "$log"; then
    record SKIP "$name" "$took" "$(grep -m1 "^skipped $3: " "$log" | cut -d: -f2- | cut -c2-)"
    cp "$log" "$out/passed/$name.log"
  elif ((status == 0)); then
    record PASS "$name" "$took"
    cp "$log" "$out/passed/$name.log"
  else
    record FAIL "$name" "$took" "exit $status"
    cp "$log" "$out/failed/$name.log"
  fi
  rm -f "$log"
}

for entry in "${selection[@]}"; do
  read -r binary filters <<<"$entry"
  exe=$(path_of "$binary")
  if [[ -z $exe ]]; then
    record FAIL "$binary" 0 "no such test executable"
    continue
  fi
  while IFS= read -r test; do
    if [[ -n $filters ]]; then
      keep=0
      for f in $filters; do [[ $test == *"$f"* ]] && keep=1; done
      ((keep)) || continue
    fi
    run_one "$binary" "$exe" "$test"
  done < <("$exe" --list --format terse 2>/dev/null | sed -n 's/: test$//p')
done

# io_uring switched off by the administrator (6.6+): one line naming the sysctl, exit 2, before
# any device is opened (a device that does not exist must not be what it complains about).
if [[ -e /proc/sys/kernel/io_uring_disabled ]]; then
  started=$(date +%s)
  sysctl -q kernel.io_uring_disabled=2
  err=$("$hostmax" --devices /dev/hostmax-no-such-device --runtime 1s 2>&1 >/dev/null)
  status=$?
  sysctl -q kernel.io_uring_disabled=0
  lines=$(printf '%s\n' "$err" | grep -c .)
  if ((status == 2)) && ((lines == 1)) && [[ $err == *io_uring_disabled* ]]; then
    record PASS "io_uring_disabled=2 refuses with one line and exit 2" $(($(date +%s) - started))
  else
    record FAIL "io_uring_disabled=2 refuses with one line and exit 2" $(($(date +%s) - started)) \
      "exit $status: $err"
  fi
fi

# The harness's clean-up: nothing of any test is left (loop devices, null_blk devices, cgroups,
# scratch directories), and the cgroup tree is as it was.
leftovers=$(
  {
    for b in /sys/block/loop*/loop/backing_file; do [[ -e $b ]] && grep -H hostmax "$b"; done
    ls -d /sys/kernel/config/nullb/hostmax* /sys/fs/cgroup/hostmax-* /dev/shm/hostmax-* 2>/dev/null
  } | tr '\n' ' '
)
subtree_after=$(cat /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null)
if [[ -n $leftovers ]]; then
  record FAIL "the tests left nothing behind" 0 "left: $leftovers"
elif [[ $subtree_after != "$subtree_before" ]]; then
  record FAIL "the tests left nothing behind" 0 \
    "root cgroup.subtree_control was '$subtree_before', is '$subtree_after'"
elif [[ $(cat /proc/self/cgroup) != "$own_cgroup_before" ]]; then
  record FAIL "the tests left nothing behind" 0 "this shell was moved to another cgroup"
else
  record PASS "the tests left nothing behind" 0
fi
echo ok >"$out/done"
