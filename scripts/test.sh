#!/usr/bin/env bash
# Fresh machine to passing tests: Debian packages (a browser for the e2e test, a speech synthesizer
# for the test media, iproute2 for the network-namespace test, GNU time for the suite's peak memory,
# PostgreSQL for the storage tests on the shared-database backend: the suite starts its own server),
# the Python packages, then lint, type check and the test suite. Exits with pytest's status.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh chromium fonts-liberation espeak-ng iproute2 time postgresql-15
bash scripts/setup.sh requirements-dev.txt
echo "== ruff (set-up took ${SECONDS} s)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy (${SECONDS} s in)"; .venv/bin/mypy
echo "== pytest (${SECONDS} s in; the 40 slowest steps are listed at the end: where the run's time goes)"
peak_file="$(mktemp)"
trap 'rm -f "$peak_file"' EXIT
status=0
# Two workers (pytest-xdist; one that runs out of tests takes some of the other's): browser tests and the
# tests that change the network take turns across them (tests/network_change_lock.py); every server a test
# starts binds a free port of its own.
/usr/bin/time -f "%M" -o "$peak_file" .venv/bin/python -m pytest --numprocesses=2 --dist=worksteal --durations=40 "$@" || status=$?
# %M: the largest resident set of pytest or of any one process it started (not their sum), in KB.
echo "== peak memory: $(($(tail -n 1 "$peak_file") / 1024)) MB resident (the largest process of the test run)"
echo "== done in ${SECONDS} s"
exit "$status"
