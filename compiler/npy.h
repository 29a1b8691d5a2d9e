/* npy.h - NumPy .npy files: read into doubles, write from doubles.
 *
 * Contract: a file is untrusted input. npy_read_header() reads the magic,
 * the version (1.0, 2.0 or 3.0) and the header dictionary ({'descr': ...,
 * 'fortran_order': ..., 'shape': (...)}, keys in any order, nothing else),
 * and checks them: a supported element type (little- or big-endian f2 f4
 * f8, i1 i2 i4 i8, u1 u2 u4 u8, b1), C order (or an array that is the same
 * in both orders), at most NPY_MAX_RANK axes, and an element count and byte
 * size that fit in 63 bits (every product overflow-checked). It allocates
 * nothing: the caller checks the count against its own limits and provides
 * the buffer that npy_read_data() fills, which fails on a truncated file
 * and on bytes after the data. npy_write() writes version 1.0 files.
 * Errors come back as a message in err; nothing is printed.
 */
#ifndef CAKE_NPY_H
#define CAKE_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
  NPY_MAX_RANK = 32,          /* axes of one array */
  NPY_MAX_HEADER = 10000,     /* bytes of the header dictionary (numpy's own default limit) */
};

typedef struct NpyHeader {
  char descr[8];      /* as in the file, e.g. "<f4" */
  char kind;          /* 'f' float, 'i' signed, 'u' unsigned, 'b' bool */
  int size;           /* bytes per element: 1, 2, 4 or 8 */
  int big_endian;
  int rank;
  int64_t shape[NPY_MAX_RANK];
  int64_t count;      /* the product of the shape */
} NpyHeader;

/* Parses the header dictionary (the text after the length field). 0, or -1
 * with a message. */
int npy_parse_header(const char *text, size_t len, NpyHeader *h, char *err, size_t errlen);

/* Reads and checks everything before the data; f is then at the data. */
int npy_read_header(FILE *f, NpyHeader *h, char *err, size_t errlen);

/* Reads h->count elements into out, converted to double, and checks that
 * the file ends there. */
int npy_read_data(FILE *f, const NpyHeader *h, double *out, char *err, size_t errlen);

/* Writes an array of `rank` axes as descr ("<f2", "<f4", "<f8" or "<i4").
 * An integer file takes integers in its range only, and reports the first
 * value that is not one. */
int npy_write(FILE *f, const char *descr, int rank, const int64_t *shape, const double *data, char *err,
              size_t errlen);

#endif
