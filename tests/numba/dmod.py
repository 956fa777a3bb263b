# a project module whose cached function calls an installed distribution's (tests/test_numba.sh
# makes kn_dist_demo in a site-packages directory of its own, then releases 1.1 with another body)
from numba import njit
import kn_dist_demo


@njit(cache=True)
def k(x):
    return kn_dist_demo.h(x)
