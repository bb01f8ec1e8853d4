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

# Exports WASMOP, the `wasmop` the SDKs' fixture helpers build and test plugins with: as given,
# else this checkout's, built (or brought up to date) first. Needs `root` or `repo` set to the
# checkout.
use_wasmop() {
  local checkout=${root:-${repo:?set root or repo before use_wasmop}}
  if [[ -z ${WASMOP:-} ]]; then
    say "building wasmop (make wasmop-binary), which the fixture tests build and run plugins with ..."
    make -C "$checkout" --no-print-directory -s wasmop-binary || die "could not build wasmop"
    WASMOP="$checkout/target/debug/wasmop"
  fi
  [[ -x $WASMOP ]] || die "WASMOP=$WASMOP is not an executable"
  export WASMOP
}
