/* SPDX-License-Identifier: MIT */
/*
 * AES-256-GCM with a 16-byte IV (spec §3.5) on our own code: VAES and
 * VPCLMULQDQ over 512-bit vectors (AVX-512), after NIST SP 800-38D.
 * CTR runs NB blocks (NV vectors of four) per step, and GHASH hashes each
 * step's NB blocks in one aggregated multiplication by H^NB..H^1 with a
 * single reduction; sealing hashes a step's ciphertext during the next
 * step's AES rounds. GHASH works on byte-reflected blocks, in which the field
 * product of a and b is a Montgomery-style reduction of the carry-less
 * product of a and b * x^-1; that is why the powers of H are stored divided
 * by x. The counter is kept reflected as well, so that its low 32 bits are
 * a little-endian lane that a vector add increments modulo 2^32 (inc32).
 * The context (round keys, powers of H) lives in locked memory; it can only
 * be created on a CPU with the instructions (-ENOTSUP otherwise, and also
 * when the environment has VEILFS_NO_VAES, for tests of that case).
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
	__attribute__((target("avx512f,avx512bw,avx512vl,vaes,vpclmulqdq,"  \
			      "aes,pclmul")))
#define INLINE static inline __attribute__((always_inline)) TARGET

#define ROUNDS 14
#ifndef NV
#define NV 8 /* vectors of four blocks per step */
#endif
#define NB (4 * NV)	 /* blocks per step */
#define CHUNK (16 * NB) /* bytes per step */

struct vctx {
	__m512i rk[ROUNDS + 1]; /* round keys, each in all four lanes */
	/* hp[NB - k] = H^k * x^-1 for k = 1..NB (reflected), then zeros so
	 * that a short tail can load NB entries from hp + NB - nblocks */
	__m128i hp[2 * NB];
};

typedef __m512i vec;
#define LANES 4
#define V_XOR _mm512_xor_si512
#define V_ADD32 _mm512_add_epi32
#define V_LOADU(p) _mm512_loadu_si512(p)
#define V_STOREU(p, v) _mm512_storeu_si512((p), (v))
#define V_AESENC _mm512_aesenc_epi128
#define V_AESENCLAST _mm512_aesenclast_epi128
#define V_CAST128 _mm512_castsi512_si128
#define V_BCAST _mm512_broadcast_i32x4
#define V_CTR(a)                                                            \
	_mm512_set_epi32(0, 0, 0, (a) + 4, 0, 0, 0, (a) + 3, 0, 0, 0,       \
			 (a) + 2, 0, 0, 0, (a) + 1)
#define V_EACH(n)                                                           \
	_mm512_set_epi32(0, 0, 0, (n), 0, 0, 0, (n), 0, 0, 0, (n), 0, 0, 0, \
			 (n))

/* Statement M(i) for the NV vectors of a step (FORV2: for every other
 * one), spelled out so that the compiler keeps them in registers. */
#if NV == 8
#define FORV(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define FORV2(M) M(0) M(2) M(4) M(6)
#else
#define FORV(M) M(0) M(1) M(2) M(3)
#define FORV2(M) M(0) M(2)
#endif

#include "crypto/gcm_vaes_common.h"

INLINE __m512i bswap_lanes(__m512i a)
{
	return _mm512_shuffle_epi8(
		a, _mm512_broadcast_i32x4(_mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7,
						       8, 9, 10, 11, 12, 13,
						       14, 15)));
}

INLINE __m128i xor_lanes(__m512i v)
{
	__m256i t = _mm256_xor_si256(_mm512_castsi512_si256(v),
				     _mm512_extracti64x4_epi64(v, 1));

	return _mm_xor_si128(_mm256_castsi256_si128(t),
			     _mm256_extracti128_si256(t, 1));
}

#define XOR3(a, b, c) _mm512_ternarylogic_epi64((a), (b), (c), 0x96)

/* Accumulates the product of x (four reflected blocks) and h (four powers)
 * into lo, hi, mid, without reduction. */
INLINE void mul_acc(__m512i *lo, __m512i *hi, __m512i *mid, __m512i x,
		    __m512i h)
{
	*lo = _mm512_xor_si512(*lo, _mm512_clmulepi64_epi128(x, h, 0x00));
	*hi = _mm512_xor_si512(*hi, _mm512_clmulepi64_epi128(x, h, 0x11));
	*mid = XOR3(*mid, _mm512_clmulepi64_epi128(x, h, 0x01),
		    _mm512_clmulepi64_epi128(x, h, 0x10));
}

/* The same for two vectors, with three-way XORs (fewer vector ALU ops). */
INLINE void mul_acc2(__m512i *lo, __m512i *hi, __m512i *mid, __m512i xa,
		     __m512i ha, __m512i xb, __m512i hb)
{
	*lo = XOR3(*lo, _mm512_clmulepi64_epi128(xa, ha, 0x00),
		   _mm512_clmulepi64_epi128(xb, hb, 0x00));
	*hi = XOR3(*hi, _mm512_clmulepi64_epi128(xa, ha, 0x11),
		   _mm512_clmulepi64_epi128(xb, hb, 0x11));
	*mid = XOR3(*mid, _mm512_clmulepi64_epi128(xa, ha, 0x01),
		    _mm512_clmulepi64_epi128(xa, ha, 0x10));
	*mid = XOR3(*mid, _mm512_clmulepi64_epi128(xb, hb, 0x01),
		    _mm512_clmulepi64_epi128(xb, hb, 0x10));
}

/* y = (y ^ X_0) * H^n ^ X_1 * H^(n-1) ^ ... ^ X_(n-1) * H, for the blocks
 * of nv vectors x[] (reflected; lanes past the n-th block are zero) with
 * pw = hp + NB - n. */
INLINE __m128i ghash_vecs(__m128i y, const __m512i x[NV], int nv,
			  const __m128i *pw)
{
	__m512i lo = _mm512_setzero_si512(), hi = lo, mid = lo;
	__m128i l, h;

#define X(i)                                                                \
	((i) ? x[i] : _mm512_xor_si512(x[0], _mm512_zextsi128_si512(y)))
#define H(i) _mm512_loadu_si512(pw + 4 * (i))
#define GHASH_MUL2(i)                                                       \
	if ((i) + 1 < nv)                                                   \
		mul_acc2(&lo, &hi, &mid, X(i), H(i), x[(i) + 1], H((i) + 1)); \
	else if ((i) < nv)                                                  \
		mul_acc(&lo, &hi, &mid, X(i), H(i));
	FORV2(GHASH_MUL2)
#undef X
#undef H
#undef GHASH_MUL2
	l = xor_lanes(_mm512_xor_si512(lo, _mm512_bslli_epi128(mid, 8)));
	h = xor_lanes(_mm512_xor_si512(hi, _mm512_bsrli_epi128(mid, 8)));
	return reduce(l, h);
}

/* Byte mask of vector i (64 bytes) of the last len < CHUNK bytes. */
INLINE __mmask64 tail_mask(size_t len, int i)
{
	size_t off = 64 * (size_t)i;

	if (len >= off + 64)
		return ~(__mmask64)0;
	if (len <= off)
		return 0;
	return ((__mmask64)1 << (len - off)) - 1;
}

/* GHASH of the last len < CHUNK bytes at p, zero-padded to whole blocks. */
INLINE __m128i ghash_tail(const struct vctx *c, __m128i y, const uint8_t *p,
			  size_t len, vec x[NV])
{
	size_t nb = (len + 15) / 16;

	for (int i = 0; i < (int)(nb + 3) / 4; i++)
		x[i] = bswap_lanes(
			_mm512_maskz_loadu_epi8(tail_mask(len, i), p + 64 * i));
	return ghash_vecs(y, x, (int)(nb + 3) / 4, c->hp + NB - nb);
}

/* The last len < CHUNK bytes of ctr_ghash, from counter block base on:
 * only the vectors they touch, under byte masks. */
INLINE void ctr_tail(const struct vctx *c, uint8_t *out, const uint8_t *in,
		     size_t len, __m512i base, __m128i *y, __m512i x[NV],
		     bool enc)
{
	const __m512i four = _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0,
					      4, 0, 0, 0, 4);
	size_t nb = (len + 15) / 16;

	for (int i = 0; i < (int)(nb + 3) / 4; i++) {
		__mmask64 m = tail_mask(len, i);
		__m512i k = aes_x1(c, bswap_lanes(base));
		__m512i v = _mm512_maskz_loadu_epi8(m, in + 64 * i);

		base = _mm512_add_epi32(base, four);
		if (!enc)
			x[i] = bswap_lanes(v);
		v = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(v, k));
		_mm512_mask_storeu_epi8(out + 64 * i, m, v);
		if (enc)
			x[i] = bswap_lanes(v);
	}
	*y = ghash_vecs(*y, x, (int)(nb + 3) / 4, c->hp + NB - nb);
}

#include "crypto/gcm_vaes_ctr.h"

/* ---- the backend -------------------------------------------------------- */

/* AVX-512 F/BW/VL, VAES, VPCLMULQDQ, AES-NI and PCLMULQDQ; VEILFS_NO_VAES
 * makes it behave as on a CPU without them (for tests). */
static bool cpu_ok(void)
{
	return cpu_has_all(CPU_AVX512 | CPU_VAES | CPU_VPCLMULQDQ | CPU_AES |
				   CPU_PCLMUL,
			   "VEILFS_NO_VAES");
}

TARGET static void vaes_setup(struct vctx *c, const uint8_t *key)
{
	__m128i rk[ROUNDS + 1];

	aes256_expand(rk, key);
	for (int r = 0; r <= ROUNDS; r++)
		c->rk[r] = _mm512_broadcast_i32x4(rk[r]);
	secure_zero(rk, sizeof(rk));
	hpowers(c->hp, NB, bswap128(aes_block(c, _mm_setzero_si128())));
}

GCM_VAES_BACKEND(aead_gcm_vaes, "AES-GCM-256-VAES", "VAES/AVX-512",
		 aead_wipe_vregs);
