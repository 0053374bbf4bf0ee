#!/usr/bin/env bash
# CI step: what a release is made of. `python -m build` makes the sdist and, from it, the wheel;
# `twine check --strict` passes both; the sdist carries what a rebuild and a citation need; and
# `cffconvert --validate` accepts CITATION.cff. The tools live in a venv of their own, pinned
# here (cffconvert 2.0.0 needs jsonschema < 4, which the project's environment cannot have).
# Nothing is written into the checkout but setuptools' ignored src/*.egg-info.
# Usage: bash .ci/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
log() { echo "[release-ci $(($(date +%s) - t0))s] $*"; }
work=$(mktemp -d /tmp/lbrepro-release.XXXXXX)
trap 'rc=$?; ((rc == 0)) && rm -rf "$work" || log "FAILED (exit $rc); kept $work"; exit $rc' EXIT

python3 -m venv "$work/tools"
"$work/tools/bin/pip" install -q build==1.6.1 twine==7.0.0 cffconvert==2.0.0 >"$work/pip.log" 2>&1 ||
    { tail -n 20 "$work/pip.log"; log "installing the release tools failed"; exit 1; }
log "release tools installed"

"$work/tools/bin/python" -m build -q --outdir "$work/dist" . >"$work/build.log" 2>&1 ||
    { tail -n 40 "$work/build.log"; log "python -m build failed"; exit 1; }
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' src/lbrepro/__init__.py)
sdist=$work/dist/lbrepro-$version.tar.gz
wheel=$work/dist/lbrepro-$version-py3-none-any.whl
[[ -f $sdist && -f $wheel ]] || { ls "$work/dist"; log "no sdist/wheel of version $version"; exit 1; }
"$work/tools/bin/twine" check --strict "$sdist" "$wheel"
tar -tzf "$sdist" >"$work/sdist.txt"
for f in LICENSE CITATION.cff CHANGELOG.md requirements.lock src/lbrepro/schemas/config.schema.yaml; do
    grep -qx "lbrepro-$version/$f" "$work/sdist.txt" || { log "$f missing from the sdist"; exit 1; }
done
log "sdist and wheel of $version built, twine check passed"

"$work/tools/bin/cffconvert" --validate -i CITATION.cff
log "OK: release $version ready (tag it: git tag -a v$version)"
