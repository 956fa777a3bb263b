# tests/test_numba.sh: every cache=True kind (vectorize, guvectorize with its wrapper library,
# cfunc, parallel=True) goes through kcache: the second process loads all 5 from the store
import numpy as np
import kcache_numba
from numba import njit, vectorize, guvectorize, cfunc, prange

@vectorize(["float64(float64)"], cache=True)
def v(x):
    return x * 2.0

@guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", cache=True)
def gu(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1.0

@cfunc("float64(float64)", cache=True)
def cf(x):
    return x * 3.0

@njit(cache=True, parallel=True)
def par(n):
    s = 0.0
    for i in prange(n):
        s += i
    return s

a = np.arange(4.0)
results = (v(a).sum(), gu(a).sum(), cf.ctypes(2.0), par(10))
st = kcache_numba.stats()
print(*results, "saves=%d store=%d fallbacks=%d" % (st["saves"], st["store"], st["fallbacks"]))
