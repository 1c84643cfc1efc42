#!/bin/bash
# What running two arms at once buys on this machine: two runs' generation G re-run (`genenv rerun`) one after the
# other with every core's thread each, then the same two side by side with CORES/2 threads each, timed as walls.
#   bench/generations_side_by_side.sh WAREHOUSE DATA_DIR RUN_A RUN_B [GENERATION]
#   bench/generations_side_by_side.sh --smoke
# Each rerun writes a new run into WAREHOUSE; every process gets a Prefect home of its own (a temporary server each).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke.sh  # --smoke: print the genenv commands instead of running them
if [ "$genenv" = printed ]; then
  SMOKE_DATA=$(mktemp -d)
  set -- "$SMOKE_DATA/warehouse" "$SMOKE_DATA" run-a run-b
fi
W=$1 DATA=$2 A=$3 B=$4 G=${5:-1}
CORES=$(nproc)
HOMES=$(mktemp -d)
trap 'rm -rf "$HOMES" ${SMOKE_DATA:+"$SMOKE_DATA"}' EXIT
rerun() {  # rerun RUN LABEL THREADS
  PREFECT_HOME="$HOMES/$2" OMP_NUM_THREADS=$3 $genenv rerun --warehouse "$W" --run "$1" --generation "$G" \
    --fork "$2" --set data_dir="$DATA" > "$DATA/$2.log" 2>&1
}
load=$(cut -d" " -f1 /proc/loadavg)
started=$(date +%s.%N)
rerun "$A" one-after-a "$CORES"
rerun "$B" one-after-b "$CORES"
middle=$(date +%s.%N)
rerun "$A" side-by-side-a $((CORES / 2)) &
first=$!
rerun "$B" side-by-side-b $((CORES / 2))
wait "$first"
ended=$(date +%s.%N)
echo "generation $G of $A and $B, $CORES cores, load average before $load"
python3 - "$started" "$middle" "$ended" "$CORES" <<'PY'
import sys

started, middle, ended, cores = map(float, sys.argv[1:])


def threads(count: float) -> str:
    return f"{count:.0f} thread" + "s" * (count != 1)


one, side = middle - started, ended - middle
print(f"one after the other, {threads(cores)} each: {one:7.1f} s")
print(f"side by side, {threads(cores // 2)} each:    {side:7.1f} s   ({one / side:.2f}x)")
PY
