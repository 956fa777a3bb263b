from numba import njit


@njit
def inc(x):
    return x + 1


@njit(cache=True)
def apply(g, x):
    return g(x)
