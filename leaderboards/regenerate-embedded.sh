#!/usr/bin/env bash
# Regenerate a board on one of lfabench's embedded datasets (no download, no ../shared):
#
#   bash leaderboards/regenerate-embedded.sh digits       # leaderboards/digits/
#   bash leaderboards/regenerate-embedded.sh synthetic    # leaderboards/synthetic/
#
# Setting: every built-in method at its plugin defaults (ProLFA and the six supervised methods included),
# the dataset's own protocol (the knn evaluator's seeded stratified 80/20 splits, 1-NN), seeds 0-5.
# Resumable: every run writes its record under $SWEEP and a rerun skips each (setting, seed) that already
# has a complete record. Then the records are published beside a new board that replaces the old one (`--publish-records` refuses a
# record of a dirty tree or with missing provenance) and the board is rebuilt from them.
#
# Environment: SWEEP (default lfabench_multirun/<board>), JOBS (parallel runs, default 2), TIME_LIMIT (s per
# run, default 1800), PUBLISH (default 1; 0 runs the sweep and leaves leaderboards/ untouched). Each stage
# prints its UTC start time (lines starting "regenerate.sh:"), so a log gives each stage's wall time.
set -euo pipefail

BOARD=${1:?usage: regenerate-embedded.sh digits|synthetic}
case $BOARD in digits|synthetic) ;; *) echo "regenerate-embedded.sh: unknown board '$BOARD' (digits or synthetic)" >&2; exit 2;; esac
SWEEP=${SWEEP:-lfabench_multirun/$BOARD}
JOBS=${JOBS:-2}
TIME_LIMIT=${TIME_LIMIT:-1800}
LFABENCH=${LFABENCH:-lfabench}

common=("dataset=$BOARD" 'seed=range(6)' "hydra.sweep.dir=$SWEEP" continue_on_error=true
        "time_limit=$TIME_LIMIT" hydra/launcher=joblib "hydra.launcher.n_jobs=$JOBS")

source leaderboards/publish.sh

stage "$BOARD: unsupervised methods and ProLFA"
$LFABENCH run -m aggregator=bow,vlad,fv,sc,temb,dm,gamma_democratic,prolfa "${common[@]}"
stage "$BOARD: supervised methods"
$LFABENCH run -m aggregator=t1,univcg,dbows,eobow,fv_nn,lcksvd2 "${common[@]}"
stage "sweep done"
[[ ${PUBLISH:-1} == 0 ]] && exit 0

publish_board "$BOARD"
stage "published"
