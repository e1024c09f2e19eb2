/* SPDX-License-Identifier: MIT */
/*
 * Strict UTF-8 decoding of one sequence (see utf8.c).
 */
#ifndef COMMON_UTF8_H
#define COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 sequence at s (n >= 1 bytes left) with
 * its code point in *cp, or 0 if it is not valid UTF-8. */
size_t utf8_len(const unsigned char *s, size_t n, uint32_t *cp);

#endif
