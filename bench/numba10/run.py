"""bench/numba_herd.sh's process: imports `mod` from the current directory, calls each of its NAMES
with 10 and prints one line: compiles=N (numba's numba:compile events for mod's functions: numba's
own count of compiles), import=S (seconds to import numba and mod), calls=S (seconds in the first
calls: loads or compiles), the results, and whether kcache_numba was in use."""
import sys
import time

t0 = time.perf_counter()
sys.path.insert(0, ".")
from numba.core import event  # noqa: E402

compiles = [0]


class Count(event.Listener):
    def on_start(self, ev):
        disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        if getattr(getattr(disp, "py_func", None), "__module__", "") == "mod":
            compiles[0] += 1

    def on_end(self, ev):
        pass


event.register("numba:compile", Count())
import mod  # noqa: E402

t1 = time.perf_counter()
results = ["%s=%s" % (n, getattr(mod, n)(10)) for n in mod.NAMES]
t2 = time.perf_counter()
kn = sys.modules.get("kcache_numba")
state = "kcache" if kn is not None and kn.installed() else "numba"
print("compiles=%d import=%.3f calls=%.3f results=%s state=%s" % (
    compiles[0], t1 - t0, t2 - t1, ",".join(results), state))
