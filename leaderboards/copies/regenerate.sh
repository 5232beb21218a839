#!/usr/bin/env bash
# Regenerate the copies retrieval board (leaderboards/copies/) from lfabench run records.
#
#   pip install -e ".[launchers]"                      # the joblib launcher runs JOBS runs at once
#   bash leaderboards/copies/regenerate.sh             # from the repository root
#
# Setting: the `copies` preset (conf/experiment/copies.yaml). Copies of all 4,485 Fifteen Scene photographs
# under INRIA Copydays' attack families, drawn from dataset seed 0 (one crop removing 10-80 % of the area,
# one JPEG at quality 75 down to 3, one "strong" attack per photograph), each original with its 3 copies one
# group; the original queries the 17,940-image database, its own image removed (the Holidays rule); mAP and
# precision@1/5/10. SIFT keeps 90 DoG keypoints per image, DAISY up to 300 (the dataset's protocol). Seeds
# 0-5. Every method of the paper's search table: the unsupervised ones and the supervised baselines at their
# plugin defaults, ProLFA and Semi-ProLFA with d̄ = 2048, 20 % of each group annotated, rounded up (the paper's
# search setting: one image of each group here; a fully supervised method learns from the annotated images
# only), plus gamma-democratic, FV+NN and ASMK (a searcher). A second row for ProLFA, Semi-ProLFA, DBoWs and LC-KSVD2 annotates
# whole groups instead (20 % of the groups, every image of each: labelled_unit=class), the rule under which
# DBoWs' criterion is defined. A run whose criterion is undefined for its annotation ends before extraction
# with a failed record naming it; the board shows it as not applicable. A stand-in built from real
# photographs, not Oxford, Holidays nor Copydays: docs/retrieval.md.
#
# Resumable: every run writes its record under $SWEEP; rerunning this script skips each (setting, seed)
# that already has a complete record. Each stage prints its UTC start time (lines starting
# "regenerate.sh:"), so a log gives the wall time of every stage.
#
# Environment: SCENE15_ROOT (default ../shared/data/scene15), SWEEP (default lfabench_multirun/copies),
# DESCRIPTORS (default "sift daisy"), JOBS (parallel SIFT runs, default 2), DAISY_JOBS (parallel DAISY runs,
# default 1: SIFT's T-emb, VLAD and FV runs already peak at 6-8 GB on this board, and DAISY's descriptors are
# 200-D against 128, up to 300 per image against 90: two DAISY runs at once risk this machine's 24 GB),
# DAISY_THREADS (the `threads` of each DAISY run, default 2: one run at a time still uses both cores; the
# count is recorded in each record's `determinism` and the setting is the same), TIME_LIMIT (s per run,
# default 14400), PUBLISH (default 1; 0 runs the sweep and leaves leaderboards/ untouched).
set -euo pipefail

ROOT=${SCENE15_ROOT:-../shared/data/scene15}
SWEEP=${SWEEP:-lfabench_multirun/copies}
DESCRIPTORS=${DESCRIPTORS:-sift daisy}
JOBS=${JOBS:-2}
DAISY_JOBS=${DAISY_JOBS:-1}
DAISY_THREADS=${DAISY_THREADS:-2}
TIME_LIMIT=${TIME_LIMIT:-14400}
LFABENCH=${LFABENCH:-lfabench}
# JOBS runs share the machine's cores: one BLAS/OpenMP thread per run unless the caller says otherwise
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

common=(+experiment=copies "dataset.params.root=$ROOT" 'seed=range(6)' "hydra.sweep.dir=$SWEEP"
        continue_on_error=true "time_limit=$TIME_LIMIT" hydra/launcher=joblib)

source leaderboards/publish.sh

for desc in $DESCRIPTORS; do
    run=("hydra.launcher.n_jobs=$JOBS")
    [[ $desc == daisy ]] && run=("hydra.launcher.n_jobs=$DAISY_JOBS" "threads=$DAISY_THREADS")
    # The unsupervised methods of the paper's search table and the others, plugin defaults.
    stage "$desc: bow vlad fv temb sc dm gamma_democratic"
    $LFABENCH run -m "descriptor=$desc" aggregator=bow,vlad,fv,temb,sc,dm,gamma_democratic "${common[@]}" "${run[@]}"
    # Semi-ProLFA as the paper searches with it: d̄ = 2048, 20 % of each group annotated (the preset's).
    stage "$desc: semi_prolfa_d2048"
    $LFABENCH run -m "descriptor=$desc" aggregator=semi_prolfa_d2048 "${common[@]}" "${run[@]}"
    # The supervised rows of the search table under the paper's rule (one annotated image per group).
    stage "$desc: fv_nn t1 eobow dbows lcksvd2 prolfa_d2048 univcg"
    $LFABENCH run -m "descriptor=$desc" aggregator=fv_nn,t1,eobow,dbows,lcksvd2,prolfa_d2048,univcg \
        "${common[@]}" "${run[@]}"
    # Whole annotated groups: the rows the paper's rule leaves undefined, and both ProLFA variants.
    stage "$desc: prolfa_d2048 semi_prolfa_d2048 dbows lcksvd2, whole groups annotated"
    $LFABENCH run -m "descriptor=$desc" aggregator=prolfa_d2048,semi_prolfa_d2048,dbows,lcksvd2 \
        +evaluator.params.labelled_unit=class "${common[@]}" "${run[@]}"
    # Beyond the paper: ASMK*, a match kernel that indexes the database and searches it itself (a searcher;
    # pip install -e ".[asmk]").
    stage "$desc: asmk"
    $LFABENCH run -m "descriptor=$desc" aggregator=asmk "${common[@]}" "${run[@]}"
done

stage "sweep done"
[[ ${PUBLISH:-1} == 0 ]] && exit 0
publish_board copies
