from numba import njit


@njit(cache=True)
def f(x):
    y = x * 2
    return y + 1

print("a cell can hold more")
