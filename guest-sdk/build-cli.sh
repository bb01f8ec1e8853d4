# The command line the four guest-sdk/<lang>/build scripts share, so that they take the same
# arguments, print the same messages and put components in the same places. Sourced, not run.
#
#   build [-o FILE] [PLUGIN_DIR...]
#   build --help
#
# Where a component goes:
#   - no PLUGIN_DIR: every plugin of the checkout, into <checkout>/target/components/ (what
#     `make guests`, CI and the tests use);
#   - PLUGIN_DIR given (`.` is the working directory): into the working directory, as
#     <plugin>[-<lang>].wasm, as `go build` puts a binary (a plugin made by `wasmop new` is built
#     from its folder, so its component lands beside its fixtures);
#   - -o FILE: into FILE (one PLUGIN_DIR, one component).
# Every build prints the absolute path of each component it wrote.
#
# The sourcing script defines say/die (its own prefix), `language` (the folder name of its
# language in a plugin: rust, python, js or go), `usage` (its --help text) and
# check_plugin_sources DIR (dies unless DIR holds a plugin of its language), then calls
# parse_build_args "$@", which sets:
#   plugin_dirs  the absolute plugin directories given (empty: build the checkout's plugins);
#   output       the absolute -o FILE, or empty.

# Parses the command line into plugin_dirs and output; prints usage and exits 0 on --help; dies
# (before anything is built or removed) on an unknown option or a missing directory.
parse_build_args() {
  plugin_dirs=()
  output=""
  local dir paths=()
  while (($#)); do
    case $1 in
      -h | --help)
        printf '%s\n' "$usage"
        exit 0
        ;;
      -o | --output)
        (($# >= 2)) || die "$1 needs a file name (see --help)"
        output=$(realpath -m -- "$2")
        shift 2
        ;;
      --)
        shift
        paths+=("$@")
        break
        ;;
      -?*) die "unknown option $1 (see --help)" ;;
      *)
        paths+=("$1")
        shift
        ;;
    esac
  done
  for dir in "${paths[@]}"; do
    dir=$(checked_plugin_dir "$dir") || exit 1
    check_plugin_sources "$dir"
    plugin_dirs+=("$dir")
  done
  if [[ -n $output ]]; then
    ((${#plugin_dirs[@]} == 1)) || die "-o names one component: give exactly one plugin directory"
    [[ ! -d $output ]] || die "-o $output is a directory; name the component file"
  fi
}

# Prints the absolute path of a plugin directory, or dies naming the path it looked for. A
# folder made by `wasmop new` (NAME/ holding NAME/<language>/ and NAME/fixtures/) stands for its
# language folder, so `build .` works in either.
checked_plugin_dir() {
  local dir
  dir=$(realpath -m -- "$1")
  [[ -d $dir ]] || die "no plugin directory at $dir"
  if [[ $(basename "$dir") != "$language" && -d $dir/$language ]] && ! holds_sources "$dir"; then
    dir="$dir/$language"
  fi
  printf '%s\n' "$dir"
}

# Whether DIR holds a plugin's sources itself (a Go module, a crate, a TypeScript project).
holds_sources() {
  local marker
  for marker in go.mod Cargo.toml package.json tsconfig.json src; do
    [[ -e $1/$marker ]] && return 0
  done
  return 1
}

# A plugin's name from its directory: the directory's own name, or its parent's when the
# directory is named after the language (plugins/webapp/go is webapp). Dies on a name that could
# not name a file of the build's own.
plugin_name_of() {
  local dir=$1 name
  name=$(basename "$dir")
  case $name in rust | python | js | go) name=$(basename "$(dirname "$dir")") ;; esac
  [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] ||
    die "cannot name a component after $dir (a plugin's directory is named after it: letters, digits, '.', '_', '-')"
  printf '%s\n' "$name"
}

# Prints where the component FILE_NAME (e.g. webapp-go.wasm) goes, as the header says.
component_path() {
  local file=$1
  if [[ -n $output ]]; then
    printf '%s\n' "$output"
  elif ((${#plugin_dirs[@]})); then
    printf '%s\n' "$PWD/$file"
  else
    printf '%s\n' "$repo/target/components/$file"
  fi
}

# Whether the file is a component: the wasm magic followed by version 0x0d, layer 1.
is_component() {
  [[ $(od -An -tx1 -N8 "$1" | tr -d ' \n') == 0061736d0d000100 ]]
}

# Dies unless FILE is a valid WebAssembly component (validated by wasm-tools when installed).
verify_component() {
  local wasm=$1
  is_component "$wasm" || die "$wasm is not a WebAssembly component"
  if command -v wasm-tools >/dev/null; then
    wasm-tools validate "$wasm" || die "$wasm does not validate"
  fi
}

# Moves a built and verified component from BUILT to DESTINATION (creating its folder) and says
# where it went, how big it is and how long it took since STARTED (a $SECONDS value).
install_component() {
  local built=$1 destination=$2 started=$3
  mkdir -p "$(dirname "$destination")"
  cp "$built" "$destination.tmp"
  mv "$destination.tmp" "$destination"
  say "built $destination ($(numfmt --to=iec --suffix=B "$(stat -c %s "$destination")")) in $((SECONDS - started)) s"
}
