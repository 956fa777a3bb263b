from numba import njit


@njit(cache=True)
def f(x):
    """doc

  string"""
    y = (x +
         1)
    return y  # c

print(1)
