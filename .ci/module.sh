#!/usr/bin/env bash
# CI step: lbrepro as a module of someone else's workflow, exactly as the README's "As a module"
# section says. snakedeploy deploys a copy of this work tree into a fresh directory (a Snakefile
# with `module` + `use rule * from`, and the config and profile copied beside it); a target run
# from there must give the same bytes as the same target run directly from the checkout.
# Usage: bash .ci/module.sh   (with the project's venv active: snakemake and snakedeploy, both
# in requirements.lock)
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
log() { echo "[module-ci $(($(date +%s) - t0))s] $*"; }
. .ci/lib.sh  # await_run, same_bytes (the working directory is the checkout)

# The quick profile's supermarket target (3 points) and its claim checks.
targets=(results/supermarket/supermarket-tail.csv results/supermarket/supermarket-tail.checks.json)
work=$(mktemp -d /tmp/lbrepro-module.XXXXXX)
direct_pid=

cleanup() {
    local rc=$?
    set +e
    if [[ -n ${direct_pid:-} ]]; then
        kill "$direct_pid" 2>/dev/null
        wait "$direct_pid" 2>/dev/null
    fi
    if ((rc == 0)) && [[ -z ${LBREPRO_MODULE_KEEP:-} ]]; then
        rm -rf "$work"
    else
        log "FAILED (exit $rc); kept $work for inspection"
    fi
    log "total $(($(date +%s) - t0)) s"
    exit "$rc"
}
trap cleanup EXIT

# --- deploy ---------------------------------------------------------------------------------
# The source: this work tree's files, tracked and untracked but not ignored (no .venv, results
# or caches: snakedeploy copies a local source whole).
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -x -C "$work/src"
# A local path, not git+file://…@tag: a tag-pinned local module hits a Snakemake 9.27 bug
# (LocalGitFile.join, for the scripts of included rules). snakedeploy wants a ref even for a
# local path, where it is not used.
snakedeploy deploy-workflow "$work/src" "$work/deployed" --name lbrepro --branch main \
    >"$work/snakedeploy.log" 2>&1 || { cat "$work/snakedeploy.log"; exit 1; }
deployed=$work/deployed/workflow/Snakefile
grep -q '^module lbrepro:' "$deployed" && grep -q '^use rule \* from lbrepro' "$deployed" ||
    { cat "$deployed"; log "snakedeploy wrote no module declaration"; exit 1; }
# For a local source snakedeploy writes the path relative to the source ("workflow/Snakefile"),
# but Snakemake resolves a module's snakefile relative to the file declaring it (here
# deployed/workflow/): name it absolutely. A GitHub source gets github(…, path=…, tag=…) instead.
grep -qx '        "workflow/Snakefile"' "$deployed" ||
    { cat "$deployed"; log "unexpected snakefile declaration (snakedeploy changed?)"; exit 1; }
sed -i "s|^        \"workflow/Snakefile\"\$|        \"$work/src/workflow/Snakefile\"|" "$deployed"
[[ -f $work/deployed/config/config.yaml && -f $work/deployed/profiles/default/config.yaml ]] ||
    { log "config or profile not deployed"; exit 1; }
# The deployment has no rules of its own: whatever runs there comes from the module.
[[ $(ls "$work/deployed/workflow") == Snakefile ]] || { log "more than a Snakefile deployed"; exit 1; }
log "deployed with snakedeploy into $work/deployed"

# --- the same targets, from the deployment and directly -------------------------------------
# The direct run goes alongside, in a scratch --directory (the checkout's results/ neither masks
# nor receives anything); each run takes one core.
timeout -k 20 600 snakemake "${targets[@]}" --cores 1 --directory "$work/direct" \
    --configfile config/config.yaml config/quick.yaml >"$work/direct.log" 2>&1 &
direct_pid=$!
(cd "$work/deployed" && timeout -k 20 600 snakemake "${targets[@]}" --cores 1 \
    --configfile config/config.yaml config/quick.yaml) >"$work/deployed.log" 2>&1 ||
    { tail -n 40 "$work/deployed.log"; log "run of the deployed module failed"; exit 1; }
log "module run done"
await_run "$direct_pid" "$work/direct.log" "the direct run"
direct_pid=
log "direct run done"

same_bytes "$work/deployed" "$work/direct" "from the snakedeploy deployment and directly" \
    "${targets[@]}"
