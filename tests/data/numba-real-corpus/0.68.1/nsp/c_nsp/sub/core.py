from numba import njit

from c_nsp.sub.helper import scale


@njit(cache=True)
def use(x):
    return scale(x)
