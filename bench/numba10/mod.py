"""bench/numba_herd.sh's workload (issue 36's): a module of 10 cached functions of about 0.55 s of
compile each with numba 0.68.1 on the 2-core machine (0.35 s with Debian's 0.56.4), each
self-contained (no uncached helper compiled beside it), each result deterministic so that a herd's
processes can be compared."""
import numpy as np
from numba import njit

NAMES = tuple("f%d" % i for i in range(10))

@njit(cache=True)
def f0(n):
    s = 0.0
    for i in range(n):
        s += np.sqrt(i) * np.sin(i)
    t = [(i, float(i) / 3.0) for i in range(n)]
    for a, b in t:
        s += a * b
    r = np.array([b for a, b in t])
    return round(s + r.std(), 6)

@njit(cache=True)
def f1(n):
    m = np.arange(n * n, dtype=np.float64).reshape(n, n)
    return float(np.cumsum(m).sum() + m[1].sum())

@njit(cache=True)
def f2(n):
    d = {}
    for i in range(n):
        d[i] = i * i
    t = 0
    for v in d.values():
        t += v
    return t

@njit(cache=True)
def f3(n):
    s = set()
    for i in range(n * 5):
        s.add((i * 31) % 17)
    a = np.zeros(len(s))
    for i, v in enumerate(s):
        a[i] = v * 0.5
    return float(a.sum() + a.max())

@njit(cache=True)
def f4(n):
    a = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            a[i, j] = (i * 3 + j * 5) % 11 - 5.0
    return float(a.sum() + np.trace(a) + np.abs(a).max())

@njit(cache=True)
def f5(n):
    x = np.linspace(0.0, 1.0, n * 10)
    y = np.exp(-x) + x * x
    z = y[y > 0.5]
    return round(float(y.mean() + y.max() + z.sum()), 6)

@njit(cache=True)
def f6(n):
    a = np.arange(n * 4, dtype=np.int64)
    b = a.copy()
    for i in range(b.shape[0]):
        if a[i] % 3 == 0:
            b[i] = a[i] * 2
    return int(b.sum() + b.min() + b[n])

@njit(cache=True)
def f7(n):
    q = np.empty(n, dtype=np.complex128)
    for i in range(n):
        q[i] = complex(i, n - i) ** 2
    l = [abs(v) for v in q]
    return round(float(np.abs(q).sum() + q.real.sum()) + max(l), 6)

@njit(cache=True)
def f8(n):
    fib = np.zeros(n * 3, dtype=np.int64)
    fib[1] = 1
    for i in range(2, n * 3):
        fib[i] = (fib[i - 1] + fib[i - 2]) % 1000007
    d = {0: 0}
    for v in fib:
        k = v % 7
        if k in d:
            d[k] += 1
        else:
            d[k] = 1
    return int(fib.sum() + fib.max() + d[0])

@njit(cache=True)
def f9(n):
    p = np.ones(n) * 0.5
    for k in range(n):
        p = np.tanh(p + k * 0.01)
    h, m = 0, n * 12345
    while m > 0:
        h = h * 7 + m % 10
        m //= 10
    e = [(k, p[k]) for k in range(n)]
    return round(float(p.sum()) + h + e[-1][1], 6)
