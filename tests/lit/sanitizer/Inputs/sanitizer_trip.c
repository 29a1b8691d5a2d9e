/* sanitizer_trip MODE - commits one error of the kind MODE names, so that the
 * lit tests of tests/lit/sanitizer can check how a sanitizer build reports it:
 *   heap      a heap buffer overflow (AddressSanitizer)
 *   signed    a signed integer overflow (UndefinedBehaviorSanitizer)
 *   leak      memory never freed (LeakSanitizer, at exit)
 *   fail      no error: exits with status 1 (an ordinary failure)
 * Built only with CAKE_SANITIZE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;
void *leaked;

int main(int argc, char **argv) {
  const char *m = argc > 1 ? argv[1] : "";
  if (!strcmp(m, "heap")) {
    volatile int n = 8;
    char *p = malloc((size_t)n);
    p[n] = 1; /* one past the end */
    sink = p[0];
    free(p);
  } else if (!strcmp(m, "signed")) {
    volatile int x = 2147483647;
    sink = x + 1;
  } else if (!strcmp(m, "leak")) {
    char *p = malloc(64);
    memset(p, 1, 64);
    sink = p[3];
    p = NULL; /* the only pointer is gone */
  } else if (!strcmp(m, "fail")) {
    return 1;
  } else {
    fprintf(stderr, "usage: sanitizer_trip heap|signed|leak|fail\n");
    return 2;
  }
  printf("sanitizer_trip: %s: no report\n", m);
  return 0;
}
