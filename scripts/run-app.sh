#!/usr/bin/env bash
# Fresh machine to running app: install what the app needs, then `streamlit run app.py`.
# Extra arguments go to streamlit (e.g. --server.port 8600). It listens on 127.0.0.1 only (the page has no
# sign-in); to serve other machines pass --server.address 0.0.0.0 and see "Serving other machines" in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements.txt
exec .venv/bin/streamlit run app.py --server.address 127.0.0.1 "$@"
