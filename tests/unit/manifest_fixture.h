/* manifest_fixture.h - what the runtime's package tests share: manifests
 * written with ' for " (readable in C strings), edits of them, and package
 * directories made from them. Failures end the current cmocka test. */
#ifndef CAKE_MANIFEST_FIXTURE_H
#define CAKE_MANIFEST_FIXTURE_H

/* `text` with ' turned into " (caller frees). */
char *fixture_q(const char *text);

/* fixture_q(`text`) with the first occurrence of fixture_q(`old`) replaced
 * by fixture_q(`new_`) (caller frees); the test fails when `old` is absent. */
char *fixture_replaced(const char *text, const char *old, const char *new_);

/* Writes `text` to dir/name. */
void fixture_write_file(const char *dir, const char *name, const char *text);

/* Fills the existing directory `dir` as a package: dir/manifest.json holding
 * `manifest` (JSON, not the ' form) and dir/bin/k.bin holding "abc" (the
 * file the fixtures' manifests name, with its SHA-256). */
void fixture_package_dir(const char *dir, const char *manifest);

#endif
