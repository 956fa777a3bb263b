from numba import njit


@njit(cache=True)
def f(x):
    return x + 1
