/* C helpers of zarrcy/_kernels/_vlen.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_VLEN_H
#define ZC_VLEN_H

#ifndef NPY_TARGET_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#endif
#include <numpy/arrayobject.h>

static int zv_import_numpy(void) { return _import_array(); }

/* 1 when s[0:n] is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
   nothing above U+10FFFF) -- the same strictness as Python's "strict" decoder */
static int zv_utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            unsigned char c1;
            if (n - i < 3) return 0;
            c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            unsigned char c1;
            if (n - i < 4) return 0;
            c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
            if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static int zv_is_string_array(PyObject *o) {
    return PyArray_Check(o) && PyArray_DESCR((PyArrayObject *)o)->type_num == NPY_VSTRING
           && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)o);
}
static char *zv_data(PyObject *o) { return PyArray_BYTES((PyArrayObject *)o); }
static Py_ssize_t zv_size(PyObject *o) { return (Py_ssize_t)PyArray_SIZE((PyArrayObject *)o); }
static Py_ssize_t zv_itemsize(PyObject *o) { return (Py_ssize_t)PyArray_ITEMSIZE((PyArrayObject *)o); }

/* validate + pack items i of buf into the StringDType array at dst (stride bytes
   apart); -1: done, -2: allocation failure, i >= 0: item i is not valid UTF-8.
   Takes and releases the descriptor's allocator lock; needs no GIL. */
static Py_ssize_t zv_pack(PyObject *arr, char *dst, Py_ssize_t stride, const char *base,
                          const int64_t *starts, const int64_t *stops, Py_ssize_t n) {
    npy_string_allocator *al;
    Py_ssize_t i, r = -1;
    /* validate everything first, outside the allocator lock (threads packing into
       one array take turns on it); nothing is written when an item is invalid */
    for (i = 0; i < n; i++) {
        if (!zv_utf8_valid((const unsigned char *)(base + starts[i]), (Py_ssize_t)(stops[i] - starts[i]))) return i;
    }
    al = NpyString_acquire_allocator((PyArray_StringDTypeObject *)PyArray_DESCR((PyArrayObject *)arr));
    for (i = 0; i < n; i++) {
        if (NpyString_pack(al, (npy_packed_static_string *)(dst + i * stride), base + starts[i],
                           (size_t)(stops[i] - starts[i])) < 0) { r = -2; break; }
    }
    NpyString_release_allocator(al);
    return r;
}

/* sizes[i] = UTF-8 length of element i; -1, or the index of a missing (NA) element
   or one longer than 2**32 - 1 bytes */
static Py_ssize_t zv_sizes(PyObject *arr, const char *src, Py_ssize_t stride, int64_t *sizes, Py_ssize_t n) {
    npy_string_allocator *al = NpyString_acquire_allocator(
        (PyArray_StringDTypeObject *)PyArray_DESCR((PyArrayObject *)arr));
    Py_ssize_t i, r = -1;
    npy_static_string s = {0, NULL};
    for (i = 0; i < n; i++) {
        if (NpyString_load(al, (const npy_packed_static_string *)(src + i * stride), &s) != 0
            || s.size > 0xFFFFFFFFu) { r = i; break; }
        sizes[i] = (int64_t)s.size;
    }
    NpyString_release_allocator(al);
    return r;
}

/* write the length-prefixed items after the 4-byte count; -1, or the index of an
   element whose length changed since zv_sizes (concurrent mutation: nothing is
   written past the buffer) */
static Py_ssize_t zv_write(PyObject *arr, const char *src, Py_ssize_t stride, const int64_t *sizes,
                           Py_ssize_t n, unsigned char *out) {
    npy_string_allocator *al = NpyString_acquire_allocator(
        (PyArray_StringDTypeObject *)PyArray_DESCR((PyArrayObject *)arr));
    Py_ssize_t i, pos = 4, r = -1;
    npy_static_string s = {0, NULL};
    for (i = 0; i < n; i++) {
        uint32_t len;
        if (NpyString_load(al, (const npy_packed_static_string *)(src + i * stride), &s) != 0
            || (int64_t)s.size != sizes[i]) { r = i; break; }
        len = (uint32_t)s.size;
        out[pos] = (unsigned char)len; out[pos + 1] = (unsigned char)(len >> 8);
        out[pos + 2] = (unsigned char)(len >> 16); out[pos + 3] = (unsigned char)(len >> 24);
        pos += 4;
        if (len) memcpy(out + pos, s.buf, len);
        pos += len;
    }
    NpyString_release_allocator(al);
    return r;
}

#endif
