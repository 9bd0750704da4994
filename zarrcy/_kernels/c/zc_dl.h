/* Resolving C entry points from a shared object Python has already loaded (an extension
   module of a wheel zarrcy depends on): never a new copy (RTLD_NOLOAD); the handle stays
   open on purpose, it pins the module whose code is called.  Used by _deflate.pyx
   (libdeflate) and zc_codecs.c (libzstd, c-blosc, libcrc32c). */
#ifndef ZC_DL_H
#define ZC_DL_H

#if defined(_WIN32)
static void *zc_dl_open(const char *path) { (void)path; return NULL; }
static void *zc_dl_sym(void *h, const char *name) { (void)h; (void)name; return NULL; }
#else
#include <dlfcn.h>
#ifndef RTLD_NOLOAD
#define RTLD_NOLOAD 0
#endif
static void *zc_dl_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_NOLOAD); }
static void *zc_dl_sym(void *h, const char *name) { return dlsym(h, name); }
#endif

#endif
