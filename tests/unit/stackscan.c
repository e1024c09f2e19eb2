// SPDX-License-Identifier: MIT
/*
 * Stack scans (see stackscan.h). The buffer is read, never written:
 * volatile, so that the reads of what earlier calls left there happen.
 */
#include "stackscan.h"

#include <string.h>

#define SCAN_WORDS 8192
#define MAX_WORDS 64

__attribute__((noinline)) int stack_hits(const uint8_t *words, size_t n)
{
	volatile uint32_t buf[SCAN_WORDS];
	uint32_t w[MAX_WORDS];
	int hits = 0;

	if (n > MAX_WORDS)
		n = MAX_WORDS;
	memcpy(w, words, 4 * n);
	/* as far as the compiler knows, this fills buf */
	__asm__ volatile("" : : "r"(buf) : "memory");
	for (size_t i = 0; i < SCAN_WORDS; i++)
		for (size_t k = 0; k < n; k++)
			hits += buf[i] == w[k];
	return hits;
}
