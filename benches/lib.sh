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
