#!/usr/bin/env bash
# Regenerate the descriptor study (leaderboards/descriptor-study/) from lfabench run records.
#
#   pip install -e ".[launchers,hesaff]"               # the joblib launcher; pyhesaff for setting (b)
#   bash leaderboards/descriptor-study/regenerate.sh   # from the repository root
#
# Setting: Fifteen Scene (the shared 200x200 copy), the knn evaluator's seeded stratified 80/20 splits,
# 1-NN Euclidean; BoW, VLAD and FV at their plugin defaults and ProLFA with 256 prototypes (its default
# solver), on five descriptor settings (docs/descriptors-and-the-paper-gap.md):
#   (a) sift, the 90 strongest DoG keypoints (the default)      seeds 0-5
#   (b) hesaff, the 90 largest-scale Hessian-affine regions     seeds 0-5
#   (c) dense_sift, 16 px patches every 8 px, no cap            seeds 0-5
#   (d) sift 90, images upscaled to 300 px                      seeds 0-5
#   (e) sift, no cap, images upscaled to 300 px                 BoW and VLAD seeds 0-2, ProLFA seed 0, no FV
#       (4.3 million descriptors: FV on them does not fit this machine's 24 GB beside another run)
#
# Resumable: every run writes its record under $SWEEP; rerunning this script skips each (setting, seed)
# that already has a complete record. Each stage prints its UTC start time (lines starting
# "regenerate.sh:"), so a log gives the wall time of every stage.
#
# Environment: SCENE15_ROOT (default ../shared/data/scene15), SWEEP (default lfabench_multirun/descriptor-study),
# JOBS (parallel runs of the 90-per-image settings, default 2), BIG_JOBS (parallel runs of the uncapped
# settings (c) and (e), whose FV and ProLFA fits hold 8-15 GB each; default 1), TIME_LIMIT (s per run,
# default 7200), PUBLISH (default 1; 0 runs the sweep and leaves leaderboards/ untouched).
set -euo pipefail

ROOT=${SCENE15_ROOT:-../shared/data/scene15}
SWEEP=${SWEEP:-lfabench_multirun/descriptor-study}
JOBS=${JOBS:-2}
BIG_JOBS=${BIG_JOBS:-1}
TIME_LIMIT=${TIME_LIMIT:-7200}
LFABENCH=${LFABENCH:-lfabench}
# Parallel runs share the machine's cores: one BLAS/OpenMP thread per run unless the caller says otherwise
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

common=(dataset=scene15 "dataset.params.root=$ROOT" evaluator=knn evaluator.params.k=1
        evaluator.params.metric=euclidean "hydra.sweep.dir=$SWEEP" continue_on_error=true
        "time_limit=$TIME_LIMIT" hydra/launcher=joblib)
prolfa=(aggregator=prolfa aggregator.params.n_prototypes=256)
upscaled=(descriptor=sift +descriptor.params.long_side=300)

source leaderboards/publish.sh

stage "(a) sift, (b) hesaff, (d) sift upscaled: bow vlad fv, prolfa 256"
$LFABENCH run -m descriptor=sift,hesaff aggregator=bow,vlad,fv 'seed=range(6)' "${common[@]}" "hydra.launcher.n_jobs=$JOBS"
$LFABENCH run -m descriptor=sift,hesaff "${prolfa[@]}" 'seed=range(6)' "${common[@]}" "hydra.launcher.n_jobs=$JOBS"
$LFABENCH run -m "${upscaled[@]}" aggregator=bow,vlad,fv 'seed=range(6)' "${common[@]}" "hydra.launcher.n_jobs=$JOBS"
$LFABENCH run -m "${upscaled[@]}" "${prolfa[@]}" 'seed=range(6)' "${common[@]}" "hydra.launcher.n_jobs=$JOBS"

stage "(c) dense_sift: bow vlad fv, prolfa 256"
$LFABENCH run -m descriptor=dense_sift aggregator=bow,vlad,fv 'seed=range(6)' "${common[@]}" "hydra.launcher.n_jobs=$BIG_JOBS"
$LFABENCH run -m descriptor=dense_sift "${prolfa[@]}" 'seed=range(6)' "${common[@]}" "hydra.launcher.n_jobs=$BIG_JOBS"

stage "(e) sift upscaled, no cap: bow vlad (seeds 0-2), prolfa 256 (seed 0)"
$LFABENCH run -m "${upscaled[@]}" descriptor.params.max_keypoints=null aggregator=bow,vlad seed=0,1,2 \
    "${common[@]}" "hydra.launcher.n_jobs=$BIG_JOBS"
$LFABENCH run -m "${upscaled[@]}" descriptor.params.max_keypoints=null "${prolfa[@]}" seed=0 \
    "${common[@]}" "hydra.launcher.n_jobs=$BIG_JOBS"

stage "sweep done"
[[ ${PUBLISH:-1} == 0 ]] && exit 0
publish_board descriptor-study
