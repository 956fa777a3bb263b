from numba import njit

from c_pp_helper import scale


@njit(cache=True)
def use(x):
    return scale(x)
