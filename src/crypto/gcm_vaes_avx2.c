/* SPDX-License-Identifier: MIT */
/*
 * AES-256-GCM with a 16-byte IV (spec §3.5) on our own code for CPUs with
 * VAES and VPCLMULQDQ but without AVX-512 (AMD Zen 3, Intel Alder Lake and
 * later client cores): the algorithm of gcm_vaes.c over 256-bit vectors of
 * two blocks, sixteen registers and no byte masks. The field arithmetic,
 * key schedule, J0, AES and CTR are shared with it (gcm_vaes_common.h,
 * gcm_vaes_ctr.h); what is its own: the vector macros, GHASH of a step
 * with Karatsuba, and the tails, which go through a zero-padded copy on
 * the stack (wiped with the rest of the frame by the entry points).
 */
#include "crypto/aead_impl.h"

#include "common/secmem.h"
#include "crypto/cpu.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

#define TARGET                                                              \
	__attribute__((target("avx2,vaes,vpclmulqdq,aes,pclmul")))
#define INLINE static inline __attribute__((always_inline)) TARGET

#define ROUNDS 14
#define NV 8		/* vectors of two blocks per step */
#define NB (2 * NV)	/* blocks per step */
#define CHUNK (16 * NB) /* bytes per step */

struct vctx {
	__m256i rk[ROUNDS + 1]; /* round keys, each in both lanes */
	/* hp[NB - k] = H^k * x^-1 for k = 1..NB (reflected), then zeros so
	 * that a short tail can load NB entries from hp + NB - nblocks; then
	 * the same for the sums of each power's two halves (Karatsuba) */
	__m128i hp[4 * NB];
};

typedef __m256i vec;
#define LANES 2
#define V_XOR _mm256_xor_si256
#define V_ADD32 _mm256_add_epi32
#define V_LOADU(p) _mm256_loadu_si256((const __m256i *)(p))
#define V_STOREU(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#define V_AESENC _mm256_aesenc_epi128
#define V_AESENCLAST _mm256_aesenclast_epi128
#define V_CAST128 _mm256_castsi256_si128
#define V_BCAST _mm256_broadcastsi128_si256
#define V_CTR(a) _mm256_set_epi32(0, 0, 0, (a) + 2, 0, 0, 0, (a) + 1)
#define V_EACH(n) _mm256_set_epi32(0, 0, 0, (n), 0, 0, 0, (n))
#define FORV(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)

#include "crypto/gcm_vaes_common.h"

INLINE __m256i bswap_lanes(__m256i a)
{
	return _mm256_shuffle_epi8(
		a, _mm256_broadcastsi128_si256(_mm_set_epi8(
			   0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
			   15)));
}

INLINE __m128i xor_lanes(__m256i v)
{
	return _mm_xor_si128(_mm256_castsi256_si128(v),
			     _mm256_extracti128_si256(v, 1));
}

/* Accumulates the product of x (two reflected blocks) and h (two powers)
 * into lo, hi, mid, without reduction; mid by Karatsuba: the product of
 * the halves' sums, from which the reduction's caller subtracts lo and hi. */
INLINE void mul_acc(__m256i *lo, __m256i *hi, __m256i *mid, __m256i x,
		    __m256i h, __m256i hs)
{
	__m256i xs = _mm256_xor_si256(x, _mm256_shuffle_epi32(x, 0x4e));

	*lo = _mm256_xor_si256(*lo, _mm256_clmulepi64_epi128(x, h, 0x00));
	*hi = _mm256_xor_si256(*hi, _mm256_clmulepi64_epi128(x, h, 0x11));
	*mid = _mm256_xor_si256(*mid, _mm256_clmulepi64_epi128(xs, hs, 0x00));
}

/* y = (y ^ X_0) * H^n ^ X_1 * H^(n-1) ^ ... ^ X_(n-1) * H, for the blocks
 * of nv vectors x[] (reflected; lanes past the n-th block are zero) with
 * pw = hp + NB - n. */
INLINE __m128i ghash_vecs(__m128i y, const __m256i x[NV], int nv,
			  const __m128i *pw)
{
	__m256i lo = _mm256_setzero_si256(), hi = lo, mid = lo;
	__m128i l, h;

#define X(i)                                                                \
	((i) ? x[i] : _mm256_xor_si256(x[0], _mm256_zextsi128_si256(y)))
#define GHASH_MUL(i)                                                        \
	if ((i) < nv)                                                       \
		mul_acc(&lo, &hi, &mid, X(i),                               \
			_mm256_loadu_si256((const __m256i *)(pw + 2 * (i))), \
			_mm256_loadu_si256(                                 \
				(const __m256i *)(pw + 2 * NB + 2 * (i))));
	FORV(GHASH_MUL)
#undef X
#undef GHASH_MUL
	mid = _mm256_xor_si256(mid, _mm256_xor_si256(lo, hi));
	l = xor_lanes(_mm256_xor_si256(lo, _mm256_bslli_epi128(mid, 8)));
	h = xor_lanes(_mm256_xor_si256(hi, _mm256_bsrli_epi128(mid, 8)));
	return reduce(l, h);
}

/* GHASH of the last len < CHUNK bytes at p, through a zero-padded copy. */
INLINE __m128i ghash_tail(const struct vctx *c, __m128i y, const uint8_t *p,
			  size_t len, vec x[NV])
{
	uint8_t tail[CHUNK] __attribute__((aligned(32)));
	size_t nb = (len + 15) / 16;
	int nv = (int)(nb + 1) / 2;

	memset(tail, 0, 32 * (size_t)nv);
	memcpy(tail, p, len);
	for (int i = 0; i < nv; i++)
		x[i] = bswap_lanes(V_LOADU(tail + 32 * i));
	return ghash_vecs(y, x, nv, c->hp + NB - nb);
}

/* The last len < CHUNK bytes of ctr_ghash, from counter block base on,
 * through a zero-padded copy: only the vectors they touch, and the hash
 * sees zeros past the end. */
INLINE void ctr_tail(const struct vctx *c, uint8_t *out, const uint8_t *in,
		     size_t len, vec base, __m128i *y, vec x[NV], bool enc)
{
	uint8_t tail[CHUNK] __attribute__((aligned(32)));
	size_t nb = (len + 15) / 16;
	int nv = (int)(nb + 1) / 2;

	memset(tail, 0, 32 * (size_t)nv);
	memcpy(tail, in, len);
	for (int i = 0; i < nv; i++) {
		vec k = aes_x1(c, bswap_lanes(base));
		vec v = V_LOADU(tail + 32 * i);

		base = V_ADD32(base, V_EACH(2));
		if (!enc)
			x[i] = bswap_lanes(v);
		V_STOREU(tail + 32 * i, V_XOR(v, k));
	}
	memcpy(out, tail, len);
	if (enc) {
		memset(tail + len, 0, 32 * (size_t)nv - len);
		for (int i = 0; i < nv; i++)
			x[i] = bswap_lanes(V_LOADU(tail + 32 * i));
	}
	*y = ghash_vecs(*y, x, nv, c->hp + NB - nb);
}

#include "crypto/gcm_vaes_ctr.h"

/* ---- the backend -------------------------------------------------------- */

/* AVX2 (with the OS saving the 256-bit registers), VAES, VPCLMULQDQ, AES-NI
 * and PCLMULQDQ; VEILFS_NO_VAES makes it behave as on a CPU without them
 * (for tests). */
static bool cpu_ok(void)
{
	return cpu_has_all(CPU_AVX2 | CPU_VAES | CPU_VPCLMULQDQ | CPU_AES |
				   CPU_PCLMUL,
			   "VEILFS_NO_VAES");
}

TARGET static void vaes_setup(struct vctx *c, const uint8_t *key)
{
	__m128i rk[ROUNDS + 1];

	aes256_expand(rk, key);
	for (int r = 0; r <= ROUNDS; r++)
		c->rk[r] = _mm256_broadcastsi128_si256(rk[r]);
	secure_zero(rk, sizeof(rk));
	hpowers(c->hp, NB, bswap128(aes_block(c, _mm_setzero_si128())));
	for (int k = 0; k < NB; k++)
		c->hp[2 * NB + k] = _mm_xor_si128(
			c->hp[k], _mm_shuffle_epi32(c->hp[k], 0x4e));
}

GCM_VAES_BACKEND(aead_gcm_vaes_avx2, "AES-GCM-256-VAES-AVX2", "VAES/AVX2",
		 aead_wipe_ymm);
