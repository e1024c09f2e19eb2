/* SPDX-License-Identifier: MIT */
/*
 * Stack scans for the vector backends' tests: whether key-derived words a
 * backend call spilled are still on the stack after it returned.
 */
#ifndef TESTS_STACKSCAN_H
#define TESTS_STACKSCAN_H

#include <stddef.h>
#include <stdint.h>

/* How often one of the n 32-bit words at words (any alignment) stands in
 * the 32 KiB of stack below the caller's frame, where the frames of the
 * calls it made before were. */
int stack_hits(const uint8_t *words, size_t n);

/* The same for the 32 AVX-512 vector registers as they are at the call
 * (CPUs with AVX-512 only). */
int vreg_hits(const uint8_t *words, size_t n);

#endif
