#!/usr/bin/env bash
# Fresh machine to running app: install what the app needs, then `streamlit run app.py`.
# Extra arguments go to streamlit (e.g. --server.port 8600).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements.txt
exec .venv/bin/streamlit run app.py "$@"
