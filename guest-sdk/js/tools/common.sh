# Shared by `build` and `test`: paths, messages, the toolchain check and the steps both need.
# Sourced, not run.

sdk=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=$(cd "$sdk/../.." && pwd)
bin="$sdk/node_modules/.bin"
work="$repo/target/js"

prefix=js
source "$repo/scripts/lib.sh"

# Fails with what to install unless Node.js and the SDK's npm tools are present.
require_toolchain() {
  command -v node >/dev/null ||
    die "Node.js is not installed; install Node.js 20 or newer (e.g. apt-get install nodejs npm), then run guest-sdk/js/install-toolchain"
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  ((major >= 20)) || die "Node.js $(node --version) is too old; install Node.js 20 or newer"
  local tool missing=()
  for tool in componentize-js esbuild tsc; do
    [[ -x $bin/$tool ]] || missing+=("$tool")
  done
  [[ -d $sdk/node_modules/@bytecodealliance/jco-transpile ]] || missing+=("jco")
  ((${#missing[@]} == 0)) ||
    die "the JS guest toolchain is missing (${missing[*]}); run guest-sdk/js/install-toolchain (npm ci of componentize-js 0.23, jco 1.35, esbuild and TypeScript into guest-sdk/js/node_modules)"
}

# Generates the TypeScript declarations of the WIT world into generated/wit.
generate_wit_types() {
  node "$sdk/tools/wit-types.mjs" "$repo/wit" webhook-reconciler "$sdk/generated/wit" ||
    die "could not generate TypeScript types from $repo/wit"
}

# Type-checks a TypeScript project (a directory with tsconfig.json); JavaScript-only plugins have none.
type_check() {
  local dir=$1
  [[ -f $dir/tsconfig.json ]] || return 0
  "$bin/tsc" -p "$dir" || die "type errors in ${dir#"$repo"/}"
}

# The plugin directories to work on: the arguments, or every plugins/*/js.
plugin_dirs() {
  local dir
  if (($#)); then
    for dir in "$@"; do
      ({ cd "$dir" 2>/dev/null || cd "$repo/$dir" 2>/dev/null; } && pwd) || die "no plugin directory at $dir"
    done
  else
    for dir in "$repo"/plugins/*/js; do
      [[ -d $dir ]] && echo "$dir"
    done
  fi
}

# A plugin's name: the directory above its js/ directory (plugins/webapp/js is webapp).
plugin_name() {
  basename "$(dirname "$1")"
}
