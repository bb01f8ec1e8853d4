# What the project's shell scripts share: their messages, prefixed with the script's name, on
# stderr (stdout is for what a script prints for its caller: paths, export lines). Sourced, not
# run; set `prefix` first:
#
#   prefix=demo
#   source "$root/scripts/lib.sh"

# Says what the script is doing.
say() { printf '[%s] %s\n' "${prefix:?set prefix before sourcing scripts/lib.sh}" "$*" >&2; }

# Says what went wrong and exits 1.
die() {
  say "error: $*"
  exit 1
}
