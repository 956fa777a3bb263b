# tests/test_numba.sh: a compile that can be made slow (KN_SLOW=FILE: the typing of k writes FILE
# and sleeps), so that the test kills its compiler while it holds the claim. Prints
# "compiles=N k=RESULT" (numba:compile events of k).
import os
import sys
import time

from numba import njit
from numba.core import event
from numba.extending import overload

compiles = [0]


class Count(event.Listener):
    def on_start(self, ev):
        if getattr(getattr(ev.data.get("dispatcher"), "py_func", None), "__name__", "") == "k":
            compiles[0] += 1

    def on_end(self, ev):
        pass


event.register("numba:compile", Count())


def pause():
    pass


@overload(pause)
def _pause_typing():
    mark = os.environ.get("KN_SLOW")
    if mark:
        open(mark, "w").close()
        time.sleep(120)  # killed here, the claim held
    return lambda: None


@njit(cache=True)
def k(x):
    pause()
    return x * 7


r = k(6)
print("compiles=%d k=%s" % (compiles[0], r))
sys.stdout.flush()
