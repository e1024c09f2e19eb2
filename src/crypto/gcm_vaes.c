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

/* ---- field arithmetic on reflected blocks ------------------------------ */

/* x^-1 in the reflected representation; its high half also serves as the
 * folding constant of the reduction (x^128 = x^7 + x^2 + x + 1). */
INLINE __m128i poly(void)
{
	return _mm_set_epi64x((long long)0xc200000000000000ULL, 1);
}

/* The 256-bit carry-less product hi:lo of a and b*x^-1 (reflected, i.e.
 * word k holds the coefficients of x^(255-64k-63) .. x^(255-64k)) reduced to
 * a * b mod P: two folds of 64 bits by the reflected polynomial. */
INLINE __m128i reduce(__m128i lo, __m128i hi)
{
	__m128i p = poly();

	lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4e),
			   _mm_clmulepi64_si128(lo, p, 0x10));
	lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4e),
			   _mm_clmulepi64_si128(lo, p, 0x10));
	return _mm_xor_si128(hi, lo);
}

/* a * b, with hb = b * x^-1 */
INLINE __m128i gfmul(__m128i a, __m128i hb)
{
	__m128i lo = _mm_clmulepi64_si128(a, hb, 0x00);
	__m128i hi = _mm_clmulepi64_si128(a, hb, 0x11);
	__m128i mid = _mm_xor_si128(_mm_clmulepi64_si128(a, hb, 0x01),
				    _mm_clmulepi64_si128(a, hb, 0x10));

	lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
	hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
	return reduce(lo, hi);
}

/* a * x^-1: a left shift in the reflected representation, folding the bit
 * that leaves (x^0) back in as x^-1. Constant time. */
static void div_x(uint64_t v[2])
{
	uint64_t carry = 0 - (v[1] >> 63);

	v[1] = (v[1] << 1) | (v[0] >> 63);
	v[0] <<= 1;
	v[1] ^= carry & 0xc200000000000000ULL;
	v[0] ^= carry & 1;
}

INLINE __m128i div_x_vec(__m128i a)
{
	uint64_t v[2];
	__m128i r;

	_mm_storeu_si128((__m128i *)v, a);
	div_x(v);
	r = _mm_loadu_si128((const __m128i *)v);
	secure_zero(v, sizeof(v));
	return r;
}

INLINE __m128i bswap128(__m128i a)
{
	return _mm_shuffle_epi8(a, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
						10, 11, 12, 13, 14, 15));
}

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

/* Statement M(i) for the NV vectors of a step (FORV2: for every other
 * one), spelled out so that the compiler keeps them in registers. */
#if NV == 8
#define FORV(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define FORV2(M) M(0) M(2) M(4) M(6)
#else
#define FORV(M) M(0) M(1) M(2) M(3)
#define FORV2(M) M(0) M(2)
#endif

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

/* GHASH of len bytes at p, zero-padded to whole blocks. */
INLINE __m128i ghash_bytes(const struct vctx *c, __m128i y, const uint8_t *p,
			   size_t len)
{
	__m512i x[NV];
	size_t nb;

#define LOAD(i) x[i] = bswap_lanes(_mm512_loadu_si512(p + 64 * (i)));
	for (; len >= CHUNK; len -= CHUNK, p += CHUNK) {
		FORV(LOAD)
		y = ghash_vecs(y, x, NV, c->hp);
	}
#undef LOAD
	if (!len)
		return y;
	nb = (len + 15) / 16;
	for (int i = 0; i < (int)(nb + 3) / 4; i++)
		x[i] = bswap_lanes(
			_mm512_maskz_loadu_epi8(tail_mask(len, i), p + 64 * i));
	return ghash_vecs(y, x, (int)(nb + 3) / 4, c->hp + NB - nb);
}

/* ---- AES ---------------------------------------------------------------- */

/* AES-256 on one block. */
INLINE __m128i aes_block(const struct vctx *c, __m128i b)
{
	b = _mm_xor_si128(b, _mm512_castsi512_si128(c->rk[0]));
	for (int r = 1; r < ROUNDS; r++)
		b = _mm_aesenc_si128(b, _mm512_castsi512_si128(c->rk[r]));
	return _mm_aesenclast_si128(b, _mm512_castsi512_si128(c->rk[ROUNDS]));
}

/* AES-256 on the NV vectors of a step. */
INLINE void aes_step(const struct vctx *c, __m512i b[NV])
{
	__m512i k = c->rk[0];

#define XK(i) b[i] = _mm512_xor_si512(b[i], k);
#define ENC(i) b[i] = _mm512_aesenc_epi128(b[i], k);
#define ENCLAST(i) b[i] = _mm512_aesenclast_epi128(b[i], k);
	FORV(XK)
	/* unrolled: as a loop, GCC rotates the eight states through other
	 * registers with a vector move each per round */
#pragma GCC unroll 13
	for (int r = 1; r < ROUNDS; r++) {
		k = c->rk[r];
		FORV(ENC)
	}
	k = c->rk[ROUNDS];
	FORV(ENCLAST)
#undef XK
#undef ENC
#undef ENCLAST
}

/* AES-256 on one vector (four blocks). */
INLINE __m512i aes_x1(const struct vctx *c, __m512i b)
{
	b = _mm512_xor_si512(b, c->rk[0]);
	for (int r = 1; r < ROUNDS; r++)
		b = _mm512_aesenc_epi128(b, c->rk[r]);
	return _mm512_aesenclast_epi128(b, c->rk[ROUNDS]);
}

/* One AES-256 key schedule step (FIPS 197 §5.2): every word of k xored with
 * all words before it and with t, a word of aeskeygenassist's result. */
INLINE __m128i expand(__m128i k, __m128i t)
{
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	return _mm_xor_si128(k, t);
}

/* ---- CTR + GHASH -------------------------------------------------------- */

/* Counter blocks ctr + 1 + 4i .. ctr + 4 + 4i (lanes of vector i), ctr
 * reflected, so that 32-bit adds on the low lane are inc32 of SP 800-38D.
 * No shortcut for steps where the last byte does not wrap: with a 16-byte
 * IV, J0 comes from GHASH under the secret H, and a branch on its bits
 * would leak them through timing. */
INLINE void counters(__m512i base, __m512i b[NV])
{
#define CTR(i)                                                              \
	b[i] = bswap_lanes(_mm512_add_epi32(                                \
		base, _mm512_set_epi32(0, 0, 0, 4 * (i) + 4, 0, 0, 0,       \
				       4 * (i) + 3, 0, 0, 0, 4 * (i) + 2,   \
				       0, 0, 0, 4 * (i) + 1)));
	FORV(CTR)
#undef CTR
}

/* out = in ^ keystream from counter block ctr + 1 (ctr reflected), and
 * *y updated with the ciphertext (out when enc, else in). in == out is fine. */
INLINE void ctr_ghash(const struct vctx *c, uint8_t *out, const uint8_t *in,
		      size_t len, __m128i ctr, __m128i *y, bool enc)
{
	__m512i base = _mm512_broadcast_i32x4(ctr);
	const __m512i step = _mm512_set_epi32(0, 0, 0, NB, 0, 0, 0, NB, 0, 0,
					      0, NB, 0, 0, 0, NB);
	const __m512i four = _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0,
					      4, 0, 0, 0, 4);
	__m512i b[NV], d[NV], x[NV];
	size_t nb;

#define LOAD(i) d[i] = _mm512_loadu_si512(in + 64 * (i));
#define REFLECT(i) x[i] = bswap_lanes(d[i]);
#define XOR_STORE(i)                                                        \
	d[i] = _mm512_xor_si512(d[i], b[i]);                                \
	_mm512_storeu_si512(out + 64 * (i), d[i]);
#define NEXT()                                                              \
	do {                                                                \
		counters(base, b);                                          \
		base = _mm512_add_epi32(base, step);                        \
		len -= CHUNK;                                               \
	} while (0)
	/* Sealing hashes each step's ciphertext during the next step's AES
	 * rounds (x holds it meanwhile), so that the two overlap: about 9%
	 * faster here than a second pass over the message. */
	if (enc && len >= CHUNK) {
		NEXT();
		FORV(LOAD)
		aes_step(c, b);
		FORV(XOR_STORE)
		FORV(REFLECT)
		while (len >= CHUNK) {
			in += CHUNK;
			out += CHUNK;
			NEXT();
			*y = ghash_vecs(*y, x, NV, c->hp);
			FORV(LOAD)
			aes_step(c, b);
			FORV(XOR_STORE)
			FORV(REFLECT)
		}
		*y = ghash_vecs(*y, x, NV, c->hp);
		in += CHUNK;
		out += CHUNK;
	}
	/* opening hashes the ciphertext as it comes */
	for (; !enc && len >= CHUNK; in += CHUNK, out += CHUNK) {
		NEXT();
		FORV(LOAD)
		FORV(REFLECT)
		*y = ghash_vecs(*y, x, NV, c->hp);
		aes_step(c, b);
		FORV(XOR_STORE)
	}
	if (!len)
		return;
	/* the last len < CHUNK bytes: only the vectors they touch */
	nb = (len + 15) / 16;
	base = _mm512_add_epi32(base, _mm512_set_epi32(0, 0, 0, 4, 0, 0, 0, 3,
						       0, 0, 0, 2, 0, 0, 0, 1));
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
#undef LOAD
#undef REFLECT
#undef XOR_STORE
#undef NEXT
}

/* Encrypts or decrypts len bytes and computes the tag (spec §3.5). */
INLINE void gcm(const struct vctx *c, uint8_t *out, const uint8_t *in,
		size_t len, const uint8_t *iv, const uint8_t *aad,
		size_t aadlen, uint8_t tag[16], bool enc)
{
	/* J0 = GHASH(IV || 0^64 || [128]_64), reflected: IV * H^2 ^ L * H */
	__m128i lb = _mm_set_epi64x(0, 128);
	__m128i j0 = bswap128(_mm_loadu_si128((const __m128i *)iv));
	__m128i lo, hi, mid, y, ek0;

	lo = _mm_xor_si128(_mm_clmulepi64_si128(j0, c->hp[NB - 2], 0x00),
			   _mm_clmulepi64_si128(lb, c->hp[NB - 1], 0x00));
	hi = _mm_xor_si128(_mm_clmulepi64_si128(j0, c->hp[NB - 2], 0x11),
			   _mm_clmulepi64_si128(lb, c->hp[NB - 1], 0x11));
	mid = _mm_xor_si128(
		_mm_xor_si128(_mm_clmulepi64_si128(j0, c->hp[NB - 2], 0x01),
			      _mm_clmulepi64_si128(j0, c->hp[NB - 2], 0x10)),
		_mm_xor_si128(_mm_clmulepi64_si128(lb, c->hp[NB - 1], 0x01),
			      _mm_clmulepi64_si128(lb, c->hp[NB - 1], 0x10)));
	lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
	hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
	j0 = reduce(lo, hi);
	ek0 = aes_block(c, bswap128(j0));

	y = _mm_setzero_si128();
	if (aadlen)
		y = ghash_bytes(c, y, aad, aadlen);
	if (len)
		ctr_ghash(c, out, in, len, j0, &y, enc);
	/* the length block [len(A)]_64 || [len(C)]_64, reflected */
	y = _mm_xor_si128(y, _mm_set_epi64x((long long)(aadlen * 8),
					    (long long)(len * 8)));
	y = gfmul(y, c->hp[NB - 1]);
	_mm_storeu_si128((__m128i *)tag, _mm_xor_si128(bswap128(y), ek0));
}

/* ---- the backend -------------------------------------------------------- */

/* AVX-512 F/BW/VL, VAES, VPCLMULQDQ, AES-NI and PCLMULQDQ; VEILFS_NO_VAES
 * makes it behave as on a CPU without them (for tests). */
static bool cpu_ok(void)
{
	return cpu_has_all(CPU_AVX512 | CPU_VAES | CPU_VPCLMULQDQ | CPU_AES |
				   CPU_PCLMUL,
			   "VEILFS_NO_VAES");
}

static void vaes_free(void *ctx)
{
	secmem_free(ctx, sizeof(struct vctx)); /* wipes; NULL is a no-op */
}

TARGET static void vaes_setup(struct vctx *c, const uint8_t *key)
{
	__m128i rk[ROUNDS + 1], h;
	int rcon = 1;

	rk[0] = _mm_loadu_si128((const __m128i *)key);
	rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
	/* key i from keys i - 2 and i - 1: the last word of key i - 1 goes
	 * through SubWord, and for even i also RotWord and rcon */
	for (int i = 2; i <= ROUNDS; i++) {
		__m128i t = _mm_aeskeygenassist_si128(rk[i - 1], 0);

		if (i % 2 == 0) {
			t = _mm_xor_si128(_mm_shuffle_epi32(t, 0xff),
					  _mm_set1_epi32(rcon));
			rcon <<= 1;
		} else {
			t = _mm_shuffle_epi32(t, 0xaa);
		}
		rk[i] = expand(rk[i - 2], t);
	}
	for (int r = 0; r <= ROUNDS; r++)
		c->rk[r] = _mm512_broadcast_i32x4(rk[r]);
	secure_zero(rk, sizeof(rk));

	/* H = E_K(0^128); hp[NB - k] = H^k * x^-1 */
	h = bswap128(aes_block(c, _mm_setzero_si128()));
	c->hp[NB - 1] = div_x_vec(h);
	for (int k = 2; k <= NB; k++) {
		h = gfmul(h, c->hp[NB - 1]);
		c->hp[NB - k] = div_x_vec(h);
	}
}

static int vaes_new(void **out, const uint8_t *key)
{
	struct vctx *c;

	if (!cpu_ok())
		return -ENOTSUP;
	c = secmem_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	vaes_setup(c, key);
	aead_wipe_vregs(); /* the round keys */
	*out = c;
	return 0;
}

/* The counter has 32 bits (inc32): past AEAD_GCM_MAX bytes the key stream
 * would repeat. The AAD's bit length must fit in 64 bits. */
#define AAD_MAX ((size_t)((1ull << 61) - 1))

INLINE int seal_inl(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	if (ptlen > AEAD_GCM_MAX || aadlen > AAD_MAX)
		return -EIO;
	gcm(ctx, body, pt, ptlen, nonce, aad, aadlen, body + ptlen, true);
	return 0;
}

INLINE int open_inl(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	size_t len = bodylen - AEAD_TAG_LEN;
	uint8_t tag[16];
	int ok;

	if (len > AEAD_GCM_MAX || aadlen > AAD_MAX)
		return -EBADMSG;
	gcm(ctx, pt, body, len, nonce, aad, aadlen, tag, false);
	ok = ct_equal(tag, body + len, sizeof(tag));
	secure_zero(tag, sizeof(tag));
	return ok ? 0 : -EBADMSG;
}

/* The work, in functions of their own (the run loops of aead_impl.h,
 * compiled for the vector instructions so that seal and open inline into
 * them); the entry points then wipe the stack those frames used: round
 * keys, powers of H and key stream spilled from vector registers. */
#define NOINLINE TARGET static __attribute__((noinline))

NOINLINE int seal_w(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	return seal_inl(ctx, body, nonce, pt, ptlen, aad, aadlen);
}

NOINLINE int open_w(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	return open_inl(ctx, pt, nonce, body, bodylen, aad, aadlen);
}

NOINLINE int seal_run_w(void *ctx, const struct aead_run *r)
{
	return aead_run_seal(ctx, r, 16, seal_inl);
}

NOINLINE int open_run_w(void *ctx, const struct aead_run *r, size_t *bad)
{
	return aead_run_open(ctx, r, 16, AEAD_TAG_LEN, bad, open_inl);
}

static int vaes_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		     const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		     size_t aadlen)
{
	int rc = seal_w(ctx, body, nonce, pt, ptlen, aad, aadlen);

	aead_burn_stack();
	aead_wipe_vregs();
	return rc;
}

static int vaes_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		     const uint8_t *body, size_t bodylen, const uint8_t *aad,
		     size_t aadlen)
{
	int rc = open_w(ctx, pt, nonce, body, bodylen, aad, aadlen);

	aead_burn_stack();
	aead_wipe_vregs();
	return rc;
}

static int vaes_seal_run(void *ctx, const struct aead_run *r)
{
	int rc = seal_run_w(ctx, r);

	aead_burn_stack();
	aead_wipe_vregs();
	return rc;
}

static int vaes_open_run(void *ctx, const struct aead_run *r, size_t *bad)
{
	int rc = open_run_w(ctx, r, bad);

	aead_burn_stack();
	aead_wipe_vregs();
	return rc;
}

const struct aead_impl aead_gcm_vaes = {
	.name = "AES-GCM-256-VAES",
	.cipher = AEAD_AES_GCM_256,
	.key_len = 32,
	.nonce_len = 16,
	.tag_len = AEAD_TAG_LEN,
	.msg_max = AEAD_GCM_MAX,
	.ctx_new = vaes_new,
	.ctx_free = vaes_free,
	.seal = vaes_seal,
	.open = vaes_open,
	.seal_run = vaes_seal_run,
	.open_run = vaes_open_run,
	.supported = cpu_ok,
	.needs = "VAES/AVX-512",
};
