"""kcache-numba: numba's cache=True functions kept in kcache's store (README.md, "numba").

The C part is kcache.h from the checkout this directory sits in, compiled by pip into a plain
shared library (no Python C API in it) that kcache_numba loads with ctypes: see the README for why.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)  # kcache.h and its companions
if not os.path.exists(os.path.join(TOP, "kcache.h")):
    raise SystemExit("kcache-numba: kcache.h not found in %s; install from the kcache checkout "
                     "(pip install ./python)" % TOP)


def hiredis_present():
    """The Redis companion goes in when hiredis's header is there (KCACHE_REMOTE then works)."""
    try:
        out = subprocess.run(["pkg-config", "--exists", "hiredis"], check=False)
        if out.returncode == 0:
            return True
    except OSError:
        pass
    return os.path.exists("/usr/include/hiredis/hiredis.h")


macros, libs = [], ["pthread"]
if hiredis_present() and os.environ.get("KCACHE_NUMBA_NO_REDIS") != "1":
    macros.append(("KCACHE_NUMBA_REDIS", "1"))
    libs.append("hiredis")


class BuildPyWithHook(build_py):
    """Puts kcache_numba.pth beside the package in site-packages: the KCACHE_NUMBA=1 hook."""

    def run(self):
        super().run()
        self.mkpath(self.build_lib)
        shutil.copy(os.path.join(HERE, "kcache_numba.pth"), os.path.join(self.build_lib, "kcache_numba.pth"))


setup(
    name="kcache-numba",
    version="0.6.1",
    description="numba's cache=True functions in kcache's store: single flight, dependencies, eviction",
    license="MIT",
    packages=["kcache_numba"],
    python_requires=">=3.8",
    ext_modules=[Extension("kcache_numba._kcache", sources=["kcache_numba/_kcache.c"],
                           include_dirs=[TOP], define_macros=macros, libraries=libs,
                           extra_compile_args=["-std=c99", "-O2"],
                           depends=[os.path.join(TOP, f) for f in ("kcache.h", "kcache_redis.h")])],
    cmdclass={"build_py": BuildPyWithHook},
    zip_safe=False,
)
