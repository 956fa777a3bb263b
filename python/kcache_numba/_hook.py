"""Run by kcache_numba.pth when KCACHE_NUMBA=1: installs kcache_numba the moment numba's caching
module is imported, so that nothing is imported (numba included) until the program imports numba
itself. A failure here must never stop the interpreter: the hook then does nothing."""
import importlib.util
import sys


class _CachingFinder:
    """A meta path finder that answers only for numba.core.caching, wrapping numba's own loader."""

    def find_spec(self, name, path=None, target=None):
        if name != "numba.core.caching":
            return None
        sys.meta_path.remove(self)  # once: the real finder answers from now on
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            try:
                import kcache_numba
                kcache_numba.install(module)
            except Exception as e:  # never numba's failure: its own cache stays
                sys.stderr.write("kcache_numba: not installed (%s: %s); numba's own cache is used\n"
                                 % (type(e).__name__, e))

        spec.loader.exec_module = exec_module
        return spec


if "numba.core.caching" in sys.modules:
    import kcache_numba
    kcache_numba.install()
else:
    sys.meta_path.insert(0, _CachingFinder())
