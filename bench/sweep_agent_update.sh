#!/usr/bin/env bash
# The small sweep behind configs/laptop.yaml's GRPO settings: one base run (warm start + generation 1), then
# generation 1 re-run from the same generation-0 snapshot with other agent learning rates and epochs. Only
# training-side numbers are compared (probe reward before/after the update, held-out seed success), never a
# benchmark. Usage: bash bench/sweep_agent_update.sh [--smoke] [DATA_DIR]   (default data/sweep; log in DATA_DIR/*.log)
set -euo pipefail
. "$(dirname "$0")/smoke.sh"  # --smoke: print the genenv commands instead of running them
data=${1:-data/sweep}
if [ "$genenv" = printed ]; then
  data=$(mktemp -d)
  trap 'rm -rf "$data"' EXIT
fi
mkdir -p "$data"
warehouse="$data/warehouse"
if [ -z "$($genenv runs --warehouse "$warehouse" 2>/dev/null | grep -o 'sweep-base-[0-9a-z-]*' | head -1 || true)" ]; then
  $genenv evolve --config configs/laptop.yaml --set generations=1 --set run_name=sweep-base \
    --set data_dir="$data" > "$data/base.log" 2>&1
fi
base=$($genenv runs --warehouse "$warehouse" | grep -o 'sweep-base-[0-9a-z-]*' | head -1 || true)
for variant in "agent_lr=0.00003 agent_epochs=2" "agent_lr=0.0003 agent_epochs=2" \
               "agent_lr=0.0001 agent_epochs=4" "agent_lr=0.0001 agent_epochs=1"; do
  name="sweep-$(echo "$variant" | tr ' =' '--')"
  sets=(); for kv in $variant; do sets+=(--set "$kv"); done
  $genenv rerun --warehouse "$warehouse" --run "$base" --generation 1 --fork "$name" "${sets[@]}" \
    > "$data/$name.log" 2>&1
done
$genenv sql --warehouse "$warehouse" "
  SELECT g.run_id, g.generation,
         json_extract(r.config_json, '$.agent_lr')::DOUBLE AS agent_lr,
         json_extract(r.config_json, '$.agent_epochs')::INT AS agent_epochs,
         json_extract(g.metrics, '$.probe_before')::DOUBLE AS probe_before,
         json_extract(g.metrics, '$.probe_after')::DOUBLE AS probe_after,
         json_extract(g.metrics, '$.heldout_success')::DOUBLE AS heldout,
         json_extract(g.metrics, '$.fresh_success')::DOUBLE AS fresh
  FROM generations g JOIN runs r USING (run_id) WHERE g.generation = 1 ORDER BY g.run_id"
