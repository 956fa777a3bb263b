import numpy as np
from numba import guvectorize


@guvectorize(["void(float64[:], float64[:])"], "(n)->()", cache=True)
def gsum(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s
