#!/usr/bin/env python3
"""numba_cases.py - real numba caches, each changed the way users change them, with what numba
itself then does recorded beside it: the ground truth kcache-inspect's verdicts are checked
against (tests/test_inspect.sh), and the maker of tests/data/numba-corpus.

Usage: numba_cases.py PYTHON OUTDIR [--other PYTHON2] [--only CASE,...] [--extra | --env | --real] [--list]
       numba_cases.py --readme CORPUS     (writes CORPUS/README.md from its cases.json files)

PYTHON is the interpreter with the numba under test (Debian's /usr/bin/python3, a venv's
python); this script needs only the standard library and may run under any python3.  For each
case it writes OUTDIR/CASE/ (a module named after the case, its cache), compiles it with
PYTHON, applies the case's change, then runs PYTHON again in a fresh process with
NUMBA_DEBUG_CACHE=1 and records, from numba's own log lines and exceptions, what it did:

  hit         every call loaded its data ("[cache] data loaded from")
  partial     some calls loaded, some compiled
  recompile   the index was read ("[cache] index loaded from"), nothing of it used
  ignored     the index was not read, and the new one was saved over it (another version)
  never-read  the index was not read, and numba saved its cache elsewhere
  raises      the call raised (the exception's type is recorded)

The cases that need another numba's index (version-mismatch*) are made with --other.  All of a
phase's cases run in one process (modules named after their case, so nothing collides), which
keeps a numba's whole set to a few seconds.  OUTDIR/cases.json holds, per case: the index (or
indexes) to inspect, the verdict kcache-inspect must give (per stamp kind where numba's
versions differ), the options to give it, numba's recorded behaviour, and the mtime of every
file (git keeps none; the test puts them back before checking).
"""
import json
import os
import pickle
import shutil
import subprocess
import sys
import zipfile

SIMPLE = '''from numba import njit


@njit(cache=True)
def f(x):
    return x + 1
'''

TWO = SIMPLE  # called with an int and a float: two overloads

GUF = '''import numpy as np
from numba import guvectorize


@guvectorize(["void(float64[:], float64[:])"], "(n)->()", cache=True)
def gsum(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s
'''

DEP_HELPER = '''from numba import njit


@njit
def scale(x):
    return x * 4
'''

DEP_MOD = '''from numba import njit

from c_stale_dep_helper import scale


@njit(cache=True)
def use(x):
    return scale(x)
'''

CELL = '''from numba import njit


@njit(cache=True)
def f(x):
    y = x * 2
    return y + 1

print("a cell can hold more")
'''

ZMOD = '''from numba import njit


@njit(cache=True)
def f(x):
    return x + 3
'''

SIGS = """import numpy as np
from numba import njit


@njit(cache=True)
def combine(a, b):
    return a + b
"""

CLOSURE = """from numba import njit


def make(k):
    @njit(cache=True)
    def addk(x):
        return x + k
    return addk
"""

PARALLEL = """import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def psum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s
"""

VECTORIZE = """from numba import vectorize


@vectorize(["float64(float64, float64)", "int64(int64, int64)"], cache=True)
def vmul(a, b):
    return a * b
"""

CALL1 = ["mod.f(1)"]
CALL2 = ["mod.f(1)", "mod.f(1.5)"]


def by_stamp(mtime, sha):
    return {"mtime-size": mtime, "sha256": sha}


# name: source files, how it is called, what is done to it, what kcache-inspect must say.
# layout: intree (__pycache__ beside the source), cachedir (NUMBA_CACHE_DIR), notebook, zip.
CASES = [
    dict(name="hit", files={"": TWO}, calls=CALL2, change=None, expect="hit",
         note="compiled for an int and a float, unchanged: numba loads both"),
    dict(name="partial", files={"": TWO}, calls=CALL2, change="rm_data2", expect="partial",
         note="the second overload's .nbc removed: numba loads the first, compiles the second"),
    dict(name="stale_edit", files={"": SIMPLE}, calls=CALL1, change="append", expect="stale",
         note="a line appended after caching: the stamp differs, numba recompiles"),
    dict(name="touched", files={"": SIMPLE}, calls=CALL1, change="touch", expect=by_stamp("stale", "hit"),
         note="mtime moved on, content unchanged: numba <= 0.67 recompiles (mtime), >= 0.68 hits (sha256)"),
    dict(name="same_size_edit", files={"": SIMPLE}, calls=CALL1, change="same_size_edit",
         expect=by_stamp("hit", "stale"), fresh="mod.f.py_func(1)",
         note="x + 1 edited to x + 2, same size, mtime put back: numba <= 0.67 reuses the old code "
              "(a stale result), >= 0.68 recompiles"),
    dict(name="whole_seconds", files={"": SIMPLE}, calls=CALL1, change="whole_seconds",
         expect=by_stamp("stale", "hit"),
         note="the mtime's fraction lost (a copy keeping whole seconds): numba <= 0.67 recompiles, "
              ">= 0.68 hits"),
    dict(name="cpu_mismatch", files={"": SIMPLE}, calls=CALL1, change=None, build_env={"NUMBA_CPU_NAME": "generic"},
         expect="cpu-mismatch", note="compiled with NUMBA_CPU_NAME=generic, run on the host CPU: numba recompiles"),
    dict(name="raises_index", files={"": SIMPLE}, calls=CALL1, change="truncate_index_body", expect="raises",
         note="the index's body cut in half: numba unpickles it and raises"),
    dict(name="raises_data", files={"": SIMPLE}, calls=CALL1, change="truncate_data1", expect="raises",
         note="the .nbc cut in half: numba unpickles it and raises"),
    dict(name="never_read_line", files={"": SIMPLE}, calls=CALL1, change="insert_line_above", expect="never-read",
         note="a line inserted above the function: numba looks up the index of its new first line"),
    dict(name="never_read_moved", layout="cachedir", files={"": SIMPLE}, calls=CALL1, change="move_tree",
         expect="never-read",
         note="NUMBA_CACHE_DIR tree moved with its source: numba hashes the new directory and never reads it"),
    dict(name="version_mismatch", files={"": SIMPLE}, calls=CALL1, change=None, other=True,
         expect="version-mismatch", numba_version=True,
         note="compiled by the other numba: this numba reads the version, ignores the rest, recompiles"),
    dict(name="version_mismatch_damaged", files={"": SIMPLE}, calls=CALL1, change="truncate_index_body", other=True,
         expect="version-mismatch", numba_version=True,
         note="the other numba's index with its body cut: this numba stops at the version, recompiles silently"),
    dict(name="stale_dep", files={"": DEP_MOD, "c_stale_dep_helper.py": DEP_HELPER}, calls=["mod.use(5)"],
         change="edit_helper", expect="hit", warning="stale-dependency", fresh="mod.use.py_func(5)",
         note="an imported module edited after caching (x * 4 -> x * 5): numba hits and returns the old "
              "result (use(5) is 20, the edited code gives 25)"),
    dict(name="guvectorize", files={"": GUF}, calls=["mod.gsum(np.arange(4.0))"], change=None, expect="hit",
         indexes=2, note="@guvectorize writes two indexes, the kernel's and the wrapper's (guf-)"),
    dict(name="guvectorize_stale", files={"": GUF}, calls=["mod.gsum(np.arange(4.0))"], change="append",
         expect="stale", indexes=2, note="@guvectorize, source edited: both indexes are stale"),
    dict(name="notebook", layout="notebook", files={"cell.py": CELL}, calls=["ns['f'](3)"], change=None,
         expect="hit", note="a notebook cell (IPython's locator), unchanged"),
    dict(name="notebook_stale", layout="notebook", files={"cell.py": CELL}, calls=["ns['f'](3)"],
         change="edit_cell", expect="stale", note="the cell's function body edited (its first two lines kept)"),
    dict(name="zip", layout="zip", files={"c_zip.py": ZMOD}, calls=["zmod.f(1)"], change=None, expect="hit",
         min_numba=(0, 68), note="a function imported from a zip archive (numba >= 0.68's ZipCacheLocator)"),
    dict(name="zip_stale", layout="zip", files={"c_zip_stale.py": ZMOD}, calls=["zmod.f(1)"], change="edit_zip",
         expect="stale", min_numba=(0, 68), note="the zip member edited"),
]

ADD = """from numba import njit


@njit(cache=True)
def f(a, b):
    return a + b
"""

ASSERTS = """from numba import njit


@njit(cache=True)
def f(x):
    assert x > 0
    return x + 1
"""

PP_HELPER = """from numba import njit


@njit
def scale(x):
    return x * 4
"""

PP_MOD = """from numba import njit

from c_pp_helper import scale


@njit(cache=True)
def use(x):
    return scale(x)
"""

CFUNC = """from numba import cfunc


@cfunc("int64(int64)", cache=True)
def f(x):
    return x + 1
"""

# --env: what numba reads from the run's environment besides the source (issue 27): which cache
# directory its locators pick, the bytecode in the key, the exact CPU feature string, zip imports
# before 0.68, damaged indexes and data files.  run_env: the variables of numba's second run (and
# kcache-inspect's); "{case}" is the case's directory, "{out}" the corpus root.
ENV_CASES = [
    dict(name="cachedir_set", files={"": SIMPLE}, calls=CALL1, change=None, run_env={"NUMBA_CACHE_DIR": "{case}/ncd"},
         expect="never-read", note="cached in-tree, then run with NUMBA_CACHE_DIR set: numba opens only its NUMBA_CACHE_DIR index"),
    dict(name="cachedir_hit", layout="cachedir", files={"": SIMPLE}, calls=CALL1, change=None,
         run_env={"NUMBA_CACHE_DIR": "{case}/ncd"}, expect="hit",
         note="cached and run with NUMBA_CACHE_DIR set: numba loads that index"),
    dict(name="userwide_hit", layout="userwide", files={"": SIMPLE}, calls=CALL1, change=None, expect="hit",
         note="__pycache__ cannot be made (a file of that name): numba uses the user-wide cache ($XDG_CACHE_HOME/numba)"),
    dict(name="userwide_writable", layout="userwide", files={"": SIMPLE}, calls=CALL1, change="rm_pycache_file",
         expect="never-read", note="cached user-wide, then __pycache__ became possible: numba opens the in-tree index only"),
    dict(name="bytecode_edit", files={"": ADD}, calls=["mod.f(1, 2)"], change="sub_for_add", expect="stale",
         fresh="mod.f.py_func(1, 2)",
         note="a + b edited to a - b, same size, mtime put back: the stamp holds but the bytecode is another key"),
    dict(name="pythonoptimize", files={"": ASSERTS}, calls=CALL1, change=None, run_env={"PYTHONOPTIMIZE": "1"},
         expect="stale", note="cached without, run with PYTHONOPTIMIZE=1: the assert is compiled out, the bytecode differs"),
    dict(name="features_order", files={"": SIMPLE}, calls=CALL1, change=None,
         build_env={"NUMBA_CPU_FEATURES": "{host_features_reversed}"}, expect="cpu-mismatch",
         note="cached with NUMBA_CPU_FEATURES set to the host's own features in reverse order: numba compares the strings"),
    dict(name="empty_index", files={"": SIMPLE}, calls=CALL1, change="empty_index", expect="raises",
         note="the .nbi emptied: pickle.load raises EOFError on every call"),
    dict(name="garbage_index", files={"": SIMPLE}, calls=CALL1, change="garbage_index", expect="raises",
         note="the .nbi overwritten with text: pickle.load raises UnpicklingError"),
    dict(name="nbc_gone", files={"": TWO}, calls=CALL2, change="rm_all_data", expect="data-missing",
         note="every .nbc removed: numba reads the index, finds no data, recompiles"),
    dict(name="guf_nbc_gone", files={"": GUF}, calls=["mod.gsum(np.arange(4.0))"], change="rm_all_data",
         expect="data-missing", indexes=2, note="@guvectorize with every .nbc removed, the wrapper's (guf-) too"),
    dict(name="zip_old", layout="zip", files={"c_zip_old.py": ZMOD}, calls=["zmod.f(1)"], change=None, expect="hit",
         min_numba=(0, 61), note="a zip import (ZipCacheLocator, numba >= 0.61), unchanged"),
    dict(name="zip_rewritten", layout="zip", files={"c_zip_rewritten.py": ZMOD}, calls=["zmod.f(1)"], change="rewrite_zip",
         expect=by_stamp("stale", "hit"), min_numba=(0, 61),
         note="the archive rewritten with the same member bytes: < 0.68 stamps the archive's (mtime, size), 0.68 the member's sha256"),
    dict(name="locator_fs_agnostic", files={"": SIMPLE}, calls=CALL1, change="whole_seconds",
         build_env={"NUMBA_CACHE_LOCATOR_CLASSES": "InTreeCacheLocatorFsAgnostic"},
         run_env={"NUMBA_CACHE_LOCATOR_CLASSES": "InTreeCacheLocatorFsAgnostic"}, expect="hit", min_numba=(0, 62), max_numba=(0, 67),
         note="NUMBA_CACHE_LOCATOR_CLASSES=InTreeCacheLocatorFsAgnostic, the mtime's fraction lost: floor(st_mtime) still matches"),
    dict(name="locator_switched", files={"": SIMPLE}, calls=CALL1, change=None,
         build_env={"NUMBA_CACHE_LOCATOR_CLASSES": "InTreeCacheLocatorFsAgnostic"}, expect="stale", min_numba=(0, 62),
         max_numba=(0, 67), note="cached by the fs-agnostic locator (int stamp), run with the default one (float stamp)"),
    dict(name="locator_unknown", files={"": SIMPLE}, calls=CALL1, change=None,
         run_env={"NUMBA_CACHE_LOCATOR_CLASSES": "NoSuchLocator"}, expect="raises", min_numba=(0, 62),
         note="NUMBA_CACHE_LOCATOR_CLASSES names no class: numba raises when the function is decorated"),
    dict(name="eager_cfunc_damaged", files={"": CFUNC}, calls=["mod.f.ctypes(1)"], change="truncate_index_body",
         expect="raises", note="@cfunc(SIG, cache=True) compiles at import: a damaged index raises when the module is imported"),
    dict(name="stale_dep_pythonpath", files={"": PP_MOD, "lib/c_pp_helper.py": PP_HELPER}, calls=["mod.use(5)"],
         change="edit_pp_helper", run_env={"PYTHONPATH": "{case}/lib"}, build_env={"PYTHONPATH": "{case}/lib"},
         expect="hit", warning="stale-dependency", fresh="mod.use.py_func(5)",
         note="a module found through PYTHONPATH edited after caching: numba reuses the old code"),
]

FC = """from numba import njit


@njit
def inc(x):
    return x + 1


@njit(cache=True)
def apply(g, x):
    return g(x)
"""

DOTTED_OTHER = """# an unrelated module that shares the dotted file's first name part
VALUE = 1
"""

NSP_HELPER = """from numba import njit


@njit
def scale(x):
    return x * 4
"""

NSP_CORE = """from numba import njit

from c_nsp.sub.helper import scale


@njit(cache=True)
def use(x):
    return scale(x)
"""

PYC = """from numba import njit


@njit(cache=True)
def f(x):
    y = 10
    y += x
    return y
"""

# --real (issue 38): the cases real projects hit that kcache-inspect got wrong.  layout "file": the
# module is loaded with importlib.util.spec_from_file_location + exec_module under modname
# (registered in sys.modules when register is set, its directory on sys.path unless on_path is
# False); src_dir: the source lies in that
# subdirectory of the case.
REAL_CASES = [
    dict(name="fc_arg", files={"": FC}, calls=["mod.apply(mod.inc, 1)"], change=None, expect="unmatchable",
         note="an @njit function passed to another: the key holds the dispatcher's address, numba recompiles every run"),
    dict(name="dotted_module", layout="file", files={"c_dotted_module.mod.py": SIMPLE, "c_dotted_module.py": DOTTED_OTHER},
         modname="c_dotted_module.mod", file="c_dotted_module.mod.py", register=True, calls=CALL1, change=None,
         expect="hit", note="my.mod.py beside an unrelated my.py: numba names the module my.mod"),
    dict(name="dynamic_module", layout="file", files={"": SIMPLE}, modname="c_dynamic_module", register=False, on_path=False,
         calls=CALL1, change=None, expect="raises",
         note="loaded by spec_from_file_location + exec_module, never in sys.modules nor importable: "
              "its data names the module <dynamic>, and unpickling it raises"),
    dict(name="moved_source", layout="cachedir", files={"src/c_moved_source.py": SIMPLE}, src_dir="src", calls=CALL1,
         change="move_src", run_env={"NUMBA_CACHE_DIR": "{case}/ncd"}, expect="never-read",
         note="NUMBA_CACHE_DIR set, the source's directory renamed (src/ to elsewhere/): numba looks under another subdirectory"),
    dict(name="nsp", files={"c_nsp/sub/core.py": NSP_CORE, "c_nsp/sub/helper.py": NSP_HELPER}, module="c_nsp.sub.core",
         calls=["mod.use(5)"], change="edit_dep", dep="c_nsp/sub/helper.py", expect="hit", warning="stale-dependency",
         fresh="mod.use.py_func(5)",
         note="a namespace package (no __init__.py): a sibling module the cached function's module imports, edited"),
    dict(name="pyc_timestamp", files={"": PYC}, calls=CALL1, change="pyc_edit", build_env={"PYTHONDONTWRITEBYTECODE": ""},
         expect=by_stamp("hit", "stale"), fresh="mod.f.py_func(1)",
         note="+= edited to -= (size and mtime kept), its timestamp .pyc still valid: Python runs the old bytecode"),
    dict(name="pyc_unchecked_hash", files={"": PYC}, calls=CALL1, change="pyc_edit", pyc="UNCHECKED_HASH",
         expect=by_stamp("hit", "stale"), fresh="mod.f.py_func(1)",
         note="the same edit under an unchecked hash-based .pyc: Python never looks at the source"),
    dict(name="pyc_checked_hash", files={"": PYC}, calls=CALL1, change="pyc_edit", pyc="CHECKED_HASH",
         expect="stale", fresh="mod.f.py_func(1)",
         note="the same edit under a checked hash-based .pyc: Python sees the source's hash differ and compiles it"),
]

# --extra: the kinds of functions and keys kcache-inspect renders (made live by the tests, not kept
# in the corpus: their data files are large)
EXTRA = [
    dict(name="sigs", files={"": SIGS}, calls=["mod.combine(1, 2)", "mod.combine(1.5, 2.5)", "mod.combine(1j, 2j)",
                                               "mod.combine(np.asfortranarray(np.ones((2, 3), dtype=np.float32)), "
                                               "np.asfortranarray(np.ones((2, 3), dtype=np.float32)))",
                                               "mod.combine('ab', 'cd')"], change=None, expect="hit",
         note="one function, five signatures (int, float, complex, 2-d Fortran array, str)"),
    dict(name="two_cpus", files={"": SIMPLE}, calls=CALL1, change=None, build_envs=[{}, {"NUMBA_CPU_NAME": "generic"}],
         expect="hit", note="compiled on the host CPU, then with NUMBA_CPU_NAME=generic: the first is used"),
    dict(name="closure", files={"": CLOSURE}, calls=["mod.make(7)(1)"], change=None, expect="hit",
         note="a closure over a captured value (the key's closure hash is not empty)"),
    dict(name="parallel", files={"": PARALLEL}, calls=["mod.psum(np.arange(100.0))"], change=None, expect="hit",
         note="@njit(parallel=True) with prange"),
    dict(name="vectorize", files={"": VECTORIZE}, calls=["mod.vmul(2.0, 3.0)"], change=None, expect="hit",
         note="@vectorize with two signatures"),
]

# Runs in the numba interpreter: imports each case's module, calls it, records numba's log lines
# (NUMBA_DEBUG_CACHE prints them to stdout), the results and any exception.
DRIVER = r'''
import contextlib, importlib, io, json, linecache, os, sys, types
jobs = json.load(sys.stdin)
out = {}
ipcache = jobs.get("ipython_cache")
if ipcache:  # IPython's locator asks IPython.paths for its cache directory; nothing else of IPython
    ip = types.ModuleType("IPython"); paths = types.ModuleType("IPython.paths")
    paths.get_ipython_cache_dir = lambda: ipcache
    ip.paths = paths
    sys.modules.setdefault("IPython", ip); sys.modules.setdefault("IPython.paths", paths)
import numpy as np
for c in jobs["cases"]:
    buf = io.StringIO()
    rec = {"results": [], "exception": None}
    stage = "import"
    try:
        with contextlib.redirect_stdout(buf):
            if c["layout"] == "notebook":
                src = open(c["cell"]).read()
                fname = "<ipython-input-3-%s>" % c["cellhash"]
                linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
                ns = {"__name__": "__main__"}   # IPython runs cells in __main__
                exec(compile(src, fname, "exec"), ns)
                env = {"ns": ns, "np": np}
            elif c["layout"] == "file":
                import importlib.util
                if c["on_path"]:
                    sys.path.insert(0, c["dir"])
                spec = importlib.util.spec_from_file_location(c["modname"], os.path.join(c["dir"], c["file"]))
                m = importlib.util.module_from_spec(spec)
                if c["register"]:
                    sys.modules[c["modname"]] = m
                spec.loader.exec_module(m)
                env = {"mod": m, "np": np}
            elif c["layout"] == "zip":
                sys.path.insert(0, c["zip"])
                env = {"zmod": importlib.import_module(c["module"]), "np": np}
            else:
                sys.path.insert(0, c["dir"])
                env = {"mod": importlib.import_module(c["module"]), "np": np}
            stage = "call"
            for call in c["calls"]:
                r = eval(call, env)
                rec["results"].append(repr(r.tolist() if hasattr(r, "tolist") else r))
            if c.get("fresh"):
                rec["fresh"] = repr(eval(c["fresh"], env))
    except BaseException as e:
        rec["exception"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        rec["stage"] = stage
    rec["log"] = buf.getvalue().splitlines()
    out[c["name"]] = rec
try:
    from numba.core.registry import cpu_target
    triple, cpu, feat = cpu_target.target_context.codegen().magic_tuple()
except Exception as e:
    triple, cpu, feat = None, None, None
import numba, llvmlite.binding as ll
out["_env"] = {"numba": numba.__version__, "llvm": list(ll.llvm_version_info), "triple": triple, "cpu": cpu,
               "features": feat, "python": "%d.%d" % sys.version_info[:2]}
json.dump(out, open(jobs["result"], "w"))
'''


def expand(env, out, c, extra=None):
    """a case's variables with {case}, {out} and the probed values put in"""
    r = {}
    for k, v in env.items():
        v = v.replace("{case}", case_dir(out, c)).replace("{out}", out)
        for name, val in (extra or {}).items():
            v = v.replace("{%s}" % name, val)
        r[k] = v
    return r


def probe_features(python):
    """the host's feature string as this numba computes it (llvmlite's flatten: sorted by name)"""
    code = ("from numba.core.registry import cpu_target\n"
            "print(cpu_target.target_context.codegen().magic_tuple()[2])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    return subprocess.run([python, "-c", code], check=True, capture_output=True, text=True, env=env).stdout.strip()


def numba_version(python):
    return subprocess.run([python, "-c", "import numba; print(numba.__version__)"], check=True,
                          capture_output=True, text=True).stdout.strip()


def vtuple(v):
    return tuple(int(x) for x in v.split(".")[:2])


def run_driver(python, cases, out, env_extra, tag):
    env = dict(os.environ)
    for k in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_DISABLE_JIT", "NUMBA_DEBUG_CACHE",
              "NUMBA_CACHE_LOCATOR_CLASSES", "PYTHONOPTIMIZE", "PYTHONPATH"):
        env.pop(k, None)
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "NUMBA_DEBUG_CACHE": "1", "XDG_CACHE_HOME": os.path.join(out, "xdg")})
    env.update(env_extra)
    result = os.path.join(out, ".result-%s.json" % tag)
    jobs = {"cases": cases, "result": result, "ipython_cache": os.path.join(out, "ipython")}
    p = subprocess.run([python, "-c", DRIVER], input=json.dumps(jobs), text=True, cwd=out, env=env,
                       capture_output=True)
    if p.returncode != 0 or not os.path.exists(result):
        raise RuntimeError("%s failed (%d): %s" % (tag, p.returncode, p.stderr[-2000:]))
    with open(result) as f:
        r = json.load(f)
    os.unlink(result)
    return r


def cellhash(c):
    """the cell's pseudo file name part: one per case, so their indexes do not collide"""
    return "%012x" % (sum(ord(ch) * 131 ** i for i, ch in enumerate(c["name"])) % (1 << 48))


def moved_dir(out, c):
    return os.path.join(out, "moved", c["name"])


def case_dir(out, c):
    return os.path.join(out, c["name"])


def job(out, c):
    d = case_dir(out, c)
    j = {"name": c["name"], "layout": c.get("layout", "intree"), "calls": c["calls"],
         "dir": os.path.join(d, c["src_dir"]) if c.get("src_dir") else d, "module": c.get("module", "c_" + c["name"])}
    if j["layout"] == "file":
        j.update(modname=c["modname"], file=c.get("file", "c_%s.py" % c["name"]), register=c["register"],
                 on_path=c.get("on_path", True))
    if j["layout"] == "notebook":
        j["cell"] = os.path.join(d, "cell.py")
        j["cellhash"] = cellhash(c)
    if j["layout"] == "zip":
        j["zip"] = os.path.join(d, "lib.zip")
    if c.get("fresh"):
        j["fresh"] = c["fresh"]   # what the source gives now, run as plain Python
    return j


def write_case(out, c):
    d = case_dir(out, c)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    for rel, text in c["files"].items():
        if c.get("layout") == "zip":
            with zipfile.ZipFile(os.path.join(d, "lib.zip"), "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr(rel, text)
            continue
        path = os.path.join(d, rel or "c_%s.py" % c["name"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    if c.get("layout") == "userwide":
        # a file named __pycache__: numba's in-tree locator cannot make its directory (even as root)
        with open(os.path.join(d, "__pycache__"), "w") as f:
            f.write("not a directory: numba caches this source user-wide\n")
    # stamps well clear of "now", with a fraction, like a real edit's
    base = (int(os.stat(d).st_mtime) - 100) * 1000000000 + 123456789
    for root, _, names in os.walk(d):
        for n in names:
            os.utime(os.path.join(root, n), ns=(base, base))
    return base


def indexes_of(out, c):
    d = case_dir(out, c)
    found = []
    for root, _, names in os.walk(out if c.get("layout") in ("notebook", "zip", "userwide") else d):
        for n in names:
            if not n.endswith(".nbi"):
                continue
            p = os.path.join(root, n)
            if c.get("layout") == "notebook" and ("ipython" not in p or cellhash(c) not in n):
                continue
            if c.get("layout") in ("zip", "userwide") and ("xdg" not in p or ("c_%s." % c["name"]) not in n):
                continue
            found.append(p)
    return sorted(found)


def change(out, c, base):
    d = case_dir(out, c)
    kind = c.get("change")
    src = os.path.join(d, "c_%s.py" % c["name"])
    ix = indexes_of(out, c)
    if kind is None:
        return
    if kind == "rm_data2":
        for p in ix:
            os.unlink(p[:-4] + ".2.nbc")
    elif kind == "append":
        with open(src, "a") as f:
            f.write("# edited after caching\n")
        os.utime(src, ns=(base + 1000000000, base + 1000000000))
    elif kind == "touch":
        os.utime(src, ns=(base + 2500000000, base + 2500000000))
    elif kind == "same_size_edit":
        text = open(src).read().replace("x + 1", "x + 2")
        with open(src, "w") as f:
            f.write(text)
        os.utime(src, ns=(base, base))
    elif kind == "whole_seconds":
        s = base // 1000000000 * 1000000000
        os.utime(src, ns=(s, s))
    elif kind == "truncate_index_body":
        for p in ix:
            with open(p, "rb") as f:
                pickle.load(f)       # the version string: its pickle ends here
                end = f.tell()
                f.seek(0)
                data = f.read()
            with open(p, "wb") as f:  # keep it and half of the body
                f.write(data[:end + (len(data) - end) // 2])
    elif kind == "truncate_data1":
        for p in ix:
            q = p[:-4] + ".1.nbc"
            data = open(q, "rb").read()
            with open(q, "wb") as f:
                f.write(data[:len(data) // 2])
    elif kind == "insert_line_above":
        text = open(src).read()
        with open(src, "w") as f:
            f.write("# a line inserted above\n" + text)
    elif kind == "move_tree":
        # the whole tree (source and NUMBA_CACHE_DIR) moves elsewhere, keeping its name
        os.makedirs(os.path.join(out, "moved"), exist_ok=True)
        os.rename(d, moved_dir(out, c))
        c["_moved"] = True
    elif kind == "edit_helper":
        h = os.path.join(d, "c_stale_dep_helper.py")
        text = open(h).read().replace("x * 4", "x * 5")
        with open(h, "w") as f:
            f.write(text)
        t = max(os.stat(p).st_mtime_ns for p in ix) + 5000000000   # edited after the index was written
        os.utime(h, ns=(t, t))
    elif kind == "edit_cell":
        cell = os.path.join(d, "cell.py")
        text = open(cell).read().replace("y + 1", "y + 7")
        with open(cell, "w") as f:
            f.write(text)
    elif kind == "rm_pycache_file":
        os.unlink(os.path.join(d, "__pycache__"))
    elif kind == "sub_for_add":
        text = open(src).read().replace("a + b", "a - b")
        with open(src, "w") as f:
            f.write(text)
        os.utime(src, ns=(base, base))
    elif kind == "empty_index":
        for p in ix:
            open(p, "wb").close()
    elif kind == "garbage_index":
        for p in ix:
            with open(p, "wb") as f:
                f.write(b"hello, not a pickle\n")
    elif kind == "rm_all_data":
        for p in ix:
            for n in os.listdir(os.path.dirname(p)):
                if n.startswith(os.path.basename(p)[:-4] + ".") and n.endswith(".nbc"):
                    os.unlink(os.path.join(os.path.dirname(p), n))
    elif kind == "rewrite_zip":
        z = os.path.join(d, "lib.zip")
        name = list(c["files"])[0]
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 2, 3, 4, 6)), c["files"][name])
        os.utime(z, ns=(base + 3000000000, base + 3000000000))
    elif kind == "edit_pp_helper":
        h = os.path.join(d, "lib", "c_pp_helper.py")
        text = open(h).read().replace("x * 4", "x * 5")
        with open(h, "w") as f:
            f.write(text)
        t = max(os.stat(p).st_mtime_ns for p in ix) + 5000000000
        os.utime(h, ns=(t, t))
    elif kind == "move_src":
        os.rename(os.path.join(d, c["src_dir"]), os.path.join(d, "elsewhere"))
        c["_src_was"] = c["src_dir"]
        c["src_dir"] = "elsewhere"
    elif kind == "edit_dep":
        h = os.path.join(d, c["dep"])
        text = open(h).read().replace("x * 4", "x * 5")
        with open(h, "w") as f:
            f.write(text)
        t = max(os.stat(p).st_mtime_ns for p in ix) + 5000000000   # edited after the index was written
        os.utime(h, ns=(t, t))
    elif kind == "pyc_edit":
        if c.get("pyc"):   # the .pyc made again, hash-based, by the numba's own Python
            subprocess.run([c["_python"], "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], "
                            "invalidation_mode=py_compile.PycInvalidationMode.%s, doraise=True)" % c["pyc"], src], check=True)
        text = open(src).read().replace("y += x", "y -= x")
        with open(src, "w") as f:
            f.write(text)
        os.utime(src, ns=(base, base))   # numba before 0.68 compares st_mtime as a float: put back exactly
    elif kind == "edit_zip":
        z = os.path.join(d, "lib.zip")
        name = list(c["files"])[0]
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(name, c["files"][name].replace("x + 3", "x + 4"))
    else:
        raise ValueError(kind)


def snapshot(out):
    files = {}
    for root, _, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                files[p] = (f.read(), os.stat(p).st_mtime_ns)
    return files


def restore(out, files):
    for root, dirs, names in os.walk(out, topdown=False):
        for n in names:
            p = os.path.join(root, n)
            if p not in files:
                os.unlink(p)
        for n in dirs:
            p = os.path.join(root, n)
            if not os.listdir(p):
                os.rmdir(p)
    for p, (data, ns) in files.items():
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, ns=(ns, ns))


def outcome(rec, index):
    log = rec["log"]
    loaded = sum(1 for l in log if l.startswith("[cache] data loaded from"))
    saved = sum(1 for l in log if l.startswith("[cache] data saved to"))
    ix_loaded = any(l.startswith("[cache] index loaded from") and index in l for l in log)
    ix_saved_here = any(l.startswith("[cache] index saved to") and index in l for l in log)
    ix_saved_else = any(l.startswith("[cache] index saved to") and index not in l for l in log)
    if rec["exception"]:
        what = "raises"
    elif loaded and not saved:
        what = "hit"
    elif loaded and saved:
        what = "partial"
    elif ix_loaded:
        what = "recompile"
    elif ix_saved_else and not ix_saved_here:
        what = "never-read"
    else:
        what = "ignored"
    return {"outcome": what, "data_loaded": loaded, "data_saved": saved, "index_loaded": ix_loaded,
            "index_saved_over": ix_saved_here, "exception": rec["exception"].split(":")[0] if rec["exception"] else None,
            "results": rec["results"], "fresh_result": rec.get("fresh"),
            "raised_at": rec.get("stage") if rec["exception"] else None}


# which kcache-inspect verdicts are consistent with what numba did
COMPATIBLE = {"hit": {"hit"}, "partial": {"partial"}, "recompile": {"stale", "cpu-mismatch", "data-missing", "unmatchable"},
              "ignored": {"version-mismatch"}, "never-read": {"never-read"}, "raises": {"raises"}}


def readme(corpus):
    """CORPUS/README.md: each case, and what each numba version did with it."""
    versions = sorted(d for d in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, d, "cases.json")))
    ms = {}
    for v in versions:
        with open(os.path.join(corpus, v, "cases.json")) as f:
            ms[v] = json.load(f)
    lines = ["# Real numba caches, and what numba did with each", "",
             "Made by tests/numba_cases.py (`numba_cases.py PYTHON DIR --other PYTHON2`; the numba of each",
             "directory, its LLVM and the machine's CPU as that numba names it are in its cases.json).  Each case",
             "is a cache numba wrote, then changed as users change them; numba then ran again in a fresh process",
             "with NUMBA_DEBUG_CACHE=1, and what it did is recorded in cases.json (`numba_did`): hit (every call",
             "loaded its data), partial, recompile (the index was read, nothing used), ignored (not read; the new",
             "index was saved over it), never-read (numba cached elsewhere), raises (the call raised).",
             "tests/test_inspect.sh checks kcache-inspect's verdict (`expect`) on every case against that, and",
             "makes the cases again with the numbas installed to check that numba still does the same.",
             "git keeps no mtimes: each case lists its files' mtimes, which the test puts back first.", ""]
    for v in versions:
        h = ms[v].get("host", {})
        lines.append("- numba %s (LLVM %s): recorded on %s%s." % (
            v, ".".join(str(x) for x in ms[v].get("llvm", [])), h.get("cpu", "?"),
            "" if ms[v].get("other_numba") else ", with no other numba there (no version_mismatch cases)"))
    lines += ["",
             "| case | what was done | " + " | ".join("numba %s" % v for v in versions) + " |",
             "|---|---|" + "---|" * len(versions)]
    names = []
    for v in versions:
        for n in ms[v]["cases"]:
            if n not in names:
                names.append(n)
    for n in names:
        note = next(ms[v]["cases"][n]["note"] for v in versions if n in ms[v]["cases"])
        cells = []
        for v in versions:
            e = ms[v]["cases"].get(n)
            if not e:
                cells.append("-")
                continue
            did = e["numba_did"][0]
            what = did["outcome"] + (" (%s)" % did["exception"] if did["exception"] else "")
            if did.get("fresh_result") and did["results"] and did["results"][0] != did["fresh_result"]:
                what += ", returned %s where the source now gives %s" % (did["results"][0], did["fresh_result"])
            cells.append("%s; kcache-inspect: %s%s" % (what, e["expect"], " + " + e["warning"] if e.get("warning") else ""))
        lines.append("| %s | %s | %s |" % (n, note, " | ".join(cells)))
    lines += ["", "numba 0.56 and 0.60 have no locator for a function imported from a zip archive: caching one raises",
              "(\"cannot cache function ...: no locator available\"); 0.61-0.67 cache it stamped with the archive's",
              "(st_mtime, st_size) (tests/data/numba-env-corpus: zip_old, zip_rewritten). The zip cases here are 0.68's.",
              "The version-mismatch cases hold an index written by the other numba named in cases.json.", ""]
    with open(os.path.join(corpus, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main(argv):
    args = argv[1:]
    if len(args) == 2 and args[0] == "--readme":
        readme(args[1])
        return 0
    other = only = None
    extra = "--extra" in args
    if extra:
        args.remove("--extra")
    env_set = "--env" in args
    if env_set:
        args.remove("--env")
    real_set = "--real" in args
    if real_set:
        args.remove("--real")
    if "--list" in args:
        print(" ".join(c["name"] for c in CASES + EXTRA))
        return 0
    if "--other" in args:
        i = args.index("--other")
        other = args[i + 1]
        del args[i:i + 2]
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    if len(args) != 2:
        sys.stderr.write("usage: numba_cases.py PYTHON OUTDIR [--other PYTHON2] [--only CASE,...]\n")
        return 2
    python, out = args
    if os.sep in python:
        python = os.path.abspath(python)  # keep a venv's symlink: do not resolve it
    if other and os.sep in other:
        other = os.path.abspath(other)
    out = os.path.realpath(out)
    os.makedirs(out, exist_ok=True)
    version = numba_version(python)
    other_version = numba_version(other) if other else None
    stamp = "sha256" if vtuple(version) >= (0, 68) else "mtime-size"
    cases = []
    for c in (ENV_CASES if env_set else REAL_CASES if real_set else CASES) + (EXTRA if extra else []):
        c = dict(c)
        if only and c["name"] not in only:
            continue
        if c.get("other") and not other:
            continue
        if "min_numba" in c and vtuple(version) < c["min_numba"]:
            continue
        if "max_numba" in c and vtuple(version) > c["max_numba"]:
            continue
        c["_python"] = python
        cases.append(c)
    probed = {}
    if any("{host_features_reversed}" in v for c in cases for v in c.get("build_env", {}).values()):
        probed["host_features_reversed"] = ",".join(reversed(probe_features(python).split(",")))
    bases = {c["name"]: write_case(out, c) for c in cases}

    # compile: grouped by the numba and the environment each case needs
    groups = {}
    for c in cases:
        py = other if c.get("other") else python
        for env in c.get("build_envs", [c.get("build_env", {})]):   # several: in this order (sorted below)
            env = expand(env, out, c, probed)
            if c.get("layout") == "cachedir":
                env["NUMBA_CACHE_DIR"] = os.path.join(case_dir(out, c), "ncd")
            key = (py, tuple(sorted(env.items())))
            groups.setdefault(key, []).append(c)
    for n, ((py, env), cs) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1]))):
        run_driver(py, [job(out, c) for c in cs], out, dict(env), "build%d" % n)
    indexes = {}
    for c in cases:
        indexes[c["name"]] = [os.path.relpath(p, out) for p in indexes_of(out, c)]
        change(out, c, bases[c["name"]])

    # numba's next run rewrites what it recompiles: keep the cases as they are now, put them back after
    snap = snapshot(out)

    # what numba does now: one fresh process per environment, this numba
    truth = {}
    groups = {}
    for c in cases:
        env = expand(c.get("run_env", {}), out, c)
        if c.get("layout") == "cachedir":
            d = moved_dir(out, c) if c.get("_moved") else case_dir(out, c)
            env["NUMBA_CACHE_DIR"] = os.path.join(d, "ncd")
        groups.setdefault(tuple(sorted(env.items())), []).append(c)
    env_info = None
    for n, (env, cs) in enumerate(sorted(groups.items())):
        jobs = []  # (NUMBA_CACHE_DIR differs per cachedir case: one process each)
        for c in cs:
            j = job(out, c)
            if c.get("_moved"):
                j["dir"] = moved_dir(out, c)
            jobs.append(j)
        r = run_driver(python, jobs, out, dict(env), "verify%d" % n)
        env_info = r.pop("_env")
        truth.update(r)

    restore(out, snap)

    manifest = {"set": "env" if env_set else "real" if real_set else "cases", "numba": version, "python": env_info["python"], "llvm": env_info["llvm"], "stamp": stamp,
                "host": {"triple": env_info["triple"], "cpu": env_info["cpu"], "features": env_info["features"]},
                "other_numba": other_version, "cases": {}}
    for c in cases:
        name = c["name"]
        d = moved_dir(out, c) if c.get("_moved") else case_dir(out, c)
        ixs = []
        for rel in indexes[name]:
            if c.get("_moved"):
                rel = os.path.join("moved", rel)
            ixs.append(rel)
        rec = truth[name]
        per_index = [outcome(rec, os.path.join(out, rel)) for rel in ixs]
        expect = c["expect"][stamp] if isinstance(c["expect"], dict) else c["expect"]
        entry = {"indexes": ixs, "expect": expect, "numba_did": per_index, "note": c["note"]}
        if c.get("warning"):
            entry["warning"] = c["warning"]
        args = []
        if c.get("numba_version"):
            args += ["--numba-version", version]
        if c.get("layout") == "notebook":
            args += ["--source", os.path.join(os.path.relpath(d, out), "cell.py")]
        if c.get("layout") == "zip":
            args += ["--source", os.path.join(os.path.relpath(d, out), "lib.zip", list(c["files"])[0])]
            # the user-wide cache's subdirectory is named for the archive's absolute path
            entry["rehome"] = {"dir": os.path.dirname(ixs[0]), "archive": os.path.join(os.path.relpath(d, out), "lib.zip")}
        if c.get("layout") in ("userwide", "cachedir") and not c.get("_moved"):
            # a NUMBA_CACHE_DIR or user-wide subdirectory is named for the source directory's path
            entry["rehome"] = {"dir": os.path.dirname(ixs[0]),
                               "archive": os.path.join(os.path.relpath(d, out), c.get("_src_was") or c.get("src_dir") or "")}
        if c.get("run_env"):
            entry["run_env"] = {k: v.replace(out, "{root}") for k, v in expand(c["run_env"], out, c).items()}
        entry["inspect_args"] = args
        bad = [o["outcome"] for o in per_index if expect not in COMPATIBLE[o["outcome"]]]
        if bad:
            entry["inconsistent"] = "numba did %s, the case expects %s" % (bad, expect)
        # mtimes of every file the case holds (git keeps none)
        mt = {}
        roots = [d] + sorted({os.path.join(out, rel.split(os.sep)[0]) for rel in ixs if not rel.startswith(os.path.relpath(d, out))})
        for r0 in roots:
            for root, _, names in os.walk(r0):
                for n in names:
                    p = os.path.join(root, n)
                    mt[os.path.relpath(p, out)] = os.stat(p).st_mtime_ns
        entry["mtimes"] = mt
        manifest["cases"][name] = entry
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    bad = [n for n, e in manifest["cases"].items() if "inconsistent" in e]
    if bad:
        sys.stderr.write("numba_cases: numba did not do what these cases expect: %s\n" % ", ".join(
            "%s (%s)" % (n, manifest["cases"][n]["inconsistent"]) for n in bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
