#!/usr/bin/env bash
# Creates .venv (if needed) and installs the Python packages of a requirements file into it.
# Usage: scripts/setup.sh requirements.txt|requirements-dev.txt
# Re-running is cheap: pip skips what is already installed at the pinned versions.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-requirements.txt}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
