# Shared by the CI steps that compare two runs (container.sh, module.sh); each defines log().
# Usage, from the checkout: . .ci/lib.sh

# await_run PID LOG WHAT: wait for a run started in the background; if it failed, show the
# tail of its log and stop the step.
await_run() {
    local rc=0
    wait "$1" || rc=$?
    ((rc == 0)) || { tail -n 40 "$2"; log "$3 failed"; exit 1; }
}

# same_bytes DIR_A DIR_B HOW TARGET...: every target byte-identical in both runs' folders
# (HOW says which runs, e.g. "in the container and in the venv"), else stop the step.
same_bytes() {
    local a=$1 b=$2 how=$3 t
    shift 3
    for t in "$@"; do
        cmp "$a/$t" "$b/$t" || { log "$t differs: not byte-identical $how"; exit 1; }
    done
    log "OK: $* byte-identical $how"
}
