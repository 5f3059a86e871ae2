#!/usr/bin/env bash
# Installs the browser that the sample app's end-to-end test (LoginPageBrowserTests) drives:
# Debian's chromium and chromium-driver, i.e. /usr/bin/chromium and /usr/bin/chromedriver.
# Selenium is told to use these two and downloads no browser or driver of its own, so CI must
# have them before the tests run. Does nothing when both are already there.
# Runs as root without sudo; otherwise tries `sudo -n` and fails clearly when it cannot.
set -euo pipefail

browser=/usr/bin/chromium
driver=/usr/bin/chromedriver

if [[ -x "$browser" && -x "$driver" ]]; then
  echo "install-browser: $browser and $driver already present, nothing to do"
  exit 0
fi

missing=()
[[ -x "$browser" ]] || missing+=("$browser")
[[ -x "$driver" ]] || missing+=("$driver")
echo "install-browser: missing ${missing[*]}; installing chromium and chromium-driver with apt-get"

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: apt-get not found: install chromium and chromedriver by hand" >&2
  exit 1
fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
  echo "install-browser: not root, using sudo -n"
else
  echo "install-browser: not root and sudo -n is not allowed: cannot install chromium" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-browser: apt-get update"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
echo "install-browser: apt-get install chromium chromium-driver"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  chromium chromium-driver

for f in "$browser" "$driver"; do
  if [[ ! -x "$f" ]]; then
    echo "install-browser: $f still missing after apt-get install" >&2
    exit 1
  fi
done
echo "install-browser: installed $("$browser" --version 2>/dev/null || echo chromium)"
echo "install-browser: installed $("$driver" --version 2>/dev/null | head -1 || echo chromedriver)"
