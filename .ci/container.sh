#!/usr/bin/env bash
# CI step: the container route of the README's "In a container" section, end to end.
#   1. install podman (with runc) and mmdebstrap from Debian when missing,
#   2. make a Debian bookworm root filesystem with Python (mmdebstrap: no image registry is
#      reachable here) and import it as the base image,
#   3. build the Containerfile on it (the packages at the versions of requirements.lock, checked),
#   4. run the quick profile's supermarket-tail target inside the image, without network, on
#      this work tree bind-mounted read-only, and
#   5. check the table and the claim checks are byte-identical to the venv run of the same target.
# Each step prints its wall time. podman runs with a configuration and a storage of its own in a
# scratch directory (removed on exit, also on failure): nothing of a podman of the machine is
# read or changed. The settings are the ones this CI kernel needs: the default runtime crun
# cannot start containers here (cgroups hybrid mode, RLIMIT errors), runc can, with the
# nofile/nproc limits capped; cgroupfs and a file events log, as there is no systemd.
# Needs root on Debian. Usage: bash .ci/container.sh   (with the project's venv active)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
t0=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
log() { echo "[container-ci $(($(date +%s) - t0))s] $*"; }
. .ci/lib.sh  # await_run, same_bytes (the working directory is the checkout)
step_start=$t0
step() { # step NAME: the wall time since the previous step
    local now
    now=$(date +%s)
    log "$1 ($((now - step_start)) s)"
    step_start=$now
}

targets=(results/supermarket/supermarket-tail.csv results/supermarket/supermarket-tail.checks.json)
configs=(config/config.yaml config/quick.yaml)
image=localhost/lbrepro:ci
base=localhost/lbrepro-base:bookworm

need=()
for cmd in podman buildah runc mmdebstrap fuse-overlayfs newuidmap; do
    command -v "$cmd" >/dev/null || need+=("$cmd")
done
if ((${#need[@]})); then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends podman buildah fuse-overlayfs uidmap runc \
        mmdebstrap >/dev/null
    step "installed podman, buildah, fuse-overlayfs, uidmap, runc, mmdebstrap (missing: ${need[*]})"
fi

# In memory (about 1.2 GB at the peak): the disk of a busy CI machine made the root filesystem,
# the image layers and their removal take minutes longer.
tmp=${LBREPRO_CONTAINER_TMP:-/dev/shm}
work=$(mktemp -d "$tmp/lbrepro-container.XXXXXX")
export TMPDIR=$work # mmdebstrap builds the root filesystem there
venv_pid=

cleanup() {
    local rc=$?
    set +e
    if [[ -n ${venv_pid:-} ]]; then
        kill "$venv_pid" 2>/dev/null
        wait "$venv_pid" 2>/dev/null
    fi
    # podman only once it is known to use this script's storage (checked below).
    # Its storage is removed whole below (faster than podman rmi).
    if [[ -n ${podman_ours:-} ]]; then
        findmnt -rn -o TARGET | grep "^$work/" | sort -r | xargs -r umount -l 2>/dev/null
    fi
    if ((rc == 0)) && [[ -z ${LBREPRO_CONTAINER_KEEP:-} ]]; then
        rm -rf "$work"
        log "removed $work (images and storage)"
    else
        log "FAILED (exit $rc); kept $work for inspection"
    fi
    log "total $(($(date +%s) - t0)) s"
    exit "$rc"
}
trap cleanup EXIT

# The venv reference run goes alongside (one core), in a scratch --directory, so that the
# checkout's results/ neither masks nor receives anything.
timeout -k 20 900 snakemake "${targets[@]}" --cores 1 --directory "$work/venv" \
    --configfile "${configs[@]}" >"$work/venv.log" 2>&1 &
venv_pid=$!

# --- podman, on its own ------------------------------------------------------------------------
cap() { # cap LIMIT MAX: the smaller of a hard limit (maybe "unlimited") and MAX
    if [[ $1 == unlimited ]] || (($1 > $2)); then echo "$2"; else echo "$1"; fi
}
nofile=$(cap "$(ulimit -Hn)" 20000)
nproc=$(cap "$(ulimit -Hu)" 32768)
cat >"$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$work/podman-events.log"
tmp_dir = "$work/libpod"
EOF
cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
export CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf
podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphRoot}}' | grep -qF "runc $work" ||
    { podman info; log "podman does not use this script's runtime and storage"; exit 1; }
podman_ours=1

# --- the base image: Debian bookworm with Python, from Debian's packages -----------------------
# The tarball goes straight into podman import (no copy on disk).
mmdebstrap --quiet --variant=apt --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm - 2>"$work/mmdebstrap.log" | podman import -q - "$base" >/dev/null ||
    { tail -n 30 "$work/mmdebstrap.log"; log "mmdebstrap or podman import failed"; exit 1; }
step "root filesystem made with mmdebstrap, imported as $base ($(podman image inspect -f \
    '{{.Size}}' "$base" | awk '{printf "%d", $1 / 1e6}') MB)"

# --- the image -----------------------------------------------------------------------------------
# pip in the build needs this machine's CA bundle (outbound TLS); it is bind-mounted for the
# RUN steps only, so it does not end up in the image (which keeps Debian's ca-certificates).
build=(podman build --network host --build-arg "BASE=$base" -t "$image" -f Containerfile)
ca=/etc/ssl/certs/ca-certificates.crt
[[ -f $ca ]] && build+=(-v "$ca:$ca:ro")
"${build[@]}" . >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; log "build failed"; exit 1; }
step "image $image built ($(podman image inspect -f '{{.Size}}' "$image" | awk '{printf "%d", $1 / 1e6}') MB)"

# Every package of the image at the lock's version (lbrepro itself is the one not in the lock).
podman run --rm --network none "$image" python -m pip list --format=freeze >"$work/image-packages.txt"
python - "$work/image-packages.txt" requirements.lock <<'EOF'
import sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

image = dict(line.split("==") for line in open(sys.argv[1]).read().split())
lock = {}
for line in open(sys.argv[2]):
    line = line.split("#", 1)[0].strip()
    if line:
        req = Requirement(line)
        lock[canonicalize_name(req.name)] = next(iter(req.specifier)).version
wrong = {
    name: (version, lock.get(canonicalize_name(name)))
    for name, version in image.items()
    if canonicalize_name(name) not in ("lbrepro", "pip", "setuptools")
    and lock.get(canonicalize_name(name)) != version
}
if wrong:
    sys.exit(f"image packages not at the lock's versions (image, lock): {wrong}")
print(f"{len(image)} packages in the image, all at the lock's versions")
EOF
step "image packages checked against requirements.lock"

# --- the target inside the container -------------------------------------------------------------
mkdir "$work/container"
inside=()
for c in "${configs[@]}"; do inside+=("/src/$c"); done
timeout -k 20 900 podman run --rm --network none -v "$src:/src:ro" -v "$work/container:/out" \
    "$image" snakemake "${targets[@]}" --snakefile /src/Snakefile --cores 1 --directory /out \
    --configfile "${inside[@]}" >"$work/container.log" 2>&1 ||
    { tail -n 40 "$work/container.log"; log "the run in the container failed"; exit 1; }
step "target run in the container (--network none, work tree bind-mounted read-only)"

await_run "$venv_pid" "$work/venv.log" "the venv run"
venv_pid=
step "venv run done (it ran alongside)"
same_bytes "$work/container" "$work/venv" "in the container and in the venv" "${targets[@]}"
