from numba import njit

from c_stale_dep_helper import scale


@njit(cache=True)
def use(x):
    return scale(x)
