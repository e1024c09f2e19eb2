/* SPDX-License-Identifier: MIT */
/*
 * The x86 instruction-set extensions our own cipher backends need (include
 * only in src/crypto).
 */
#ifndef CRYPTO_CPU_H
#define CRYPTO_CPU_H

#include <stdbool.h>

enum cpu_feature {
	CPU_AES = 1 << 0,	 /* AES-NI */
	CPU_PCLMUL = 1 << 1,	 /* PCLMULQDQ */
	CPU_AVX512 = 1 << 2,	 /* F, BW and VL, with the OS saving the
				  * opmask and all 512-bit registers */
	CPU_VAES = 1 << 3,
	CPU_VPCLMULQDQ = 1 << 4,
	CPU_AVX512IFMA = 1 << 5,
	CPU_AVX = 1 << 6,	 /* with the OS saving the 256-bit registers */
	CPU_AVX2 = 1 << 7,	 /* likewise */
};

/* Whether this CPU has every feature in `all` (a mask of enum cpu_feature),
 * asked once per process (CPUID traps to the hypervisor in a VM); false
 * whenever the environment has off_env (a test hook: behave as on a CPU
 * without them). */
bool cpu_has_all(unsigned all, const char *off_env);

#endif
