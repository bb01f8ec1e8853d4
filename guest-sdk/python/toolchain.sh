# Shared by build, test and install-toolchain: where componentize-py comes from and how to find it.
# Sourced, not run.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sdk="$repo/guest-sdk/python"
componentize_version=0.25.1
toolchain_venv="$repo/target/python/toolchain"
bindings="$repo/target/python/bindings"

prefix=python
source "$repo/scripts/lib.sh"

install_hint="install it with:
    guest-sdk/python/install-toolchain
(a virtualenv under target/python/toolchain with componentize-py==$componentize_version from PyPI),
or into your user site: pip install --user componentize-py==$componentize_version"

# Whether the toolchain virtualenv was made at this path: a virtualenv is not relocatable, and
# target/ may be a link into a build cache another checkout made it from, whose scripts would run
# that checkout's Python and install into its virtualenv.
toolchain_is_here() {
  [[ $(head -n 1 "$toolchain_venv/bin/pip" 2>/dev/null) == "#!$toolchain_venv/bin/python"* ]]
}

# Prints the componentize-py to use: the toolchain virtualenv's, else one on PATH of the pinned
# minor version; nothing when neither is installed.
find_componentize() {
  local candidate version
  local own=""
  toolchain_is_here && own="$toolchain_venv/bin/componentize-py"
  for candidate in "$own" "$(command -v componentize-py || true)"; do
    [[ -n $candidate && -x $candidate ]] || continue
    version=$("$candidate" --version 2>/dev/null | cut -d' ' -f2) || continue
    if [[ ${version%.*} == "${componentize_version%.*}" ]]; then
      echo "$candidate"
      return
    fi
  done
}

# Generates the Python bindings of the WIT package into target/python/bindings (for the unit
# tests and editors; componentize-py generates its own copy inside each component).
generate_bindings() {
  local componentize=$1
  rm -rf "$bindings"
  "$componentize" -d "$repo/wit" -w webhook-reconciler bindings "$bindings" >/dev/null ||
    die "componentize-py could not generate bindings from $repo/wit"
}
