#!/usr/bin/env bash
# Rerun every record of a board from the current code, JOBS records at a time, and count the verdicts.
#
#   bash benchmarks/reproduce-board.sh leaderboards/digits [JOBS]
#
# One `lfabench reproduce RUN_FOLDER --no-cache` per record of BOARD/records (one thread each: the runs are
# independent of the thread count), so a machine with many cores reruns a whole board in minutes. --no-cache: every stage is recomputed here, nothing is read from another machine's cache. Prints
# each record's verdict (lfabench.reproduce: identical, or the first stage that differs) and a tally of
# verdicts and first differing stages; exits 0 when every record is identical.
# Environment: LFABENCH (the command, default `lfabench`), LFABENCH_CACHE (the array cache the reruns write).
set -euo pipefail

board=${1:?usage: reproduce-board.sh BOARD [JOBS]}
jobs=${2:-$(nproc)}
LFABENCH=${LFABENCH:-lfabench}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
[[ -d $board/records ]] || { echo "reproduce-board.sh: $board/records: no such folder" >&2; exit 2; }

log=$(mktemp) errors=$(mktemp)
trap 'rm -f "$log" "$errors"' EXIT
export LFABENCH errors
# stderr (progress bars, error messages) apart from the verdicts on stdout: a progress bar's last line has no
# newline and would hide the verdict printed after it
find "$board/records" -name result.json -printf '%h\0' | sort -z |
    xargs -0 -P "$jobs" -I{} sh -c '$LFABENCH reproduce "$1" --sample 1 --no-cache 2>>"$errors" || true' _ {} |
    tee "$log" | grep --line-buffered -E '^(identical|differs|metrics only|failed)' || true

echo "--- $board: verdicts"
grep -oE '^(identical|differs at [a-z_]+|metrics only|failed)' "$log" | sort | uniq -c
records=$(find "$board/records" -name result.json | wc -l)
total=$(grep -cE '^(identical|differs|metrics only|failed)' "$log" || true)
same=$(grep -cE '^identical' "$log" || true)
(( total == records )) || { echo "--- $board: $((records - total)) records gave no verdict:"; grep -aoE 'lfabench reproduce: .*' "$errors" || true; }
echo "--- $board: $same of $records identical"
[[ $same == "$records" && $records -gt 0 ]]
