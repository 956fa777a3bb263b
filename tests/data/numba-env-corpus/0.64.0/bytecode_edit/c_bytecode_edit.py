from numba import njit


@njit(cache=True)
def f(a, b):
    return a - b
