#!/usr/bin/env bash
# Fresh machine to passing tests: Debian packages (a browser for the e2e test, a speech synthesizer
# for the test media, iproute2 for the network-namespace test, GNU time for the suite's peak memory,
# PostgreSQL for the storage tests on the shared-database backend: the suite starts its own server),
# the Python packages, then lint, and the type check beside the test suite (mypy waits on one core while the
# suite's browsers and servers wait on each other). Exits non-zero when any of them fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh chromium fonts-liberation espeak-ng iproute2 time postgresql-15
bash scripts/setup.sh requirements-dev.txt
echo "== ruff (set-up took ${SECONDS} s)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
peak_file="$(mktemp)"
mypy_log="$(mktemp)"
trap 'rm -f "$peak_file" "$mypy_log"' EXIT
.venv/bin/mypy > "$mypy_log" 2>&1 &
mypy_pid=$!
echo "== pytest, mypy beside it (${SECONDS} s in; the 40 slowest steps are listed at the end: where the run's time goes)"
status=0
# Two workers (pytest-xdist; one that runs out of tests takes some of the other's): browser tests and the
# tests that change the network take turns across them (tests/network_change_lock.py); every server a test
# starts binds a free port of its own.
/usr/bin/time -f "%M" -o "$peak_file" .venv/bin/python -m pytest --numprocesses=2 --dist=worksteal --durations=40 "$@" || status=$?
# %M: the largest resident set of pytest or of any one process it started (not their sum), in KB.
echo "== peak memory: $(($(tail -n 1 "$peak_file") / 1024)) MB resident (the largest process of the test run)"
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
echo "== mypy"
cat "$mypy_log"
echo "== done in ${SECONDS} s"
if [ "$status" -eq 0 ]; then status=$mypy_status; fi
exit "$status"
