/* test_npy.c - the .npy reader and writer (compiler/npy.c): round trips of
 * every written type, the header forms numpy writes and reads (versions,
 * key order, quotes, 0-d and empty arrays, big-endian data, every element
 * type), each malformed header with its message, and every truncation and
 * many single-byte corruptions of a valid file (an error or a parse, never
 * a crash or a read past the data). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

/* A file in memory: the bytes written by fn, or given. */
static FILE *mem_file(const void *bytes, size_t n) {
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  rewind(f);
  return f;
}

/* A file with the given header dict and data; version 1 or 2 */
static size_t make_npy(unsigned char *out, int major, const char *dict, const void *data, size_t ndata) {
  size_t dl = strlen(dict), pre = major == 1 ? 10 : 12;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major;
  out[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) out[8 + i] = (unsigned char)(dl >> (8 * i));
  memcpy(out + pre, dict, dl);
  memcpy(out + pre + dl, data, ndata);
  return pre + dl + ndata;
}

static int read_all(const unsigned char *bytes, size_t n, NpyHeader *h, double *out, size_t cap, char *err) {
  FILE *f = mem_file(bytes, n);
  int rc = npy_read_header(f, h, err, 256);
  if (!rc && (size_t)h->count > cap) rc = -2;
  if (!rc) rc = npy_read_data(f, h, out, err, 256);
  fclose(f);
  return rc;
}

static void round_trip_types(void **st) {
  const char *types[] = {"<f8", "<f4", "<f2", "<i4"};
  double v[6] = {1.5, -2.0, 0.25, 3.0, -7.0, 65504.0};
  int64_t shape[2] = {2, 3};
  for (int t = 0; t < 4; t++) {
    FILE *f = tmpfile();
    char err[256];
    double w[6];
    memcpy(w, v, sizeof v);
    if (t == 3) w[0] = 1, w[2] = 0;
    assert_int_equal(npy_write(f, types[t], 2, shape, w, err, sizeof err), 0);
    assert_int_equal(ftell(f), 128 + 6 * (t == 0 ? 8 : t == 2 ? 2 : 4)); /* the header ends at 128 */
    rewind(f);
    NpyHeader h;
    assert_int_equal(npy_read_header(f, &h, err, sizeof err), 0);
    assert_string_equal(h.descr, types[t]);
    assert_int_equal(ftell(f), 128);
    assert_int_equal(h.rank, 2);
    assert_int_equal(h.shape[0], 2);
    assert_int_equal(h.shape[1], 3);
    assert_int_equal(h.count, 6);
    double r[6];
    assert_int_equal(npy_read_data(f, &h, r, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) assert_true(r[i] == w[i]);
    fclose(f);
  }
}

/* The exact bytes numpy writes for np.save(f, np.array([[1, 2]], dtype='<f4')). */
static void numpy_bytes(void **st) {
  FILE *f = tmpfile();
  char err[256];
  int64_t shape[2] = {1, 2};
  double v[2] = {1, 2};
  assert_int_equal(npy_write(f, "<f4", 2, shape, v, err, sizeof err), 0);
  unsigned char b[136];
  rewind(f);
  assert_int_equal(fread(b, 1, sizeof b, f), 136);
  assert_int_equal(fgetc(f), EOF);
  fclose(f);
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }";
  assert_memory_equal(b, "\x93NUMPY\x01\x00\x76\x00", 10);
  assert_memory_equal(b + 10, dict, strlen(dict));
  for (size_t i = 10 + strlen(dict); i < 127; i++) assert_int_equal(b[i], ' ');
  assert_int_equal(b[127], '\n');
  float x[2];
  memcpy(x, b + 128, 8);
  assert_true(x[0] == 1.0f && x[1] == 2.0f);
}

static void write_shapes(void **st) {
  char err[256];
  double v[1] = {42};
  NpyHeader h;
  double r[1];
  /* a 0-d array, a 1-d array (written "(n,)") and an empty one */
  int64_t one = 1, zero[2] = {3, 0};
  for (int k = 0; k < 3; k++) {
    FILE *f = tmpfile();
    int rank = k == 0 ? 0 : k == 1 ? 1 : 2;
    assert_int_equal(npy_write(f, "<f8", rank, k == 2 ? zero : &one, v, err, sizeof err), 0);
    rewind(f);
    char text[256] = {0};
    fread(text, 1, 127, f);
    assert_non_null(strstr(text + 10, k == 0 ? "'shape': ()" : k == 1 ? "'shape': (1,)" : "'shape': (3, 0)"));
    rewind(f);
    assert_int_equal(npy_read_header(f, &h, err, sizeof err), 0);
    assert_int_equal(h.rank, rank);
    assert_int_equal(h.count, k == 2 ? 0 : 1);
    assert_int_equal(npy_read_data(f, &h, r, err, sizeof err), 0);
    if (k < 2) assert_true(r[0] == 42);
    fclose(f);
  }
}

static void write_rejects(void **st) {
  char err[256];
  int64_t n = 2;
  double bad[2] = {1.5, 0};
  FILE *f = tmpfile();
  assert_int_equal(npy_write(f, "<i4", 1, &n, bad, err, sizeof err), -1);
  assert_string_equal(err, "element 0 (1.5) is not an integer in the range of '<i4'");
  double big[2] = {0, 3e9};
  assert_int_equal(npy_write(f, "<i4", 1, &n, big, err, sizeof err), -1);
  assert_string_equal(err, "element 1 (3e+09) is not an integer in the range of '<i4'");
  double nan[2] = {NAN, 0};
  assert_int_equal(npy_write(f, "<i4", 1, &n, nan, err, sizeof err), -1);
  assert_int_equal(npy_write(f, "<c8", 1, &n, bad, err, sizeof err), -1);
  assert_string_equal(err, "cannot write element type '<c8'");
  fclose(f);
}

/* Every element type, both byte orders, version 2 and 3, other key orders and quotes. */
static void read_forms(void **st) {
  unsigned char buf[512];
  double r[4];
  NpyHeader h;
  char err[256];
  struct { const char *descr; unsigned char data[16]; double want[2]; } cases[] = {
      {"'|b1'", {0, 7}, {0, 1}},
      {"'|u1'", {200, 7}, {200, 7}},
      {"'|i1'", {200, 7}, {-56, 7}},
      {"'<i2'", {0xfe, 0xff, 1, 0}, {-2, 1}},
      {"'>i2'", {0xff, 0xfe, 0, 1}, {-2, 1}},
      {"'<u2'", {0xfe, 0xff, 1, 0}, {65534, 1}},
      {"'<i4'", {0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0}, {-1, 5}},
      {"'>u4'", {0, 0, 1, 0, 0, 0, 0, 9}, {256, 9}},
      {"'<i8'", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 0, 0}, {-1, 4294967296.0}},
      {"'<u8'", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3}, {18446744073709551615.0, 3}},
      {"'<f2'", {0x00, 0x3c, 0x00, 0xc0}, {1, -2}},
      {"'>f2'", {0x3c, 0x00, 0xc0, 0x00}, {1, -2}},
      {"'>f4'", {0x3f, 0x80, 0, 0, 0xc0, 0x40, 0, 0}, {1, -3}},
      {"\"<f8\"", {0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40}, {1, 2}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{\"shape\": (2,), 'fortran_order': False, 'descr': %s}   \n", cases[c].descr);
    int size = cases[c].descr[3] - '0';
    for (int major = 1; major <= 3; major++) {
      size_t n = make_npy(buf, major, dict, cases[c].data, 2 * (size_t)size);
      int rc = read_all(buf, n, &h, r, 4, err);
      if (rc) fail_msg("%s: %s", cases[c].descr, err);
      assert_int_equal(h.kind, cases[c].descr[2]);
      assert_true(r[0] == cases[c].want[0]);
      assert_true(r[1] == cases[c].want[1]);
    }
  }
  /* Python 2 longs, no trailing comma, Fortran order of an array with one long axis */
  size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1L, 2L)}\n", "\0\0\x80\x3f\0\0\0\x40", 8);
  assert_int_equal(read_all(buf, n, &h, r, 4, err), 0);
  assert_true(r[0] == 1 && r[1] == 2);
}

static void bad_headers(void **st) {
  struct { const char *dict; const char *msg; } cases[] = {
      {"[1, 2]", "the header is not a dictionary"},
      {"{'descr': '<f4', 'fortran_order': False}", "the header lacks 'shape'"},
      {"{'descr': '<f4', 'shape': (2,)}", "the header lacks 'fortran_order'"},
      {"{'shape': (2,), 'fortran_order': False}", "the header lacks 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "key 'descr' appears twice in the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x' in the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "unexpected text after the header's dictionary"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}' in the header"},
      {"{'descr' '<f4'}", "expected ':' after 'descr' in the header"},
      {"{descr: '<f4'}", "the header's keys must be 'descr', 'fortran_order' and 'shape'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured arrays are not supported"},
      {"{'descr': 'f4', 'fortran_order': False, 'shape': (2,)}", "unsupported element type 'f4'"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}", "unsupported element type '<c8' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)"},
      {"{'descr': '<f1', 'fortran_order': False, 'shape': (2,)}", "unsupported element type '<f1' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)"},
      {"{'descr': '<b2', 'fortran_order': False, 'shape': (2,)}", "unsupported element type '<b2' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)"},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", "element type '|f4' has no byte order ('<' or '>'; '|' for one byte)"},
      {"{'descr': '=f4', 'fortran_order': False, 'shape': (2,)}", "element type '=f4' has no byte order ('<' or '>'; '|' for one byte)"},
      {"{'descr': 1, 'fortran_order': False, 'shape': (2,)}", "'descr' is not a simple type string like '<f4'"},
      {"{'descr': '<f\xde', 'fortran_order': False, 'shape': (2,)}", "'descr' is not a simple type string like '<f4'"},
      {"{'sh\033[2Jape': (2,)}", "the header's keys must be 'descr', 'fortran_order' and 'shape'"},
      {"{'descr': '<f\\4', 'fortran_order': False, 'shape': (2,)}", "'descr' is not a simple type string like '<f4'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "'fortran_order' is neither True nor False"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", "the array is in Fortran order; save a C-ordered one (np.ascontiguousarray)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "'shape' is not a tuple: write (n,) for one axis"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "'shape' is not a tuple of non-negative integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", "'shape' is not a tuple of non-negative integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "'shape' is not a tuple of non-negative integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}", "an extent in 'shape' does not fit in 63 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "the shape's element count does not fit in 63 bits"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976, 2)}", "the array's byte size does not fit in 63 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}",
       "'shape' has more than 32 axes"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    NpyHeader h;
    char err[256] = "";
    int rc = npy_parse_header(cases[c].dict, strlen(cases[c].dict), &h, err, sizeof err);
    if (rc != -1 || strcmp(err, cases[c].msg)) fail_msg("%s: got '%s'", cases[c].dict, err);
  }
  /* the limits themselves parse */
  NpyHeader h;
  char err[256];
  const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807)}";
  assert_int_equal(npy_parse_header(ok, strlen(ok), &h, err, sizeof err), 0);
  assert_int_equal(h.count, 0);
}

static void bad_files(void **st) {
  unsigned char buf[256];
  NpyHeader h;
  double r[8];
  char err[256];
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n";
  size_t n = make_npy(buf, 1, dict, "\0\0\x80\x3f\0\0\0\x40", 8);
  assert_int_equal(read_all(buf, n, &h, r, 8, err), 0);
  /* magic, version, header length, the NUL byte */
  unsigned char b2[256];
  memcpy(b2, buf, n);
  b2[0] = 'x';
  assert_int_equal(read_all(b2, n, &h, r, 8, err), -1);
  assert_string_equal(err, "not a .npy file (no \\x93NUMPY magic)");
  memcpy(b2, buf, n);
  b2[7] = 1;
  assert_int_equal(read_all(b2, n, &h, r, 8, err), -1);
  assert_string_equal(err, "unsupported .npy format version 1.1 (1.0, 2.0 and 3.0 are read)");
  size_t m = make_npy(b2, 2, dict, "", 0);
  b2[8] = 0x11, b2[9] = 0x27, b2[10] = b2[11] = 0; /* 10001 bytes */
  assert_int_equal(read_all(b2, m, &h, r, 8, err), -1);
  assert_string_equal(err, "the header has 10001 bytes; at most 10000 are read");
  memcpy(b2, buf, n);
  b2[15] = 0;
  assert_int_equal(read_all(b2, n, &h, r, 8, err), -1);
  assert_string_equal(err, "the header contains a NUL byte");
  /* every truncation: an error about the header or the data */
  for (size_t k = 0; k < n; k++) {
    int rc = read_all(buf, k, &h, r, 8, err);
    assert_int_equal(rc, -1);
    if (k < 8) assert_string_equal(err, "not a .npy file (no \\x93NUMPY magic)");
    else if (k < n - 8) assert_string_equal(err, "truncated header");
    else assert_non_null(strstr(err, "truncated data: the shape holds 2 elements, the file "));
  }
  /* trailing bytes */
  buf[n] = 0;
  assert_int_equal(read_all(buf, n + 1, &h, r, 8, err), -1);
  assert_string_equal(err, "the file has more data than its shape holds (2 elements)");
}

/* Every byte of a valid file replaced by each of a few values: never a crash;
 * a header that still parses has a consistent count. */
static void corruptions(void **st) {
  unsigned char buf[256], b2[256];
  const char *dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }   \n";
  size_t n = make_npy(buf, 1, dict, "\1\0\2\0\3\0\4\0\5\0\6\0", 12);
  const unsigned char vals[] = {0, '(', ')', ',', '\'', '9', '}', 0xff, ' ', 'L', '>', 'f', '8'};
  for (size_t i = 0; i < n; i++)
    for (size_t v = 0; v < sizeof vals; v++) {
      memcpy(b2, buf, n);
      b2[i] = vals[v];
      NpyHeader h;
      double r[64];
      char err[256];
      int rc = read_all(b2, n, &h, r, 64, err);
      if (rc == 0) {
        int64_t c = 1;
        for (int a = 0; a < h.rank; a++) c *= h.shape[a];
        assert_int_equal(c, h.count);
      }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip_types), cmocka_unit_test(numpy_bytes), cmocka_unit_test(write_shapes),
      cmocka_unit_test(write_rejects),    cmocka_unit_test(read_forms),  cmocka_unit_test(bad_headers),
      cmocka_unit_test(bad_files),        cmocka_unit_test(corruptions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
