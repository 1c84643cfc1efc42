# Sourced by the bench shell scripts, before they read their arguments: with --smoke first, each genenv command is
# printed (shell-quoted, to stderr, even where the command's output goes to a log) instead of run, and the suite checks
# every one against genenv's own parser and config (tests/bench/test_bench_smoke.py).
genenv=${GENENV:-.venv/bin/genenv}
if [ "${1:-}" = --smoke ]; then
  shift
  genenv=printed
  exec 3>&2
fi
printed() { { printf genenv; printf ' %q' "${@//$'\n'/ }"; printf '\n'; } >&3; }  # newlines as spaces: one line a command
