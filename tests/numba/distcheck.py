"""tests/test_numba.sh's process for an installed distribution's new release: imports dmod (from
the current directory), calls dmod.k(10) and prints "compiles=N k=V" (numba's numba:compile
events for k)."""
import sys

sys.path.insert(0, ".")
from numba.core import event  # noqa: E402

compiles = [0]


class Count(event.Listener):
    def on_start(self, ev):
        disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        if getattr(getattr(disp, "py_func", None), "__name__", "") == "k":
            compiles[0] += 1

    def on_end(self, ev):
        pass


event.register("numba:compile", Count())
import dmod  # noqa: E402

result = dmod.k(10)  # (first: the count is read after the call)
print("compiles=%d k=%s" % (compiles[0], result))
