from numba import cfunc


@cfunc("int64(int64)", cache=True)
def f(x):
    return x + 1
