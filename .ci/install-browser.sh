#!/usr/bin/env bash
# Installs the browser that the sample app's end-to-end test (LoginPageBrowserTests) drives:
# Debian's chromium and chromium-driver, i.e. /usr/bin/chromium and /usr/bin/chromedriver.
# Selenium is told to use these two and downloads no browser or driver of its own, so CI must
# have them before the tests run.
set -euo pipefail
bash "$(dirname "$0")/install-debian.sh" chromium:/usr/bin/chromium chromium-driver:/usr/bin/chromedriver
