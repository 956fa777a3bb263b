# the project module of tests/test_numba.sh: cached functions, one of them calling a function of
# another project file (helper.py), one that fails to compile
import numpy as np
from numba import njit

from helper import g

NAMES = ("f", "a", "b", "c", "d")


@njit(cache=True)
def f(x):
    return g(x) + 1


@njit(cache=True)
def a(n):
    s = 0.0
    for i in range(n):
        s += np.sqrt(i) * np.sin(i)
    return round(s, 6)


@njit(cache=True)
def b(n):
    m = np.arange(n * n, dtype=np.float64).reshape(n, n)
    return float(np.cumsum(m.T.copy()).sum())


@njit(cache=True)
def c(n):
    d = {}
    for i in range(n):
        d[i] = i * i
    t = 0
    for v in d.values():
        t += v
    return t


@njit(cache=True)
def d(n):
    return len(sorted([str(i) for i in range(n)]))


@njit(cache=True)
def bad(n):
    return n + "x"  # a typing error, every time
