// SPDX-License-Identifier: MIT
/*
 * Stack scans (see stackscan.h). The buffer is read, never written:
 * volatile, so that the reads of what earlier calls left there happen.
 * The register scan dumps the registers before anything here can use one,
 * into static memory, and reads the words it looks for one at a time
 * (volatile): no copy of them lands on the stack a later scan reads, nor
 * in a vector register.
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

static uint32_t vregs[32 * 16] __attribute__((aligned(64)));

__attribute__((noinline)) int vreg_hits(const uint8_t *words, size_t n)
{
	const volatile uint8_t *v = words;
	/* a flag in memory that libgcc set at start-up: no vector register
	 * is used to read it */
	long zmm = __builtin_cpu_supports("avx512f");
	int hits = 0;

	/* without AVX-512 (the AVX2 backends), ymm0-15, each in the first
	 * half of its 64-byte slot; the other slots stay zero */
	__asm__ volatile("test %1, %1\n\t"
			 "jnz 1f\n\t"
			 "vmovdqu %%ymm0, 0(%0)\n\t"
			 "vmovdqu %%ymm1, 64(%0)\n\t"
			 "vmovdqu %%ymm2, 128(%0)\n\t"
			 "vmovdqu %%ymm3, 192(%0)\n\t"
			 "vmovdqu %%ymm4, 256(%0)\n\t"
			 "vmovdqu %%ymm5, 320(%0)\n\t"
			 "vmovdqu %%ymm6, 384(%0)\n\t"
			 "vmovdqu %%ymm7, 448(%0)\n\t"
			 "vmovdqu %%ymm8, 512(%0)\n\t"
			 "vmovdqu %%ymm9, 576(%0)\n\t"
			 "vmovdqu %%ymm10, 640(%0)\n\t"
			 "vmovdqu %%ymm11, 704(%0)\n\t"
			 "vmovdqu %%ymm12, 768(%0)\n\t"
			 "vmovdqu %%ymm13, 832(%0)\n\t"
			 "vmovdqu %%ymm14, 896(%0)\n\t"
			 "vmovdqu %%ymm15, 960(%0)\n\t"
			 "jmp 2f\n"
			 "1:\n\t"
			 "vmovdqu64 %%zmm0, 0(%0)\n\t"
			 "vmovdqu64 %%zmm1, 64(%0)\n\t"
			 "vmovdqu64 %%zmm2, 128(%0)\n\t"
			 "vmovdqu64 %%zmm3, 192(%0)\n\t"
			 "vmovdqu64 %%zmm4, 256(%0)\n\t"
			 "vmovdqu64 %%zmm5, 320(%0)\n\t"
			 "vmovdqu64 %%zmm6, 384(%0)\n\t"
			 "vmovdqu64 %%zmm7, 448(%0)\n\t"
			 "vmovdqu64 %%zmm8, 512(%0)\n\t"
			 "vmovdqu64 %%zmm9, 576(%0)\n\t"
			 "vmovdqu64 %%zmm10, 640(%0)\n\t"
			 "vmovdqu64 %%zmm11, 704(%0)\n\t"
			 "vmovdqu64 %%zmm12, 768(%0)\n\t"
			 "vmovdqu64 %%zmm13, 832(%0)\n\t"
			 "vmovdqu64 %%zmm14, 896(%0)\n\t"
			 "vmovdqu64 %%zmm15, 960(%0)\n\t"
			 "vmovdqu64 %%zmm16, 1024(%0)\n\t"
			 "vmovdqu64 %%zmm17, 1088(%0)\n\t"
			 "vmovdqu64 %%zmm18, 1152(%0)\n\t"
			 "vmovdqu64 %%zmm19, 1216(%0)\n\t"
			 "vmovdqu64 %%zmm20, 1280(%0)\n\t"
			 "vmovdqu64 %%zmm21, 1344(%0)\n\t"
			 "vmovdqu64 %%zmm22, 1408(%0)\n\t"
			 "vmovdqu64 %%zmm23, 1472(%0)\n\t"
			 "vmovdqu64 %%zmm24, 1536(%0)\n\t"
			 "vmovdqu64 %%zmm25, 1600(%0)\n\t"
			 "vmovdqu64 %%zmm26, 1664(%0)\n\t"
			 "vmovdqu64 %%zmm27, 1728(%0)\n\t"
			 "vmovdqu64 %%zmm28, 1792(%0)\n\t"
			 "vmovdqu64 %%zmm29, 1856(%0)\n\t"
			 "vmovdqu64 %%zmm30, 1920(%0)\n\t"
			 "vmovdqu64 %%zmm31, 1984(%0)\n"
			 "2:"
			 : : "r"(vregs), "r"(zmm) : "memory");
	for (size_t i = 0; i < 32 * 16; i++)
		for (size_t k = 0; k < n; k++)
			hits += vregs[i] == ((uint32_t)v[4 * k] |
					     (uint32_t)v[4 * k + 1] << 8 |
					     (uint32_t)v[4 * k + 2] << 16 |
					     (uint32_t)v[4 * k + 3] << 24);
	return hits;
}
