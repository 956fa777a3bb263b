from numba import njit


@njit(cache=True)
def f(x):
    y = 10
    y -= x
    return y
