/* C helpers of zarrcy/_kernels/_deflate.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_DEFLATE_DL_H
#define ZC_DEFLATE_DL_H

#if defined(_WIN32)
static void *zarrcy_deflate_open(const char *path) { (void)path; return NULL; }
static void *zarrcy_deflate_sym(void *h, const char *name) { (void)h; (void)name; return NULL; }
#else
#include <dlfcn.h>
#ifndef RTLD_NOLOAD
#define RTLD_NOLOAD 0
#endif
/* only find a module that Python has already loaded: never load a new copy */
static void *zarrcy_deflate_open(const char *path) {
    return dlopen(path, RTLD_NOW | RTLD_NOLOAD);
}
static void *zarrcy_deflate_sym(void *h, const char *name) { return dlsym(h, name); }
#endif

#endif
