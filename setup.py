"""Build policy for zarrcy's Cython kernels (CONVENTIONS.md rule 7).

Every ``zarrcy/_kernels/*.pyx`` becomes one extension module.  Compiler directives are
set here, not in file headers: bounds/wraparound/initialized checks are off unless
``ZARRCY_CYTHON_DEBUG=1`` is set in the environment (CI builds both ways).

Rebuilds are content-based.  ``pip install`` builds in an isolated environment with a
freshly unpacked Cython, whose ``libc/*.pxd`` files are then newer than our generated C;
Cython's timestamp check would regenerate every ``.c`` file and setuptools would then
recompile everything (minutes) although nothing changed.  So a ``.c`` file is regenerated
only when the hash of what it is made from (the ``.pyx``, the ``.pxd`` files of ours it
cimports, the plain C of ``_kernels/c`` it includes or compiles, the Cython version, the
directives) differs from the one recorded under ``build/cython/`` when it was
generated; an unchanged ``.c`` keeps its modification time, so ``build_ext`` skips the
compile when the built module is newer.  A second ``pip install .`` (e.g. with the test
extra) therefore compiles nothing.

Release builds use ``-g0`` (Python's default ``CFLAGS`` carry ``-g``; debug information
for the large generated cast modules cost a third of their compile time) and ``-O3``,
except the cast block loops (``_cast_f2i``, ``_cast_fast``, ``_cast_scale_offset``: most of
the build): ``-O2 -ftree-vectorize -fvect-cost-model=dynamic`` keeps ``-O3``'s loop
vectoriser, which the float -> int fast paths need (plain ``-O2`` made them 5-15x slower),
without ``-O3``'s other passes — measured on the single ``_cast`` module these came from:
38 s of compile CPU instead of 52 s (74 s with ``-g``), kernels as fast (gcc 12, the
``bench cast`` rows: casts, scalar_map, fused scale_offset + cast, classify).
"""

import glob
import hashlib
import os
import re

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class parallel_build_ext(build_ext):
    """Compile the kernel modules in parallel (one per core unless ``--parallel`` / ``-j``
    says otherwise): ``_cast_f2i`` takes the longest, the others build beside it."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = int(os.environ.get("ZARRCY_BUILD_JOBS", "0") or 0) or (os.cpu_count() or 1)

    def build_extensions(self):
        # the longest compile first, so the others fill the remaining cores beside it
        self.extensions.sort(key=lambda e: -max(os.path.getsize(s) for s in e.sources))
        super().build_extensions()


DEBUG = os.environ.get("ZARRCY_CYTHON_DEBUG", "") not in ("", "0")
ANNOTATE = os.environ.get("ZARRCY_CYTHON_ANNOTATE", "") == "1"
JOBS = int(os.environ.get("ZARRCY_BUILD_JOBS", "0") or 0) or (os.cpu_count() or 1)
STAMPS = os.path.join("build", "cython")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": True,
}

compile_args = ["-O3", "-g0"] if not DEBUG else ["-O0", "-g"]
# per module (see the module docstring); clang accepts these gcc flags too (it ignores the
# cost-model one with a warning)
_VECTOR_ARGS = ["-O2", "-ftree-vectorize", "-fvect-cost-model=dynamic", "-g0"]
module_args = {m: _VECTOR_ARGS for m in ("_cast_f2i", "_cast_fast", "_cast_scale_offset")} if not DEBUG else {}

# plain C of the kernels (``zarrcy/_kernels/c``): headers every module may include, and
# the .c files compiled into the module that owns them (C_SOURCES)
C_DIR = os.path.join("zarrcy", "_kernels", "c")
C_SOURCES = {"_compress": [os.path.join(C_DIR, "zc_codecs.c")]}
C_FILES = sorted(glob.glob(os.path.join(C_DIR, "*.[ch]")))

_CIMPORT = re.compile(r"from\s+zarrcy\._kernels(?:\.(\w+))?\s+cimport\s*\(?\s*(\w*)")


def _deps(pyx: str) -> list[str]:
    """Our files the build of ``pyx`` reads: its own ``.pxd``, every ``.pxd`` of ours it
    cimports (directly or through another), the headers of ``_kernels/c`` any of them
    names, and its ``C_SOURCES`` (with every header: they include each other)."""
    name = os.path.splitext(os.path.basename(pyx))[0]
    kernels = os.path.join("zarrcy", "_kernels")
    texts: list[str] = []
    seen: set[str] = set()
    todo = [pyx, os.path.join(kernels, name + ".pxd")]
    while todo:
        path = todo.pop()
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        with open(path) as f:
            texts.append(f.read())
        for sub, first in _CIMPORT.findall(texts[-1]):
            todo.append(os.path.join(kernels, (sub or first) + ".pxd"))
    used = seen | set(C_SOURCES.get(name, []))
    for path in C_FILES:
        if path.endswith(".h") and (name in C_SOURCES or any(os.path.basename(path) in t for t in texts)):
            used.add(path)
    return sorted(used - {pyx})


extensions = [
    Extension(
        "zarrcy._kernels." + os.path.splitext(os.path.basename(path))[0],
        [path, *C_SOURCES.get(os.path.splitext(os.path.basename(path))[0], [])],
        include_dirs=[np.get_include(), C_DIR],
        depends=[d for d in _deps(path) if d.startswith(C_DIR)],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"), ("ZARRCY_DEBUG", "1" if DEBUG else "0")],
        extra_compile_args=module_args.get(os.path.splitext(os.path.basename(path))[0], compile_args),
    )
    for path in sorted(glob.glob(os.path.join("zarrcy", "_kernels", "*.pyx")))
    # developer convenience: ZARRCY_ONLY=_cast,_grid rebuilds just those modules in place
    if not os.environ.get("ZARRCY_ONLY")
    or os.path.splitext(os.path.basename(path))[0] in os.environ["ZARRCY_ONLY"].split(",")
]


def _fingerprint(pyx: str) -> str:
    """What the generated C of ``pyx`` depends on: its source, the ``.pxd`` files and plain
    C of ours it reads (:func:`_deps`), Cython's and numpy's versions (numpy's .pxd for the
    module that cimports it) and the directives.  A changed ``.c``/``.h`` of
    ``_kernels/c`` also recompiles through ``depends``."""
    import Cython

    h = hashlib.sha256()
    for path in [pyx, *_deps(pyx)]:
        with open(path, "rb") as f:
            h.update(path.encode() + b"\0" + f.read() + b"\0")
    h.update(repr((Cython.__version__, np.__version__, sorted(directives.items()), ANNOTATE)).encode())
    return h.hexdigest()


def _stamp_path(pyx: str) -> str:
    return os.path.join(STAMPS, os.path.splitext(os.path.basename(pyx))[0] + ".sha256")


def _up_to_date(pyx: str, digest: str) -> bool:
    c_file = os.path.splitext(pyx)[0] + ".c"
    try:
        with open(_stamp_path(pyx)) as f:
            recorded = f.read().strip()
    except OSError:
        return False
    return recorded == digest and os.path.exists(c_file)


def _cythonize(exts):
    """Cythonize the modules whose C is missing or stale (content hash); pass the others'
    existing ``.c`` straight to the compiler."""
    digests = {e.name: _fingerprint(e.sources[0]) for e in exts}
    stale = [e for e in exts if not _up_to_date(e.sources[0], digests[e.name])]
    fresh = [e for e in exts if e not in stale]
    pyx_of = {e.name: e.sources[0] for e in exts}
    for e in fresh:
        e.sources = [os.path.splitext(e.sources[0])[0] + ".c", *e.sources[1:]]
    if stale:
        stale = cythonize(stale, compiler_directives=directives, annotate=ANNOTATE, force=True, nthreads=JOBS)
        os.makedirs(STAMPS, exist_ok=True)
        for e in stale:
            with open(_stamp_path(pyx_of[e.name]), "w") as f:
                f.write(digests[e.name] + "\n")
    by_name = {e.name: e for e in [*stale, *fresh]}
    return [by_name[e.name] for e in exts]


setup(
    cmdclass={"build_ext": parallel_build_ext},
    ext_modules=_cythonize(extensions),
)
