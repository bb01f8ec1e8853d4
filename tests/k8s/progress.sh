# Long steps that say how they are doing: run_with_progress runs a command in the background and,
# every WASMOP_PROGRESS_SECONDS (30 by default) while it runs, says what it is doing and for how
# long — and, for a `go build -v`, how many packages it has compiled and which was the last. The
# command's stdout goes to stderr (a caller's stdout stays its own) and its stderr to a log; on failure the lines that are not package names (the errors)
# are shown and the caller stops with the command's status. Sourced, not run; the sourcing script
# defines say (which prints to stderr).

progress_every=${WASMOP_PROGRESS_SECONDS:-30}

# Whether a line of `go build -v` output is a package path (what it prints as it compiles one).
# Errors carry spaces or a colon.
progress_package_lines() {
  grep -E '^[^[:space:]:]+$' "$1" || true
}

# Prints the progress line of WHAT after ELAPSED seconds, from the command's stderr LOG.
progress_line() {
  local what=$1 elapsed=$2 log=$3 packages last
  packages=$(progress_package_lines "$log" | wc -l)
  if ((packages > 0)); then
    last=$(progress_package_lines "$log" | tail -n 1)
    printf '%s: %d s so far, %d packages compiled (last %s)' "$what" "$elapsed" "$packages" "$last"
  else
    printf '%s: %d s so far' "$what" "$elapsed"
  fi
}

# run_with_progress WHAT COMMAND...: runs COMMAND, saying every $progress_every seconds that WHAT
# is still going. Returns COMMAND's status after showing its errors.
run_with_progress() {
  local what=$1 log pid started=$SECONDS next status=0
  shift
  log=$(mktemp)
  "$@" >&2 2>"$log" &
  pid=$!
  next=$((SECONDS + progress_every))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)); then
      say "$(progress_line "$what" "$((SECONDS - started))" "$log")"
      next=$((SECONDS + progress_every))
    fi
  done
  wait "$pid" || status=$?
  if ((status != 0)); then
    grep -v -E '^[^[:space:]:]+$' "$log" >&2 || true
    say "error: $what failed (exit status $status) after $((SECONDS - started)) s"
  fi
  rm -f "$log"
  return "$status"
}
