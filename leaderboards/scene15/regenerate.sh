#!/usr/bin/env bash
# Regenerate the Fifteen Scene board (leaderboards/scene15/) from lfabench run records.
#
#   pip install -e ".[launchers]"                      # the joblib launcher runs JOBS runs at once
#   bash leaderboards/scene15/regenerate.sh            # from the repository root
#
# Resumable: every run writes its record under $SWEEP; rerunning this script skips each (setting, seed)
# that already has a complete record, so an interrupted regeneration finishes where it stopped. The
# board itself is rebuilt from whatever records exist at the end (partial boards say how many seeds).
#
# Setting: the shared copy of Fifteen Scene (200x200 images; SIFT keeps the 90 strongest DoG keypoints,
# DAISY 150 per image), the knn evaluator's seeded stratified 80/20 splits, 1-NN Euclidean, seeds 0-5,
# every method at its plugin defaults (the papers' settings) and ProLFA with the paper's d̄ = 4096 (`prolfa_d4096`).
#
# Environment: SCENE15_ROOT (default ../shared/data/scene15), SWEEP (default lfabench_multirun/scene15),
# DESCRIPTORS (default "sift daisy"), JOBS (parallel runs, default 2), TIME_LIMIT (s per run, default 3600),
# PUBLISH (default 1; 0 runs the sweep and leaves leaderboards/ untouched). Each stage prints its UTC start time
# (lines starting "regenerate.sh:"), so a log gives the wall time of every stage.
# SWEEP=leaderboards/scene15/records runs only what the committed board lacks (its records' folders are
# named as this sweep names its runs).
set -euo pipefail

ROOT=${SCENE15_ROOT:-../shared/data/scene15}
SWEEP=${SWEEP:-lfabench_multirun/scene15}
DESCRIPTORS=${DESCRIPTORS:-sift daisy}
JOBS=${JOBS:-2}
TIME_LIMIT=${TIME_LIMIT:-3600}
LFABENCH=${LFABENCH:-lfabench}
# JOBS runs share the machine's cores: one BLAS/OpenMP thread per run unless the caller says otherwise
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

common=(dataset=scene15 "dataset.params.root=$ROOT" evaluator=knn evaluator.params.k=1
        evaluator.params.metric=euclidean 'seed=range(6)' "hydra.sweep.dir=$SWEEP"
        continue_on_error=true "time_limit=$TIME_LIMIT" hydra/launcher=joblib "hydra.launcher.n_jobs=$JOBS")

source leaderboards/publish.sh

for desc in $DESCRIPTORS; do
    # The unsupervised baselines and UniVCG, plugin defaults.
    stage "$desc: bow vlad fv sc temb dm gamma_democratic univcg"
    $LFABENCH run -m "descriptor=$desc" aggregator=bow,vlad,fv,sc,temb,dm,gamma_democratic,univcg "${common[@]}"
    # ProLFA as the paper sets it (linear model, d̄ = 4096).
    stage "$desc: prolfa_d4096"
    $LFABENCH run -m "descriptor=$desc" aggregator=prolfa_d4096 "${common[@]}"
    # Semi-ProLFA with 20 % of each class of the training split labelled (the paper's semi-supervised
    # setting for search; its classification table does not state the proportion).
    stage "$desc: semi_prolfa_d4096"
    $LFABENCH run -m "descriptor=$desc" aggregator=semi_prolfa_d4096 evaluator.params.labelled_fraction=0.2 \
        "${common[@]}"
    # The supervised baselines at their plugin defaults, which are the papers' (T1, EO-BoW, DBoWs: 100
    # L-BFGS iterations; LC-KSVD2: 450 atoms, 50 K-SVD iterations over 30,000 descriptors).
    stage "$desc: t1 eobow dbows fv_nn lcksvd2"
    $LFABENCH run -m "descriptor=$desc" aggregator=t1,eobow,dbows,fv_nn,lcksvd2 "${common[@]}"
done

stage "sweep done"
[[ ${PUBLISH:-1} == 0 ]] && exit 0
publish_board scene15
