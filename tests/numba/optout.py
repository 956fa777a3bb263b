# tests/test_numba.sh: a function that opted out keeps numba's own cache (its .nbi appears)
import kcache_numba
from numba import njit


@njit(cache=True)
@kcache_numba.opt_out
def h(x):
    return x + 1


print(h(1), kcache_numba.installed())
