"""tests/test_numba.sh's process: imports the project module `mod` (from the current directory),
calls its functions and prints one line: the numba:compile events per function (numba's own count
of compiles, fired by Dispatcher.compile), the results, and kcache_numba's view.
argv: the names of the functions to call, each with the argument 10 (default: all of mod.NAMES)."""
import sys

sys.path.insert(0, ".")
from numba.core import event  # noqa: E402

compiles = {}


class Count(event.Listener):
    def on_start(self, ev):
        disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        name = getattr(getattr(disp, "py_func", None), "__name__", "?")
        compiles[name] = compiles.get(name, 0) + 1

    def on_end(self, ev):
        pass


event.register("numba:compile", Count())
import mod  # noqa: E402

names = sys.argv[1:] or list(mod.NAMES)
results = []
for n in names:
    try:
        results.append("%s=%s" % (n, getattr(mod, n)(10)))
    except Exception as e:  # numba's own error, as numba raises it
        results.append("%s=%s" % (n, type(e).__name__))
try:
    import kcache_numba
    state = "kcache" if kcache_numba.installed() else "numba(%s)" % kcache_numba.why_not()
except ImportError:
    state = "none"
print("compiles=%d %s results=%s state=%s" % (
    sum(compiles[n] for n in compiles if n in names),
    ",".join("%s:%d" % kv for kv in sorted(compiles.items())), " ".join(results), state))
sys.stdout.flush()
if len(sys.argv) > 1 and sys.argv[1] == "bad":
    import os
    import time
    time.sleep(float(os.environ.get("KN_TEST_HOLD", "0")))  # alive: a claim not dropped would stay
