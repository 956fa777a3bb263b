#!/usr/bin/env bash
# numba-venv.sh - make build/venv-numba: a Python virtual environment holding PyPI's newest numba
# (>= 0.60), used by tests/test_inspect.sh to make fresh numba caches with another numba than
# Debian's, and by tests/test_host.c to ask a newer LLVM (its llvmlite's) for the CPU name.
#
# Usage: scripts/numba-venv.sh [--numba SPEC] [VENV_DIR]
#        (default: 'numba>=0.60' into build/venv-numba; tests/data/numba-corpus was also made with
#         scripts/numba-venv.sh --numba 'numba==0.60.*' build/venv-numba-0.60)
# Idempotent: when VENV_DIR's python already imports a numba that fits SPEC it does nothing.
# Python: /usr/bin/python3 when its venv module works (Debian: apt-get install python3-venv),
# else the first python3 on PATH that has a working venv module.
# The network: pip fetches from PyPI (or the index pip is configured with).
# Exit status: 0 when the environment works; 3 when the package index cannot be reached (the
# message on stderr says what could not be fetched: a test then skips what needs it); 1 with a
# message on stderr for any other failure.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
spec='numba>=0.60'
if [ "${1:-}" = --numba ]; then spec=${2:?--numba needs a SPEC}; shift 2; fi
venv=${1:-$root/build/venv-numba}

works() {
    [ -x "$venv/bin/python" ] || return 1
    "$venv/bin/python" - "$spec" <<'PY' >/dev/null 2>&1
import re, sys
import numba
spec, v = sys.argv[1], tuple(int(x) for x in numba.__version__.split('.')[:2])
# the specs used here: numba>=0.N, numba==0.N.*
m = re.fullmatch(r'numba(>=|==)0\.(\d+)(\.\*)?', spec)
if not m:
    sys.exit(1)
want = (0, int(m.group(2)))
sys.exit(0 if (v >= want if m.group(1) == '>=' else v == want) else 1)
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
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$venv/bin/python" -m pip install --quiet --timeout 30 --retries 2 "$spec" >"$log" 2>&1; then
    # could the index be reached at all?  pip's own configuration says which index (PIP_INDEX_URL, pip.conf)
    index=$("$venv/bin/python" -m pip config get global.index-url 2>/dev/null)
    index=${PIP_INDEX_URL:-${index:-https://pypi.org/simple/}}
    rm -rf "$venv"
    if ! "$py" - "$index" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip('/') + '/numba/', timeout=20).read(1)
PY
    then
        echo "numba-venv: cannot reach the package index $index: could not fetch '$spec' (and its llvmlite, numpy)" >&2
        exit 3
    fi
    echo "numba-venv: pip install '$spec' failed: $(tail -n 3 "$log" | tr '\n' ' ')" >&2
    exit 1
fi
if ! works; then
    echo "numba-venv: numba installed but 'import numba' fails or does not fit '$spec'" >&2
    exit 1
fi
echo "numba-venv: $venv ready (numba $("$venv/bin/python" -c 'import numba; print(numba.__version__)'))"
