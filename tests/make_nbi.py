#!/usr/bin/env python3
"""make_nbi.py - make fresh numba cache files (.nbi/.nbc) for tests/test_inspect.sh.

Usage: make_nbi.py PYTHON OUTDIR

PYTHON is the interpreter that has numba (e.g. /usr/bin/python3 with Debian's numba
0.56, or build/venv-numba/bin/python with numba >= 0.60); this script itself only needs
the standard library and may run under any python3.  For every case it writes
OUTDIR/CASE/mod.py, compiles it in a fresh PYTHON process (NUMBA_CACHE_DIR=OUTDIR/CASE/cache,
except the "intree" case, which uses numba's default OUTDIR/CASE/__pycache__), then changes
the source where the case asks for it, and finally writes OUTDIR/MANIFEST.json in the form
of the shared corpus's MANIFEST (plus the numba version, the cases' indexes and notes):

  sigs      one function, five signatures (int, float, complex, 2-d Fortran array, str)
  generic   compiled twice: with the host CPU and with NUMBA_CPU_NAME=generic
  stale     compiled, then a comment appended (size and mtime differ)
  touched   compiled, then the mtime moved 2.5 s on, content unchanged
  closure   a closure over a captured value (the code hash's closure part is non-empty)
  parallel  @njit(parallel=True, cache=True) with prange
  vectorize @vectorize([...], cache=True)
  intree    no NUMBA_CACHE_DIR: the index lands in CASE/__pycache__
"""
import json
import os
import subprocess
import sys

CASES = {
    "sigs": '''
import numpy as np
from numba import njit

@njit(cache=True)
def combine(a, b):
    return a + b

def main():
    combine(1, 2)
    combine(1.5, 2.5)
    combine(1j, 2j)
    x = np.asfortranarray(np.ones((2, 3), dtype=np.float32))
    combine(x, x)
    combine("ab", "cd")
''',
    "generic": '''
from numba import njit

@njit(cache=True)
def sq(x):
    return x * x

def main():
    sq(3)
''',
    "stale": '''
from numba import njit

@njit(cache=True)
def inc(x):
    return x + 1

def main():
    inc(1)
''',
    "touched": '''
from numba import njit

@njit(cache=True)
def dec(x):
    return x - 1

def main():
    dec(1)
    dec(1.0)
''',
    "closure": '''
from numba import njit

def make(k):
    @njit(cache=True)
    def addk(x):
        return x + k
    return addk

def main():
    make(7)(1)
''',
    "parallel": '''
import numpy as np
from numba import njit, prange

@njit(parallel=True, cache=True)
def psum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s

def main():
    psum(np.arange(100.0))
''',
    "vectorize": '''
from numba import vectorize

@vectorize(["float64(float64, float64)", "int64(int64, int64)"], cache=True)
def vmul(a, b):
    return a * b

def main():
    vmul(2.0, 3.0)
''',
    "intree": '''
from numba import njit

@njit(cache=True)
def tri(n):
    return n * (n + 1) // 2

def main():
    tri(10)
''',
}


def run(python, case_dir, env_extra):
    env = dict(os.environ)
    for k in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_DISABLE_JIT"):
        env.pop(k, None)
    env.update(env_extra)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    code = "import sys; sys.path.insert(0, '.'); import mod; mod.main()"
    subprocess.run([python, "-c", code], cwd=case_dir, env=env, check=True)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: make_nbi.py PYTHON OUTDIR\n")
        return 2
    python, out = sys.argv[1], os.path.abspath(sys.argv[2])
    if os.sep in python:
        python = os.path.abspath(python)  # the cases run with cwd=CASE; keep a venv's symlink
    version = subprocess.run([python, "-c", "import numba; print(numba.__version__)"],
                             check=True, capture_output=True, text=True).stdout.strip()
    os.makedirs(out, exist_ok=True)
    manifest = {"_numba_version": version, "_python": python}
    for case, text in CASES.items():
        case_dir = os.path.join(out, case)
        os.makedirs(case_dir, exist_ok=True)
        src = os.path.join(case_dir, "mod.py")
        with open(src, "w") as f:
            f.write(text)
        # a stamp that is well clear of "now", with a fractional part, like a real edit's
        st = os.stat(src)
        base_ns = (st.st_mtime_ns // 1000000000 - 100) * 1000000000 + 123456789
        os.utime(src, ns=(base_ns, base_ns))
        cache = os.path.join(case_dir, "cache")
        env = {} if case == "intree" else {"NUMBA_CACHE_DIR": cache}
        run(python, case_dir, env)
        note = ""
        if case == "generic":
            run(python, case_dir, dict(env, NUMBA_CPU_NAME="generic"))
            note = "overload 1: host CPU; overload 2: NUMBA_CPU_NAME=generic"
        elif case == "stale":
            with open(src, "a") as f:
                f.write("# edited after caching\n")
            os.utime(src, ns=(base_ns + 1000000000, base_ns + 1000000000))
            note = "comment appended after caching: size and mtime (+1 s) differ"
        elif case == "touched":
            os.utime(src, ns=(base_ns + 2500000000, base_ns + 2500000000))
            note = "mtime moved 2.5 s on after caching, content unchanged"
        st = os.stat(src)
        top = os.path.join(case_dir, "__pycache__" if case == "intree" else "cache")
        indexes = []
        for d, _, files in os.walk(top):
            indexes += [os.path.relpath(os.path.join(d, n), case_dir) for n in files if n.endswith(".nbi")]
        manifest[case] = {
            "source": "mod.py",
            "source_mtime_ns": st.st_mtime_ns,
            "source_size": st.st_size,
            "indexes": sorted(indexes),
            "note": note,
        }
    with open(os.path.join(out, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
