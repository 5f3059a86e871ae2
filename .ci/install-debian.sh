#!/usr/bin/env bash
# Usage: install-debian.sh <package>:<path> [<package>:<path> ...]
# Installs each Debian package whose <path> is not yet an executable, with apt-get, and fails when a
# path is still missing afterwards. Does nothing when every path is there. Runs as root without
# sudo; otherwise tries `sudo -n` and fails clearly when it cannot.
set -euo pipefail

packages=()
paths=()
for spec in "$@"; do
  package=${spec%%:*}
  path=${spec#*:}
  paths+=("$path")
  [[ -x "$path" ]] || packages+=("$package")
done

if [[ ${#packages[@]} -eq 0 ]]; then
  echo "install-debian: ${paths[*]} already present, nothing to do"
  exit 0
fi
echo "install-debian: installing ${packages[*]} with apt-get"

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-debian: apt-get not found: install ${packages[*]} by hand" >&2
  exit 1
fi
if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "install-debian: not root and sudo -n is not allowed: cannot install ${packages[*]}" >&2
  exit 1
fi

"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"

for path in "${paths[@]}"; do
  if [[ ! -x "$path" ]]; then
    echo "install-debian: $path still missing after apt-get install" >&2
    exit 1
  fi
done
echo "install-debian: ${paths[*]} present"
