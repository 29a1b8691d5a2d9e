/* emu_parse.c - parses every kernel entry of PTX files with the emulator's
 * parser: a kernel the emulator could not run fails here, by name and line,
 * before any test needs it. usage: emu_parse FILE.ptx... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (t && fread(t, 1, (size_t)n, f) != (size_t)n) {
    free(t);
    t = NULL;
  }
  fclose(f);
  if (t) t[n] = 0, *len = (size_t)n;
  return t;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE.ptx...\n", argv[0]);
    return 2;
  }
  int kernels = 0, bad = 0;
  static const char sep[] = "// ---- kernel ", ent[] = ".visible .entry ";
  for (int a = 1; a < argc; a++) {
    size_t len;
    char *text = slurp(argv[a], &len);
    if (!text) {
      fprintf(stderr, "emu_parse: cannot read %s\n", argv[a]);
      return 2;
    }
    /* each section: from one separator (or the start) to the next */
    for (char *start = text; start && *start;) {
      char *next = strstr(start + 1, sep);
      size_t n = next ? (size_t)(next - start) : strlen(start);
      for (char *e = start; (e = strstr(e, ent)) != NULL && e < start + n; e += sizeof ent - 1) {
        char name[160];
        const char *p = e + sizeof ent - 1;
        size_t k = strcspn(p, "( \n");
        if (k == 0 || k >= sizeof name) continue;
        memcpy(name, p, k);
        name[k] = 0;
        char err[600];
        EmuKernel *ker = emu_kernel_parse(start, n, name, err, sizeof err);
        kernels++;
        if (!ker) {
          fprintf(stderr, "emu_parse: %s: %s\n", argv[a], err);
          bad++;
        }
        emu_kernel_free(ker);
      }
      start = next;
    }
    free(text);
  }
  printf("emu_parse: %d kernels, %d the emulator cannot run\n", kernels, bad);
  return bad || !kernels ? 1 : 0;
}
