#!/usr/bin/env bash
# Fresh machine to passing tests: Debian packages (a browser for the e2e test, a speech synthesizer
# for the test media, iproute2 for the network-namespace test), the Python packages, then lint, type
# check and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh chromium fonts-liberation espeak-ng iproute2
bash scripts/setup.sh requirements-dev.txt
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest"; .venv/bin/python -m pytest "$@"
