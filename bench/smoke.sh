# Sourced by the bench shell scripts, before they read their arguments: with --smoke first, each genenv command is
# printed (shell-quoted, to stderr, even where the command's output goes to a log) instead of run, and the suite checks
# every one against genenv's own parser and config (tests/bench/test_bench_smoke.py).
genenv=${GENENV:-.venv/bin/genenv}
if [ "${1:-}" = --smoke ]; then
  shift
  genenv=printed
  exec 3>&2
fi
# newlines as spaces: one line a command, written at once (commands printed side by side do not interleave)
printed() { local line; line=$(printf genenv; printf ' %q' "${@//$'\n'/ }"); printf '%s\n' "$line" >&3; }
# The run lookups the scripts share: run_of WAREHOUSE NAME prints the id of the run of that name (empty when there is
# none); found ID NAME prints ID, or under --smoke a placeholder, and otherwise stops the script: a real run never
# goes on with a run it did not find.
run_of() {
  $genenv sql --warehouse "$1" --format csv "SELECT run_id FROM runs WHERE run_name = '$2'" 2>/dev/null | sed -n 2p
}
found() {
  if [ -n "$1" ]; then echo "$1"; elif [ "$genenv" = printed ]; then echo "$2-RUN"; else
    echo "$(basename "$0"): no run $2 in the warehouse" >&2; exit 1; fi
}
