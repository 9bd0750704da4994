"""Build policy for zarrcy's Cython kernels (CONVENTIONS.md rule 7).

Every ``zarrcy/_kernels/*.pyx`` becomes one extension module.  Compiler directives are
set here, not in file headers: bounds/wraparound/initialized checks are off unless
``ZARRCY_CYTHON_DEBUG=1`` is set in the environment (CI builds both ways).
"""

import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class parallel_build_ext(build_ext):
    """Compile the kernel modules in parallel (one per core unless ``--parallel`` / ``-j``
    says otherwise): ``_cast`` alone takes minutes, the others then build beside it."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = int(os.environ.get("ZARRCY_BUILD_JOBS", "0") or 0) or (os.cpu_count() or 1)

DEBUG = os.environ.get("ZARRCY_CYTHON_DEBUG", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": True,
}

compile_args = ["-O3"] if not DEBUG else ["-O0", "-g"]

extensions = [
    Extension(
        "zarrcy._kernels." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"), ("ZARRCY_DEBUG", "1" if DEBUG else "0")],
        extra_compile_args=compile_args,
    )
    for path in sorted(glob.glob(os.path.join("zarrcy", "_kernels", "*.pyx")))
    # developer convenience: ZARRCY_ONLY=_cast,_grid rebuilds just those modules in place
    if not os.environ.get("ZARRCY_ONLY")
    or os.path.splitext(os.path.basename(path))[0] in os.environ["ZARRCY_ONLY"].split(",")
]

setup(
    cmdclass={"build_ext": parallel_build_ext},
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        annotate=os.environ.get("ZARRCY_CYTHON_ANNOTATE", "") == "1",
        # directives are not in the .pyx files, so a debug build must regenerate the C
        force=DEBUG,
        nthreads=int(os.environ.get("ZARRCY_BUILD_JOBS", "0") or 0) or (os.cpu_count() or 1),
    ),
)
