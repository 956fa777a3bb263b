from numba import njit


@njit(cache=True)
def f(x):
    assert x > 0
    return x + 1
