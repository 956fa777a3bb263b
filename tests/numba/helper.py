# the callee tests/test_numba.sh edits (x * 2 -> x * 3): f(10) is 21, then 31
from numba import njit


@njit
def g(x):
    return x * 2
