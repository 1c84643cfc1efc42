#!/usr/bin/env bash
# Issue 52 item 6 (and issue 53's goal): GenEnv against GenEnv-Random, four loop seeds per arm, every run forked from
# run l64's generation 0 (configs/laptop.yaml's warm start, docs/results.md section 18) with configs/laptop.yaml's
# own agent update, scored on BFCL simple_python 400, multiple 200 and irrelevance 240 at generations 0 and G.
# Seeds 0,1 and seeds 2,3 run side by side, one process of one thread each, each with its own Prefect home (both
# write the one warehouse): 1.06-1.15x the throughput of one after the other with 2 threads on 2 cores
# (docs/performance.md). G is 4 unless GENERATIONS says otherwise; the same command with GENERATIONS=8 continues the
# runs to generation 8 (a comparison goes on where it stopped and scores no model twice). Then the pooled
# differences (bench/mean_of_categories.py) and the steering probe of each GenEnv run at generation G.
#   bash bench/compare_four_seeds.sh [--smoke] [DATA_DIR] [GEN0_RUN_NAME]   (default data/l64 l64; logs in DATA_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/smoke.sh  # --smoke: print the genenv commands instead of running them
data=${1:-data/l64}
gen0_name=${2:-l64}
G=${GENERATIONS:-4}
W=$data/warehouse
gen0=$(found "$(run_of "$W" "$gen0_name")" "$gen0_name")
homes=$(mktemp -d)
trap 'rm -rf "$homes"' EXIT
compare() {  # compare SEEDS: one process, one thread
  PREFECT_HOME="$homes/$1" OMP_NUM_THREADS=1 $genenv compare --arms genenv-random,genenv --config configs/laptop.yaml \
    --from-run "$gen0" --benchmarks bfcl --items simple_python=400,multiple=200,irrelevance=240,parallel=0 \
    --seeds "$1" --set data_dir="$data" --set run_name=c52 --set generations="$G" \
    --report "docs/issue52-compare-g$G-s${1/,/}.html"
}
logs=$data
[ "$genenv" = printed ] && logs=$homes  # a smoke run writes nothing into the checkout (DATA_DIR need not exist)
compare 0,1 > "$logs/compare-s01.log" 2>&1 &
first=$!
compare 2,3 > "$logs/compare-s23.log" 2>&1 || failed=1
wait "$first" || failed=1  # both finish before the trap removes their Prefect homes, even when one of them failed
[ -z "${failed:-}" ] || { echo "$(basename "$0"): a comparison failed; see $logs/compare-s*.log" >&2; exit 1; }
if [ "$genenv" != printed ]; then
  .venv/bin/python bench/mean_of_categories.py "$W" --prefix c52 --arms genenv,genenv-random --generation "$G"
  for seed in 0 1 2 3; do
    run=$(found "$(run_of "$W" "c52-genenv-s$seed")" "c52-genenv-s$seed")
    .venv/bin/python bench/steering_probe.py "$W" "$run" --generation "$G"
  done
fi
