from numba import njit


@njit(cache=True)
def pick(a, b):
    return a
