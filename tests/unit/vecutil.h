/* SPDX-License-Identifier: MIT */
/*
 * Helpers for unit tests that read the gocryptfs 2.3 vectors (VEILFS_VECTORS):
 * paths, whole files, and hex values from a variant's vectors.txt.
 */
#ifndef TESTS_VECUTIL_H
#define TESTS_VECUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The six forward-mode variants. */
extern const char *const vec_variants[];
extern const size_t vec_nvariants;

/* out = "$VEILFS_VECTORS/<variant>/<rel>". Returns 0 or -ENAMETOOLONG. */
int vec_path(char *out, size_t cap, const char *variant, const char *rel);

/* Read a whole file into a malloc'd buffer (NUL-terminated, *len without the
 * NUL). NULL if it cannot be read. Caller frees. */
uint8_t *vec_read_file(const char *path, size_t *len);

/* Find the first line of <variant>/vectors.txt containing label and decode
 * the hex after the line's last ": ". Returns the byte count (0 if absent). */
size_t vec_hex(const char *variant, const char *label, uint8_t *out,
	       size_t cap);

/* True if the vectors are present (else tests SKIP). */
bool vec_available(void);

#endif
