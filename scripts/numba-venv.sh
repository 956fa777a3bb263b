#!/usr/bin/env bash
# numba-venv.sh - make build/venv-numba: a Python virtual environment holding numba >= 0.60
# from PyPI, used by tests/test_inspect.sh to make fresh numba >= 0.60 cache files.
#
# Idempotent: when build/venv-numba/bin/python already imports a numba >= 0.60 it does nothing.
# Python: /usr/bin/python3 when its venv module works (Debian: apt-get install python3-venv),
# else the first python3 on PATH that has a working venv module.
# Usage: scripts/numba-venv.sh [VENV_DIR]      (default: build/venv-numba, from the repo root)
# Exit status: 0 when the environment works, 1 with a message on stderr otherwise.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build/venv-numba}

works() {
    [ -x "$venv/bin/python" ] || return 1
    "$venv/bin/python" - <<'PY' >/dev/null 2>&1
import numba, sys
v = tuple(int(x) for x in numba.__version__.split('.')[:2])
sys.exit(0 if v >= (0, 60) else 1)
PY
}

if works; then
    echo "numba-venv: $venv ready (numba $("$venv/bin/python" -c 'import numba; print(numba.__version__)'))"
    exit 0
fi

py=
for cand in /usr/bin/python3 $(command -v -a python3 2>/dev/null); do
    [ -x "$cand" ] || continue
    # ensurepip is what Debian splits out into python3-venv; test it, not just "import venv"
    if "$cand" -c 'import venv, ensurepip' >/dev/null 2>&1; then py=$cand; break; fi
done
if [ -z "$py" ]; then
    echo "numba-venv: no python3 with a working venv module (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
fi

rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
echo "numba-venv: creating $venv with $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
if ! "$py" -m venv "$venv"; then
    echo "numba-venv: '$py -m venv' failed (Debian/Ubuntu: apt-get install python3-venv)" >&2
    rm -rf "$venv"; exit 1
fi
if ! "$venv/bin/python" -m pip install --quiet 'numba>=0.60'; then
    echo "numba-venv: pip install 'numba>=0.60' failed (PyPI reachable?)" >&2
    rm -rf "$venv"; exit 1
fi
if ! works; then
    echo "numba-venv: numba installed but 'import numba' fails or is < 0.60" >&2
    exit 1
fi
echo "numba-venv: $venv ready (numba $("$venv/bin/python" -c 'import numba; print(numba.__version__)'))"
