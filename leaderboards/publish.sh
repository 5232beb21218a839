# Sourced by every board's regeneration script (regenerate-embedded.sh for digits and synthetic, regenerate.sh
# for scene15, descriptor-study and copies); expects SWEEP and LFABENCH to be set, and ROOT (the data root)
# where the board reads ../shared data.

# Print a stage's UTC start time, so a script's log gives the wall time of every stage.
stage() { echo "regenerate.sh: $(date -u +%FT%TZ) $*"; }

# publish_board NAME: publish the complete records of $SWEEP beside leaderboards/NAME and rebuild the
# landing page. The board is replaced as a whole (the previous one stays in git history): its old records
# and environment files go, and the build removes the files of the previous build it no longer writes. An
# absolute data root is recorded as the repository's relative one, so the published folder names are those
# a rerun from the repository root computes.
publish_board() {
    local name=$1
    if [[ $(realpath -m "$SWEEP") != $(realpath -m "leaderboards/$name/records") ]]; then
        rm -rf "leaderboards/$name/records" "leaderboards/$name"/constraints*.txt
    fi
    local relocate=()
    [[ ${ROOT:-} == /* ]] && relocate=(--relocate "$ROOT=../shared/data/scene15")
    $LFABENCH leaderboard "$SWEEP" --out "leaderboards/$name" --name "$name" --publish-records "${relocate[@]}"
    $LFABENCH leaderboard --index leaderboards
}
