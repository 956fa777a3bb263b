"""kcache_numba: numba's cache=True functions kept in kcache's store (the kcache README's "numba").

Activation: KCACHE_NUMBA=1 in the environment (the kcache_numba.pth hook), or install() before
functions are decorated. Every numba Cache (njit, vectorize, guvectorize, cfunc, parallel=True) then
loads and saves through kcache: one compile per key across threads, processes and machines
(kcache_get_or_claim), the source file and the project files its module imports as dependencies.
Any failure of kcache falls back to numba's own file cache for that lookup.
"""
import atexit
import ctypes
import glob
import os
import pickle
import sys
import sysconfig
import threading

__all__ = ["install", "installed", "opt_out", "stats", "why_not"]

_KCACHE_OK = 0  # kcache_status values the shim hands back (kcache.h's X-list order)
_FROM = ("memory", "store", "layer", "remote", "built_here", "built_elsewhere")
_MAX_DEPS = 256  # project files per function: past that, the deepest imports are not tracked


class _State:
    """The one kcache of this process and what install() replaced; None until installed."""

    def __init__(self, lib, kc, caching):
        self.lib, self.kc, self.caching = lib, kc, caching
        self.orig_load = caching.Cache._load_overload
        self.orig_save = caching.Cache._save_overload
        self.local = threading.local()  # .pending: {(id(cache), index key): request}
        self.lock = threading.Lock()
        self.counts = {name: 0 for name in _FROM + ("fallbacks", "saves", "drops")}
        self.deps_memo = {}  # module name -> the project files it reaches (per process)


_state = None
_orig = (None, None)  # numba's own methods, for calls after _close (at exit)
_why_not = "install() not called"


def why_not():
    """Why kcache_numba is not in use (after install() returned False), else ""."""
    return "" if _state else _why_not


def installed():
    return _state is not None


def stats():
    """Counts of this process: lookups by origin, fallbacks to numba's cache, saves, drops; {}
    when kcache_numba is not in use."""
    if not _state:
        return {}
    with _state.lock:
        return dict(_state.counts)


def opt_out(py_func):
    """Decorator, under numba's: this function keeps numba's own cache (@njit(cache=True) above
    @kcache_numba.opt_out)."""
    py_func.__kcache_numba__ = False
    return py_func


def _load_lib():
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_kcache*.so")) + glob.glob(os.path.join(here, "_kcache*.pyd")))
    if not found:
        raise OSError("the C part (_kcache) is not built: pip install ./python")
    lib = ctypes.CDLL(found[0])
    vp, sz, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
    lib.kn_open.restype, lib.kn_open.argtypes = vp, [cp, sz]
    lib.kn_close.restype, lib.kn_close.argtypes = None, [vp]
    lib.kn_req_new.restype, lib.kn_req_new.argtypes = vp, [cp]
    lib.kn_req_str.restype, lib.kn_req_str.argtypes = ctypes.c_int, [vp, cp, cp, sz]
    lib.kn_req_file.restype, lib.kn_req_file.argtypes = ctypes.c_int, [vp, cp, cp]
    lib.kn_get_or_claim.restype = ctypes.c_int
    lib.kn_get_or_claim.argtypes = [vp, vp, ctypes.POINTER(vp), ctypes.POINTER(sz), ctypes.POINTER(ctypes.c_int)]
    lib.kn_release.restype, lib.kn_release.argtypes = None, [vp, vp]
    lib.kn_put.restype, lib.kn_put.argtypes = ctypes.c_int, [vp, vp, cp, sz]
    lib.kn_drop.restype, lib.kn_drop.argtypes = None, [vp, vp]
    lib.kn_req_free.restype, lib.kn_req_free.argtypes = None, [vp, vp]
    lib.kn_claimed_status.restype, lib.kn_claimed_status.argtypes = ctypes.c_int, []
    return lib


def install(caching=None):
    """Routes every numba cache=True function through kcache. Returns True when kcache is in use;
    False (why_not() says why) when numba's own cache stays: KCACHE_ENABLE=0, no usable store and
    no remote, the C part missing. Call it before functions are decorated; calling again is
    harmless."""
    global _state, _why_not, _orig
    if _state is not None:
        return True
    try:
        lib = _load_lib()
        why = ctypes.create_string_buffer(512)
        kc = lib.kn_open(why, len(why))
        if not kc:
            _why_not = why.value.decode("utf-8", "replace") or "kcache keeps nothing here"
            return False
        if caching is None:
            import numba.core.caching as caching
        from numba.core import event
        from numba.core.compiler_lock import global_compiler_lock
    except Exception as e:
        _why_not = "%s: %s" % (type(e).__name__, e)
        return False
    st = _State(lib, kc, caching)
    st.claimed = lib.kn_claimed_status()
    st.compiler_lock = global_compiler_lock

    class _DropAtUnlock(event.Listener):
        """A claim that was never saved (a compile error, a literally retry, an uncachable result)
        is dropped when the thread leaves numba's compiler lock: the waiters build at once."""

        def on_start(self, ev):
            pass

        def on_end(self, ev):
            if not global_compiler_lock.is_locked():
                _drop_pending(st)

    event.register("numba:compiler_lock", _DropAtUnlock())
    caching.Cache._load_overload = _load_overload
    caching.Cache._save_overload = _save_overload
    _state = st
    _orig = (st.orig_load, st.orig_save)
    atexit.register(_close)
    return True


def _close():
    global _state
    st, _state = _state, None
    if st is not None:
        _drop_pending(st)
        st.lib.kn_close(st.kc)


def _pending(st):
    p = getattr(st.local, "pending", None)
    if p is None:
        p = st.local.pending = {}
    return p


def _drop_pending(st):
    p = _pending(st)
    while p:
        _, req = p.popitem()
        st.lib.kn_req_free(st.kc, req)  # drops the claim it holds
        with st.lock:
            st.counts["drops"] += 1


def _count(st, name):
    with st.lock:
        st.counts[name] += 1


# ---- what goes into the key ----------------------------------------------------------------------

def _excluded_roots():
    roots = set()
    for scheme_vars in ({"base": sys.prefix, "platbase": sys.prefix},
                        {"base": sys.base_prefix, "platbase": sys.base_prefix}):
        for name in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                roots.add(os.path.realpath(sysconfig.get_path(name, vars=scheme_vars)))
            except (KeyError, ValueError):
                pass
    return tuple(r + os.sep for r in roots if r)


_ROOTS = None


def _is_project_file(path):
    """A project's own source: not the standard library (it counts by Python's version in the
    key), not an installed distribution (it counts by its version: _dists_of)."""
    global _ROOTS
    if not path or not path.endswith(".py"):
        return False
    real = os.path.realpath(path)
    if _installed_in(real):
        return False
    if _ROOTS is None:
        _ROOTS = _excluded_roots()
    return not real.startswith(_ROOTS) and os.path.isfile(real)


_DISTS = {}  # top-level package -> ((distribution, version), ...), per process
_DIST_MAP = None  # importlib.metadata.packages_distributions(), read only when needed


def _installed_in(path):
    real = os.path.realpath(path) if path else ""
    return os.sep + "site-packages" + os.sep in real or os.sep + "dist-packages" + os.sep in real


def _dists_of(top):
    """The installed distributions (name, version) that provide the top-level package top: an
    installed module counts by its distribution's version (a new release of a package whose
    functions a cached function calls recompiles it; numba's own cache misses that too). The
    distribution named as the package is looked up alone (about 1 ms); only a package whose
    distribution has another name costs the scan of every installed one (tens of ms, once)."""
    global _DIST_MAP
    found = _DISTS.get(top)
    if found is not None:
        return found
    try:
        from importlib import metadata
        try:
            found = ((metadata.distribution(top).metadata["Name"] or top, metadata.version(top)),)
        except metadata.PackageNotFoundError:
            if _DIST_MAP is None:
                _DIST_MAP = metadata.packages_distributions()
            found = []
            for name in _DIST_MAP.get(top, ()):
                try:
                    found.append((name, metadata.version(name)))
                except Exception:  # a broken distribution: its name alone
                    found.append((name, "?"))
            found = tuple(found)
    except Exception:  # no importlib.metadata: numba's and Python's versions only
        found = ()
    _DISTS[top] = found
    return found


def _module_files(st, modname):
    """The project files a module reaches through its globals (modules, and functions, classes,
    dispatchers of other modules), recursively, and the installed distributions it reaches (by
    name and version); computed once per process."""
    memo = st.deps_memo.get(modname)
    if memo is not None:
        return memo
    files, dists, seen, queue = set(), set(), {modname}, [modname]
    while queue and len(files) < _MAX_DEPS:
        mod = sys.modules.get(queue.pop())
        for value in list(vars(mod).values()) if mod is not None else ():
            if isinstance(value, type(sys)):
                other = value.__name__
            else:
                other = getattr(getattr(value, "py_func", value), "__module__", None)
            if not isinstance(other, str) or other in seen:
                continue
            seen.add(other)
            path = getattr(sys.modules.get(other), "__file__", None)
            if _is_project_file(path):
                files.add(os.path.realpath(path))
                queue.append(other)
            elif _installed_in(path):
                dists.update(_dists_of(other.partition(".")[0]))
    result = (tuple(sorted(files))[:_MAX_DEPS], tuple(sorted(dists))[:_MAX_DEPS])
    st.deps_memo[modname] = result
    return result


def _request(st, cache, key):
    """A kcache request for numba's index key of this cache: the index key's parts as named
    fields (so kcache-inspect explains a miss by them), the kind of cache and its filename base
    (a gufunc kernel and its wrapper share an index key), versions, and the dependencies."""
    import numba
    base = cache._impl.filename_base
    unit = ("numba:" + base).encode("utf-8", "surrogateescape")[:250]
    req = st.lib.kn_req_new(unit)
    if not req:
        return None
    sig, magic, code = key
    fields = [("numba.signature", repr(sig)), ("numba.filename_base", base),
              ("numba.kind", "%s/%s" % (type(cache).__qualname__, type(cache._impl).__qualname__)),
              ("numba.kind_module", type(cache).__module__),
              ("numba.version", numba.__version__), ("python.version", sys.version)]
    # the bytecode's and the closure's sha256 (hex: 64 bytes, which kcache's record keeps whole, so
    # kcache-inspect shows which of them changed); another shape of numba's is kept as one field
    if isinstance(code, tuple) and len(code) == 2 and all(isinstance(c, str) for c in code):
        fields += [("numba.bytecode_sha256", code[0]), ("numba.closure_sha256", code[1])]
    else:
        fields.append(("numba.code", repr(code)))
    if isinstance(magic, tuple) and len(magic) == 3:
        fields += [("numba.target", str(magic[0])), ("numba.cpu_name", str(magic[1])),
                   ("numba.cpu_features", str(magic[2]))]
    else:
        fields.append(("numba.magic", repr(magic)))
    for name, value in fields:
        raw = value.encode("utf-8", "surrogateescape")
        st.lib.kn_req_str(req, name.encode(), raw, len(raw))
    py_func = cache._py_func
    source = os.path.realpath(py_func.__code__.co_filename)
    st.lib.kn_req_file(req, b"dep.source", source.encode("utf-8", "surrogateescape"))
    n = 0
    files, dists = _module_files(st, getattr(py_func, "__module__", None) or "__main__")
    for path in files:
        if path != source:
            n += 1
            st.lib.kn_req_file(req, b"dep.%d" % n, path.encode("utf-8", "surrogateescape"))
    for name, version in dists:
        raw = version.encode("utf-8", "surrogateescape")
        st.lib.kn_req_str(req, ("dist." + name).encode("utf-8", "surrogateescape")[:200], raw, len(raw))
    return req


def _wanted(cache):
    return getattr(cache._py_func, "__kcache_numba__", True) is not False


# ---- the two methods replaced on numba.core.caching.Cache ----------------------------------------

def _load_overload(self, sig, target_context):
    st = _state
    if st is None or not _wanted(self):
        return (st.orig_load if st else _orig[0])(self, sig, target_context)
    if not self._enabled:
        return None
    try:
        key = self._index_key(sig, target_context.codegen())
        req = _request(st, self, key)
    except Exception:
        req = None
    if req is None:
        _count(st, "fallbacks")
        return st.orig_load(self, sig, target_context)
    data, size, origin = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_int()
    status = st.lib.kn_get_or_claim(st.kc, req, ctypes.byref(data), ctypes.byref(size), ctypes.byref(origin))
    if status == st.claimed:
        _pending(st)[(id(self), key)] = req  # numba compiles now, then saves (or the unlock drops it)
        return None
    if status != _KCACHE_OK:
        st.lib.kn_req_free(st.kc, req)
        _count(st, "fallbacks")
        return st.orig_load(self, sig, target_context)
    try:
        payload = ctypes.string_at(data, size.value)
    finally:
        st.lib.kn_release(st.kc, data)
    try:
        result = self._impl.rebuild(target_context, pickle.loads(payload))
    except Exception:
        # an entry numba cannot rebuild (foreign, damaged) is a miss: compile and replace it
        _pending(st)[(id(self), key)] = req
        return None
    st.lib.kn_req_free(st.kc, req)
    _count(st, _FROM[origin.value] if 0 <= origin.value < len(_FROM) else "memory")
    return result


def _save_overload(self, sig, data):
    st = _state
    if st is None or not _wanted(self):
        return (st.orig_save if st else _orig[1])(self, sig, data)
    if not self._enabled:
        return
    key = self._index_key(sig, data.codegen)
    req = _pending(st).pop((id(self), key), None)
    try:
        if not self._impl.check_cachable(data):
            return
        if req is None:  # no lookup of ours before this save: kcache was not used for it
            _count(st, "fallbacks")
            return st.orig_save(self, sig, data)
        try:
            raw = self._cache_file._dump(self._impl.reduce(data))
        except Exception:  # what numba cannot pickle it would not have cached either
            return
        if st.lib.kn_put(st.kc, req, raw, len(raw)) == _KCACHE_OK:
            _count(st, "saves")
    finally:
        if req is not None:
            st.lib.kn_req_free(st.kc, req)  # drops the claim when nothing was put

