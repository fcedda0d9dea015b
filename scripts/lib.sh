# Shared set-up for the project's scripts: installs what a new machine lacks.

# Installs Debian packages when missing (root, or through sudo).
ensure_apt_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

# What the build needs from Debian: jansson's headers and pkg-config file
# (the CJansson module) and mimalloc, the allocator the nextpage executable
# is linked with (Package.swift).
ensure_build_packages() {
  ensure_apt_packages libjansson-dev pkg-config libmimalloc-dev
}

# The release build of the nextpage executable, as it is meant to be run:
# with the Swift runtime and standard libraries linked in
# (--static-swift-stdlib; README, "Building for use"). Extra arguments go
# to swift build. release_bin prints where the executable is.
# A toolchain without the static libraries (lib/swift_static) gets the
# shared-library build instead, with a note on stderr.
build_release() {
  swift build -c release --static-swift-stdlib --product nextpage "$@" && return 0
  if [ ! -d "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift_static" ]; then
    echo "note: this Swift toolchain has no static libraries (lib/swift_static); building with the shared ones" >&2
    swift build -c release --product nextpage "$@"
    return
  fi
  return 1
}
release_bin() {
  echo "$(swift build -c release --show-bin-path)/nextpage"
}

# A Python module, installed from PyPI when it cannot be imported.
ensure_python_module() {
  local module="$1" package="${2:-$1}"
  python3 -c "import $module" 2>/dev/null && return 0
  echo "installing python package: $package" >&2
  python3 -m pip install --quiet "$package" >&2 || python3 -m pip install --quiet --break-system-packages "$package" >&2
}

# The editors whose JSON-RPC clients Tests/Editors drives: Neovim (its
# vim.lsp.rpc client) and Emacs (jsonrpc.el, Eglot's transport), from Debian
# when the command is missing (an nvim or emacs already installed is used).
ensure_editors() {
  local packages=()
  command -v nvim > /dev/null || packages+=(neovim)
  command -v emacs > /dev/null || packages+=(emacs-nox)
  [ ${#packages[@]} -eq 0 ] || ensure_apt_packages "${packages[@]}"
}

# jq, which scripts/examples/coproc.sh uses to read replies.
ensure_jq() {
  ensure_apt_packages jq
}

# Checks that FILE holds the 250 items of the built-in demo, one JSON line
# each, every id from 1 to 250 exactly once and in order. NAME names the
# program that wrote it.
check_demo_items() {
  local file="$1" name="$2"
  python3 - "$file" "$name" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
ids = [json.loads(line)["id"] for line in open(path, encoding="utf-8")]
if ids != list(range(1, 251)):
    sys.exit(f"{name}: expected the demo's items 1..250 once each, in order; got {len(ids)} lines: {ids[:5]}...")
print(f"{name}: 250 demo items, each exactly once")
PY
}

# A Python virtual environment at DIR (created when missing) with the
# packages REQUIREMENT... installed; prints DIR/bin/python. For clients a
# test needs in versions of their own (the MCP SDK's 1.x and 2.x).
ensure_venv() {
  local dir="$1"
  shift
  if [ ! -x "$dir/bin/python" ]; then
    echo "creating $dir: $*" >&2
    python3 -m venv "$dir" >&2
  fi
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
  echo "$dir/bin/python"
}
