/* SPDX-License-Identifier: MIT */
/*
 * CPU feature detection for our own cipher backends: CPUID leaves 1 and 7,
 * and XCR0 for the register state the OS saves (bits 1, 2: SSE and AVX;
 * 5, 6, 7: opmask and the upper halves of all 512-bit registers).
 */
#include "crypto/cpu.h"

#include <stdlib.h>

#include <cpuid.h>

static unsigned cpu_probe(void)
{
	unsigned a, b, c, d, xcr0_lo, xcr0_hi, f = 0;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	if (c & bit_AES)
		f |= CPU_AES;
	if (c & bit_PCLMUL)
		f |= CPU_PCLMUL;
	if (!(c & bit_OSXSAVE))
		return f;
	__asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	if ((c & bit_AVX) && (xcr0_lo & 0x6) == 0x6)
		f |= CPU_AVX;
	/* VAES and VPCLMULQDQ are usable with 256-bit registers alone (on
	 * AVX2 CPUs without AVX-512), the AVX-512 features only when the OS
	 * saves the opmask and 512-bit state as well */
	if (!(f & CPU_AVX) || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return f;
	if (b & bit_AVX2)
		f |= CPU_AVX2;
	if (c & bit_VAES)
		f |= CPU_VAES;
	if (c & bit_VPCLMULQDQ)
		f |= CPU_VPCLMULQDQ;
	if ((xcr0_lo & 0xe6) != 0xe6)
		return f;
	if ((b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL))
		f |= CPU_AVX512;
	if (b & bit_AVX512IFMA)
		f |= CPU_AVX512IFMA;
	return f;
}

bool cpu_has_all(unsigned all, const char *off_env)
{
	/* the probe's result + 1 (0: not asked yet); atomic */
	static unsigned known;
	unsigned v = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (off_env && secure_getenv(off_env))
		return false;
	if (!v) {
		v = cpu_probe() + 1;
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return ((v - 1) & all) == all;
}
