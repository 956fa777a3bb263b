import numba, numpy as np
@numba.njit(cache=True)
def add(a, b): return a + b
@numba.njit(cache=True, fastmath=True)
def dot(x, y):
    s = 0.0
    for i in range(x.shape[0]): s += x[i] * y[i]
    return s
add(1, 2); add(1.0, 2.0); dot(np.ones(4), np.ones(4)); dot(np.ones(4, np.float32), np.ones(4, np.float32))
