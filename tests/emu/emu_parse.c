/* emu_parse.c - parses every kernel entry of PTX files with the emulator's
 * parser: a kernel the emulator could not run fails here, by name and line,
 * before any test needs it. usage: emu_parse FILE.ptx... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE.ptx...\n", argv[0]);
    return 2;
  }
  int kernels = 0, bad = 0;
  static const char ent[] = ".visible .entry ";
  for (int a = 1; a < argc; a++) {
    size_t len;
    char *text = emu_read_file(argv[a], &len);
    if (!text) {
      fprintf(stderr, "emu_parse: cannot read %s\n", argv[a]);
      return 2;
    }
    for (const char *e = text; (e = strstr(e, ent)) != NULL; e += sizeof ent - 1) {
      char name[160];
      const char *p = e + sizeof ent - 1, *start;
      size_t k = strcspn(p, "( \n"), n;
      if (k == 0 || k >= sizeof name) continue;
      memcpy(name, p, k);
      name[k] = 0;
      emu_ptx_module(text, e, &start, &n);
      char err[600];
      EmuKernel *ker = emu_kernel_parse(start, n, name, err, sizeof err);
      kernels++;
      if (!ker) {
        fprintf(stderr, "emu_parse: %s: %s\n", argv[a], err);
        bad++;
      }
      emu_kernel_free(ker);
    }
    free(text);
  }
  printf("emu_parse: %d kernels, %d the emulator cannot run\n", kernels, bad);
  return bad || !kernels ? 1 : 0;
}
