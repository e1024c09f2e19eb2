/* SPDX-License-Identifier: MIT */
/*
 * XChaCha20-Poly1305 (spec §3.7, draft-irtf-cfrg-xchacha over RFC 8439) on
 * our own AVX-512 code. The message keystream runs 16 blocks at a time in
 * the vertical layout (one state word per 512-bit register, lane j = block
 * counter + j), transposed into 16 blocks of 64 bytes before the XOR; the
 * last, partial step uses masked loads and stores. HChaCha20 and the
 * Poly1305 key block (counter 0) are single blocks with the state's rows
 * in four 128-bit registers; the key block's rounds run inside the first
 * 16-block step, where its dependency chain costs little. A run of blocks
 * (seal_run/open_run) derives the subkeys and key blocks of up to 16
 * messages at once in the vertical layout instead. Poly1305 works
 * on 64-bit limbs (mod 2^130 - 5) for the AAD, short tails and the length
 * block, and on eight lanes of three 44-bit limbs with the 52-bit
 * multiply-adds of AVX-512 IFMA for runs of at least 16 blocks: lane j
 * accumulates blocks j, j + 8, ... multiplied by r^8 each step, and the
 * last step multiplies lane j by r^(8-j) before the lanes are summed.
 * Nothing branches on secret data; the context (key, subkeys, Poly1305
 * keys, powers of r, keystream waiting for the MAC) is in locked memory,
 * and the entry points wipe the stack where the compiler spilled vector
 * registers. It can only be created on a CPU with AVX-512 F/BW/VL/IFMA
 * (-ENOTSUP otherwise, and also when the environment has
 * VEILFS_NO_AVX512_CHACHA, for tests of that case). The 32-bit block
 * counter limits a message to 256 GiB, far above any content block.
 */
#include "crypto/aead_impl.h"

#include "common/secmem.h"
#include "crypto/cpu.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

#define TARGET                                                               \
	__attribute__((target("avx512f,avx512bw,avx512vl,avx512ifma")))
#define INLINE static inline __attribute__((always_inline)) TARGET
/* small loops over registers, spelled out (GCC -O2 keeps some as loops
 * over arrays in memory) */
#define UNROLL _Pragma("GCC unroll 16")

#define M44 0xfffffffffffULL
#define M42 0x3ffffffffffULL
#define VEC_MIN_BLOCKS 16 /* Poly1305 blocks from which the lanes pay */

struct poly {
	uint64_t r0, r1, s1; /* clamped r, s1 = 5 * r1 / 4 */
	uint64_t h0, h1, h2; /* accumulator, h2 small */
	uint64_t pad0, pad1; /* s */
	/* limb i of r^(8-j) in pw[i][j], limbs 1 and 2 times 20 */
	uint64_t pw[3][8], pw20[2][8];
};

struct xctx {
	__m128i kb, kc; /* the key as rows 1 and 2 of the ChaCha state */
	struct poly p;	/* per-message scratch */
	/* the state of the 16-block steps (it holds the subkey), and when
	 * opening the first step's keystream */
	__m512i st[16], ks[16];
	/* runs: word w of message j's subkey in sub[w][j], of its Poly1305
	 * key (r || s) in pk[w][j] */
	uint32_t sub[8][16] __attribute__((aligned(64)));
	uint32_t pk[8][16] __attribute__((aligned(64)));
};

/* ---- ChaCha20, one block in four rows ------------------------------------ */

INLINE __m128i row0(void)
{
	return _mm_set_epi32(0x6b206574, 0x79622d32, 0x3320646e, 0x61707865);
}

#define QR_ROWS(a, b, c, d)                                                  \
	do {                                                                 \
		a = _mm_add_epi32(a, b);                                     \
		d = _mm_rol_epi32(_mm_xor_si128(d, a), 16);                  \
		c = _mm_add_epi32(c, d);                                     \
		b = _mm_rol_epi32(_mm_xor_si128(b, c), 12);                  \
		a = _mm_add_epi32(a, b);                                     \
		d = _mm_rol_epi32(_mm_xor_si128(d, a), 8);                   \
		c = _mm_add_epi32(c, d);                                     \
		b = _mm_rol_epi32(_mm_xor_si128(b, c), 7);                   \
	} while (0)

/* A double round on the rows a..d: column rounds, then diagonal rounds
 * with rows 1..3 rotated by one, two and three words. */
#define DOUBLE_ROUND_ROWS(a, b, c, d)                                        \
	do {                                                                 \
		QR_ROWS(a, b, c, d);                                         \
		b = _mm_shuffle_epi32(b, 0x39);                              \
		c = _mm_shuffle_epi32(c, 0x4e);                              \
		d = _mm_shuffle_epi32(d, 0x93);                              \
		QR_ROWS(a, b, c, d);                                         \
		b = _mm_shuffle_epi32(b, 0x93);                              \
		c = _mm_shuffle_epi32(c, 0x4e);                              \
		d = _mm_shuffle_epi32(d, 0x39);                              \
	} while (0)

/* Ten double rounds on the rows r[0..3], without the feed-forward
 * (HChaCha20). */
INLINE void rounds_rows(__m128i r[4])
{
	__m128i x = r[0], y = r[1], z = r[2], w = r[3];

	for (int i = 0; i < 10; i++)
		DOUBLE_ROUND_ROWS(x, y, z, w);
	r[0] = x, r[1] = y, r[2] = z, r[3] = w;
}

/* ---- ChaCha20, 16 blocks in the vertical layout -------------------------- */

#define QR_V(a, b, c, d)                                                     \
	do {                                                                 \
		x[a] = _mm512_add_epi32(x[a], x[b]);                         \
		x[d] = _mm512_rol_epi32(_mm512_xor_si512(x[d], x[a]), 16);   \
		x[c] = _mm512_add_epi32(x[c], x[d]);                         \
		x[b] = _mm512_rol_epi32(_mm512_xor_si512(x[b], x[c]), 12);   \
		x[a] = _mm512_add_epi32(x[a], x[b]);                         \
		x[d] = _mm512_rol_epi32(_mm512_xor_si512(x[d], x[a]), 8);    \
		x[c] = _mm512_add_epi32(x[c], x[d]);                         \
		x[b] = _mm512_rol_epi32(_mm512_xor_si512(x[b], x[c]), 7);    \
	} while (0)

#define DOUBLE_ROUND_V()                                                     \
	do {                                                                 \
		QR_V(0, 4, 8, 12);                                           \
		QR_V(1, 5, 9, 13);                                           \
		QR_V(2, 6, 10, 14);                                          \
		QR_V(3, 7, 11, 15);                                          \
		QR_V(0, 5, 10, 15);                                          \
		QR_V(1, 6, 11, 12);                                          \
		QR_V(2, 7, 8, 13);                                           \
		QR_V(3, 4, 9, 14);                                           \
	} while (0)

/* Word i of a row, in all 16 lanes. */
INLINE __m512i bcast(__m128i row, int i)
{
	return _mm512_permutexvar_epi32(_mm512_set1_epi32(i),
					_mm512_castsi128_si512(row));
}

/* The 16 keystream blocks of the state s (lane j: counter + j), block b in
 * k[b]. With b1 (not NULL), also the block of the rows b1[0..3], in place:
 * its rounds, a chain of dependent operations, run between those of the
 * 16 blocks instead of on their own. */
INLINE void chacha16(__m512i k[16], const __m512i s[16], __m128i *b1)
{
	__m512i x[16], t[16], a[4][4];
	__m128i r0, r1, r2, r3;

	UNROLL
	for (int i = 0; i < 16; i++)
		x[i] = s[i];
	if (b1)
		r0 = b1[0], r1 = b1[1], r2 = b1[2], r3 = b1[3];
	for (int i = 0; i < 10; i++) {
		if (b1)
			DOUBLE_ROUND_ROWS(r0, r1, r2, r3);
		DOUBLE_ROUND_V();
	}
	if (b1) {
		b1[0] = _mm_add_epi32(b1[0], r0);
		b1[1] = _mm_add_epi32(b1[1], r1);
		b1[2] = _mm_add_epi32(b1[2], r2);
		b1[3] = _mm_add_epi32(b1[3], r3);
	}
	UNROLL
	for (int i = 0; i < 16; i++)
		x[i] = _mm512_add_epi32(x[i], s[i]);
	/* transpose: pairs of words, then groups of four words in each
	 * 128-bit lane (a[g][m] lane q = words 4g..4g+3 of block 4q + m),
	 * then the 128-bit lanes */
	UNROLL
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_epi32(x[i], x[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(x[i], x[i + 1]);
	}
	UNROLL
	for (int g = 0; g < 4; g++) {
		a[g][0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
		a[g][1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
		a[g][2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
		a[g][3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
	}
	UNROLL
	for (int m = 0; m < 4; m++) {
		__m512i s0 = _mm512_shuffle_i32x4(a[0][m], a[1][m], 0x88);
		__m512i s1 = _mm512_shuffle_i32x4(a[0][m], a[1][m], 0xdd);
		__m512i s2 = _mm512_shuffle_i32x4(a[2][m], a[3][m], 0x88);
		__m512i s3 = _mm512_shuffle_i32x4(a[2][m], a[3][m], 0xdd);

		k[m] = _mm512_shuffle_i32x4(s0, s2, 0x88);
		k[4 + m] = _mm512_shuffle_i32x4(s1, s3, 0x88);
		k[8 + m] = _mm512_shuffle_i32x4(s0, s2, 0xdd);
		k[12 + m] = _mm512_shuffle_i32x4(s1, s3, 0xdd);
	}
}

/* The state of the 16-block steps under the key rows kb, kc and the row d
 * (counter word ignored): lane j has block counter 1 + j. */
INLINE void state16(__m512i s[16], __m128i kb, __m128i kc, __m128i d)
{
	__m128i r0 = row0();

	UNROLL
	for (int i = 0; i < 4; i++) {
		s[i] = bcast(r0, i);
		s[4 + i] = bcast(kb, i);
		s[8 + i] = bcast(kc, i);
		s[12 + i] = bcast(d, i);
	}
	s[12] = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
				 3, 2, 1);
}

/* out = in ^ k for len <= 1024 bytes (masked below 1024). */
INLINE void xor16(uint8_t *out, const uint8_t *in, size_t len,
		  const __m512i k[16])
{
	if (len >= 1024) {
		UNROLL
		for (int b = 0; b < 16; b++)
			_mm512_storeu_si512(
				out + 64 * b,
				_mm512_xor_si512(
					k[b], _mm512_loadu_si512(in + 64 * b)));
		return;
	}
	UNROLL
	for (int b = 0; b < 16; b++) {
		size_t off = 64 * (size_t)b;
		__mmask64 m;

		if (off >= len)
			break;
		m = len - off >= 64 ? ~(__mmask64)0
				    : ((__mmask64)1 << (len - off)) - 1;
		_mm512_mask_storeu_epi8(
			out + off, m,
			_mm512_xor_si512(k[b],
					 _mm512_maskz_loadu_epi8(m, in + off)));
	}
}

/* out = in ^ the keystream of the steps from s on, len bytes. */
INLINE void chacha_xor(uint8_t *out, const uint8_t *in, size_t len,
		       __m512i s[16])
{
	__m512i k[16];

	for (; len; s[12] = _mm512_add_epi32(s[12], _mm512_set1_epi32(16))) {
		size_t n = len < 1024 ? len : 1024;

		chacha16(k, s, NULL);
		xor16(out, in, n, k);
		out += n, in += n, len -= n;
	}
}

/* ---- Poly1305 ------------------------------------------------------------ */

typedef unsigned __int128 u128;

INLINE uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8); /* x86: little-endian */
	return v;
}

INLINE uint32_t le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* h = h * r mod 2^130 - 5, partly reduced (h2 <= 4); h2 may be up to 2^6. */
static inline __attribute__((always_inline)) void
mul_r(uint64_t *h0, uint64_t *h1, uint64_t *h2, uint64_t r0, uint64_t r1,
      uint64_t s1)
{
	u128 d0 = (u128)*h0 * r0 + (u128)*h1 * s1;
	u128 d1 = (u128)*h0 * r1 + (u128)*h1 * r0 + (u128)*h2 * s1;
	uint64_t d2 = *h2 * r0, c;

	d1 += (uint64_t)(d0 >> 64);
	d2 += (uint64_t)(d1 >> 64);
	/* bits 130 and up, times 5, back into the bottom */
	c = (d2 >> 2) + (d2 & ~(uint64_t)3);
	d0 = (u128)(uint64_t)d0 + c;
	*h0 = (uint64_t)d0;
	d1 = (u128)(uint64_t)d1 + (uint64_t)(d0 >> 64);
	*h1 = (uint64_t)d1;
	*h2 = (d2 & 3) + (uint64_t)(d1 >> 64);
}

/* n whole blocks at m, each with 2^128 added (hibit) or not. */
TARGET static void poly_blocks(struct poly *p, const uint8_t *m, size_t n,
			uint64_t hibit)
{
	uint64_t h0 = p->h0, h1 = p->h1, h2 = p->h2;

	for (; n; n--, m += 16) {
		u128 t = (u128)h0 + le64(m);

		h0 = (uint64_t)t;
		t = (u128)h1 + le64(m + 8) + (uint64_t)(t >> 64);
		h1 = (uint64_t)t;
		h2 += (uint64_t)(t >> 64) + hibit;
		mul_r(&h0, &h1, &h2, p->r0, p->r1, p->s1);
	}
	p->h0 = h0, p->h1 = h1, p->h2 = h2;
}

/* h mod 2^130 - 5, fully reduced, branch-free (any h2 < 2^62: after the
 * partial reduction h < 2^130 + 2^66 < 2p, so one subtraction of p is
 * enough). */
TARGET static void poly_full(uint64_t h[3])
{
	uint64_t c = (h[2] >> 2) + (h[2] & ~(uint64_t)3), g0, g1, g2, mask;
	u128 t;

	h[2] &= 3;
	t = (u128)h[0] + c;
	h[0] = (uint64_t)t;
	t = (u128)h[1] + (uint64_t)(t >> 64);
	h[1] = (uint64_t)t;
	h[2] += (uint64_t)(t >> 64);
	/* g = h + 5 - 2^130; take it if it does not borrow (h >= p) */
	t = (u128)h[0] + 5;
	g0 = (uint64_t)t;
	t = (u128)h[1] + (uint64_t)(t >> 64);
	g1 = (uint64_t)t;
	g2 = h[2] + (uint64_t)(t >> 64);
	mask = 0 - (g2 >> 2); /* all ones when g >= 2^130 */
	h[0] = (h[0] & ~mask) | (g0 & mask);
	h[1] = (h[1] & ~mask) | (g1 & mask);
	h[2] = (h[2] & ~mask) | ((g2 & 3) & mask);
}

/* The powers r^1..r^8 as 44-bit limbs (lane j = r^(8-j)) into p->pw, and
 * limbs 1 and 2 times 20 (2^132 = 20 mod p) into p->pw20. */
TARGET static void poly_powers(struct poly *p)
{
	uint64_t h[3] = { p->r0, p->r1, 0 };

	for (int k = 1; k <= 8; k++) {
		uint64_t f[3];
		int j = 8 - k;

		if (k > 1)
			mul_r(&h[0], &h[1], &h[2], p->r0, p->r1, p->s1);
		f[0] = h[0], f[1] = h[1], f[2] = h[2];
		poly_full(f);
		p->pw[0][j] = f[0] & M44;
		p->pw[1][j] = ((f[0] >> 44) | (f[1] << 20)) & M44;
		p->pw[2][j] = (f[1] >> 24) | (f[2] << 40); /* < 2^42 */
		p->pw20[0][j] = 20 * p->pw[1][j];
		p->pw20[1][j] = 20 * p->pw[2][j];
	}
}

/* a = a * r lane-wise with IFMA (r as limbs, r20 = limbs 1 and 2 times
 * 20), with one round of carries: limbs end below 2^44 + 2^15 (limb 2:
 * 2^42 + 2^12), so that adding a message keeps every input of the 52-bit
 * multipliers below 2^46 and every product below 2^95. */
INLINE void mul_v(__m512i a[3], const __m512i r[3], const __m512i r20[2])
{
	__m512i z = _mm512_setzero_si512();
	__m512i m44 = _mm512_set1_epi64((long long)M44);
	__m512i m42 = _mm512_set1_epi64((long long)M42);
	__m512i l0, l1, l2, h0, h1, h2, c0, c1, c2;

	/* limb k of the product: bits 0..51 in lk, bits 52..103 in hk */
#define LO(x, y, acc) _mm512_madd52lo_epu64((acc), (x), (y))
#define HI(x, y, acc) _mm512_madd52hi_epu64((acc), (x), (y))
	l0 = LO(a[2], r20[0], LO(a[1], r20[1], LO(a[0], r[0], z)));
	h0 = HI(a[2], r20[0], HI(a[1], r20[1], HI(a[0], r[0], z)));
	l1 = LO(a[2], r20[1], LO(a[1], r[0], LO(a[0], r[1], z)));
	h1 = HI(a[2], r20[1], HI(a[1], r[0], HI(a[0], r[1], z)));
	l2 = LO(a[2], r[0], LO(a[1], r[1], LO(a[0], r[2], z)));
	h2 = HI(a[2], r[0], HI(a[1], r[1], HI(a[0], r[2], z)));
#undef LO
#undef HI
	/* 2^52 is 8 bits into the next limb; 2^(88+52) = 5 * 2^10 mod p */
	l1 = _mm512_add_epi64(l1, _mm512_slli_epi64(h0, 8));
	l2 = _mm512_add_epi64(l2, _mm512_slli_epi64(h1, 8));
	l0 = _mm512_add_epi64(l0, _mm512_add_epi64(_mm512_slli_epi64(h2, 12),
						   _mm512_slli_epi64(h2, 10)));
	c0 = _mm512_srli_epi64(l0, 44);
	c1 = _mm512_srli_epi64(l1, 44);
	c2 = _mm512_srli_epi64(l2, 42);
	a[0] = _mm512_add_epi64(_mm512_and_si512(l0, m44),
				_mm512_add_epi64(c2, _mm512_slli_epi64(c2, 2)));
	a[1] = _mm512_add_epi64(_mm512_and_si512(l1, m44), c0);
	a[2] = _mm512_add_epi64(_mm512_and_si512(l2, m42), c1);
}

/* a += the eight blocks at m (lane j: block j) as 44-bit limbs, 2^128
 * added to each. */
INLINE void add_msg(__m512i a[3], const uint8_t *m)
{
	__m512i x = _mm512_loadu_si512(m), y = _mm512_loadu_si512(m + 64);
	__m512i lo = _mm512_permutex2var_epi64(
		x, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), y);
	__m512i hi = _mm512_permutex2var_epi64(
		x, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), y);
	__m512i m44 = _mm512_set1_epi64((long long)M44);

	a[0] = _mm512_add_epi64(a[0], _mm512_and_si512(lo, m44));
	a[1] = _mm512_add_epi64(
		a[1],
		_mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(lo, 44),
						 _mm512_slli_epi64(hi, 20)),
				 m44));
	a[2] = _mm512_add_epi64(
		a[2], _mm512_or_si512(_mm512_srli_epi64(hi, 24),
				      _mm512_set1_epi64(1LL << 40)));
}

/* n whole blocks at m with 2^128 each, n a multiple of 8, n >= 16. */
INLINE void poly_blocks_vec(struct poly *p, const uint8_t *m, size_t n)
{
	__m512i a[3], r[3], r20[2], r8[3], r820[2];
	uint64_t l[3], h0, h1, h2;
	u128 t;

	poly_powers(p);
	UNROLL
	for (int i = 0; i < 3; i++) {
		r[i] = _mm512_loadu_si512(p->pw[i]);
		r8[i] = _mm512_set1_epi64((long long)p->pw[i][0]);
	}
	UNROLL
	for (int i = 0; i < 2; i++) {
		r20[i] = _mm512_loadu_si512(p->pw20[i]);
		r820[i] = _mm512_set1_epi64((long long)p->pw20[i][0]);
	}
	/* h (h2 <= 4) into lane 0 */
	a[0] = _mm512_maskz_mov_epi64(
		1, _mm512_set1_epi64((long long)(p->h0 & M44)));
	a[1] = _mm512_maskz_mov_epi64(
		1, _mm512_set1_epi64(
			   (long long)(((p->h0 >> 44) | (p->h1 << 20)) & M44)));
	a[2] = _mm512_maskz_mov_epi64(
		1, _mm512_set1_epi64(
			   (long long)((p->h1 >> 24) | (p->h2 << 40))));
	add_msg(a, m);
	for (n -= 8, m += 128; n; n -= 8, m += 128) {
		mul_v(a, r8, r820);
		add_msg(a, m);
	}
	mul_v(a, r, r20);
	UNROLL
	for (int i = 0; i < 3; i++)
		l[i] = (uint64_t)_mm512_reduce_add_epi64(a[i]);
	/* limbs below 2^48 each: back to 64-bit limbs */
	t = (u128)l[0] + ((u128)l[1] << 44);
	h0 = (uint64_t)t;
	t = (t >> 64) + ((u128)l[2] << 24);
	h1 = (uint64_t)t;
	h2 = (uint64_t)(t >> 64);
	/* partial reduction: h2 <= 4 again */
	t = (u128)h0 + ((h2 >> 2) + (h2 & ~(uint64_t)3));
	p->h0 = (uint64_t)t;
	t = (u128)h1 + (uint64_t)(t >> 64);
	p->h1 = (uint64_t)t;
	p->h2 = (h2 & 3) + (uint64_t)(t >> 64);
}

/* len bytes at m zero-padded to whole blocks (RFC 8439 §2.8's pad16). */
INLINE void poly_pad16(struct poly *p, const uint8_t *m, size_t len)
{
	size_t n = len / 16;
	uint8_t last[16] = { 0 };

	if (n >= VEC_MIN_BLOCKS) {
		poly_blocks_vec(p, m, n & ~(size_t)7);
		m += 16 * (n & ~(size_t)7);
		n &= 7;
	}
	poly_blocks(p, m, n, 1);
	m += 16 * n;
	if (len % 16) {
		memcpy(last, m, len % 16);
		poly_blocks(p, last, 1, 1);
	}
}

/* tag = (h + s) mod 2^128 */
TARGET static void poly_tag(struct poly *p, uint8_t tag[16])
{
	uint64_t h[3] = { p->h0, p->h1, p->h2 };
	u128 t;

	poly_full(h);
	t = (u128)h[0] + p->pad0;
	h[0] = (uint64_t)t;
	h[1] += p->pad1 + (uint64_t)(t >> 64);
	memcpy(tag, &h[0], 8);
	memcpy(tag + 8, &h[1], 8);
}

/* ---- the AEAD ------------------------------------------------------------ */

/* The Poly1305 key r || s as 64-bit words; h = 0. */
INLINE void poly_key(struct poly *p, uint64_t r0, uint64_t r1, uint64_t s0,
		     uint64_t s1)
{
	p->r0 = r0 & 0x0ffffffc0fffffffULL;
	p->r1 = r1 & 0x0ffffffc0ffffffcULL;
	p->s1 = p->r1 + (p->r1 >> 2);
	p->pad0 = s0;
	p->pad1 = s1;
	p->h0 = p->h1 = p->h2 = 0;
}

/* RFC 8439 §2.8 with the Poly1305 key in c->p and s the state of the first
 * 16-block step (counters 1..16), whose keystream is in k0 if not NULL:
 * out = in ^ keystream (len bytes), tag over aad and the ciphertext (out
 * when sealing, in when opening). */
INLINE void chapoly_body(struct xctx *c, __m512i s[16], const __m512i *k0,
			 uint8_t *out, const uint8_t *in, size_t len,
			 const uint8_t *aad, size_t aadlen, uint8_t tag[16],
			 bool enc)
{
	size_t n = k0 ? (len < 1024 ? len : 1024) : 0;
	uint8_t lens[16];

	poly_pad16(&c->p, aad, aadlen);
	if (k0) {
		if (!enc) {
			/* in place, the MAC must read the ciphertext first:
			 * the first step's keystream waits in the context */
			UNROLL
			for (int i = 0; i < 16; i++)
				c->ks[i] = k0[i];
			k0 = c->ks;
			poly_pad16(&c->p, in, len);
		}
		xor16(out, in, n, k0);
		s[12] = _mm512_add_epi32(s[12], _mm512_set1_epi32(16));
	} else if (!enc) {
		poly_pad16(&c->p, in, len);
	}
	chacha_xor(out + n, in + n, len - n, s);
	if (enc)
		poly_pad16(&c->p, out, len);
	memcpy(lens, &aadlen, 8);
	memcpy(lens + 8, &len, 8);
	poly_blocks(&c->p, lens, 1, 1);
	poly_tag(&c->p, tag);
}

/* RFC 8439 §2.8 under the key rows kb, kc and the row d = counter 0 ||
 * nonce. Block 0 (the Poly1305 key) is computed with the first 16-block
 * step. */
INLINE void chapoly(struct xctx *c, __m128i kb, __m128i kc, __m128i d,
		    uint8_t *out, const uint8_t *in, size_t len,
		    const uint8_t *aad, size_t aadlen, uint8_t tag[16],
		    bool enc)
{
	__m128i b0[4] = { row0(), kb, kc, d };
	__m512i *s = c->st, k[16];

	state16(s, kb, kc, d);
	if (len) {
		chacha16(k, s, b0);
	} else {
		rounds_rows(b0);
		b0[0] = _mm_add_epi32(b0[0], row0());
		b0[1] = _mm_add_epi32(b0[1], kb);
	}
	poly_key(&c->p, (uint64_t)_mm_cvtsi128_si64(b0[0]),
		 (uint64_t)_mm_extract_epi64(b0[0], 1),
		 (uint64_t)_mm_cvtsi128_si64(b0[1]),
		 (uint64_t)_mm_extract_epi64(b0[1], 1));
	chapoly_body(c, s, len ? k : NULL, out, in, len, aad, aadlen, tag,
		     enc);
}

INLINE __m128i load_row(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* XChaCha20-Poly1305: subkey = HChaCha20(key, nonce[0:16]), inner nonce
 * 0^4 || nonce[16:24]. */
INLINE void xchapoly(struct xctx *c, const uint8_t *nonce, uint8_t *out,
		     const uint8_t *in, size_t len, const uint8_t *aad,
		     size_t aadlen, uint8_t tag[16], bool enc)
{
	__m128i r[4] = { row0(), c->kb, c->kc, load_row(nonce) };

	rounds_rows(r);
	chapoly(c, r[0], r[3],
		_mm_set_epi64x((long long)le64(nonce + 16), 0), out, in, len,
		aad, aadlen, tag, enc);
}

/* ---- the backend --------------------------------------------------------- */

/* AVX-512 F/BW/VL and IFMA; VEILFS_NO_AVX512_CHACHA makes it behave as on a
 * CPU without them (for tests). */
static bool cpu_ok(void)
{
	return cpu_has_all(CPU_AVX512 | CPU_AVX512IFMA,
			   "VEILFS_NO_AVX512_CHACHA");
}

static void xc5_free(void *ctx)
{
	secmem_free(ctx, sizeof(struct xctx)); /* wipes; NULL is a no-op */
}

static int xc5_new(void **out, const uint8_t *key)
{
	struct xctx *c;

	if (!cpu_ok())
		return -ENOTSUP;
	c = secmem_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(&c->kb, key, 16);
	memcpy(&c->kc, key + 16, 16);
	*out = c;
	return 0;
}

/* ---- the entry points: the work, then wiping the stack it used ----------- */

/* The work keeps vector registers it spills on the stack: ChaCha20 states
 * (from which the subkey can be computed back) and keystream, in frames of
 * 2.5 to 3.3 KiB with GCC 12 (-O2, -O3) and under 1.5 KiB with clang 14.
 * It runs in functions of its own (NOINLINE), and the entry points then
 * overwrite AEAD_BURN_BYTES of stack below their own frame, where those
 * frames were (about 3% of a 4 KiB seal; test:
 * no_subkey_left_on_stack_or_in_registers), and clear the registers.
 * Not in unoptimised builds, whose frames are far larger (up to 1.3 MiB
 * with clang -O0 and AddressSanitizer). They also clear what the context
 * keeps of the message (state, key stream, Poly1305 keys, subkeys): 53
 * vector stores, once per call or run. */
#define NOINLINE TARGET static __attribute__((noinline))

NOINLINE void clear_msg(struct xctx *c)
{
	uint8_t *p = (uint8_t *)&c->p;
	size_t n = sizeof(*c) - offsetof(struct xctx, p), i;

	for (i = 0; i + 64 <= n; i += 64)
		_mm512_storeu_si512(p + i, _mm512_setzero_si512());
	memset(p + i, 0, n - i);
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void burn(void *ctx)
{
	clear_msg(ctx);
	aead_burn_stack();
	aead_wipe_vregs();
}

NOINLINE void seal_w(void *ctx, uint8_t *body, const uint8_t *nonce,
		     const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		     size_t aadlen)
{
	xchapoly(ctx, nonce, body, pt, ptlen, aad, aadlen, body + ptlen, true);
}

NOINLINE void open_w(void *ctx, uint8_t *pt, const uint8_t *nonce,
		     const uint8_t *body, size_t len, const uint8_t *aad,
		     size_t aadlen, uint8_t tag[16])
{
	xchapoly(ctx, nonce, pt, body, len, aad, aadlen, tag, false);
}

static int xc5_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	if (ptlen > AEAD_CHACHA_MAX)
		return -EIO;
	seal_w(ctx, body, nonce, pt, ptlen, aad, aadlen);
	burn(ctx);
	return 0;
}

static int xc5_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	size_t len = bodylen - AEAD_TAG_LEN;
	uint8_t tag[16];
	int ok;

	if (len > AEAD_CHACHA_MAX)
		return -EBADMSG;
	open_w(ctx, pt, nonce, body, len, aad, aadlen, tag);
	burn(ctx);
	ok = ct_equal(tag, body + len, sizeof(tag));
	secure_zero(tag, sizeof(tag));
	return ok ? 0 : -EBADMSG;
}

/* ---- runs ---------------------------------------------------------------- */

#define RUN_KEYS_MIN 4 /* messages from which keys16() pays */
/* keys16() gathers the nonces at 32-bit signed offsets j * stride (j <= 15,
 * plus 20 bytes): runs with a larger stride go message by message. */
#define KEYS16_MAX_STRIDE ((size_t)(INT32_MAX - 24) / 15)

/* The subkeys and Poly1305 keys of m <= 16 messages whose nonces are at
 * nonce + j * stride (j < m), into c->sub and c->pk: HChaCha20 and then
 * block 0 of ChaCha20 for all of them at once in the vertical layout
 * (lanes past m repeat the last message). */
INLINE void keys16(struct xctx *c, const uint8_t *nonce, size_t stride,
		   size_t m)
{
	__m512i x[16], *in = c->st, nw[6], vidx;
	__m128i r0 = row0();
	int idx[16];

	UNROLL
	for (int j = 0; j < 16; j++)
		idx[j] = (int)((size_t)j < m ? (size_t)j * stride
					     : (m - 1) * stride);
	vidx = _mm512_loadu_si512(idx);
	UNROLL
	for (int w = 0; w < 6; w++)
		nw[w] = _mm512_i32gather_epi32(vidx, nonce + 4 * w, 1);
	/* HChaCha20: no feed-forward; words 0..3 and 12..15 */
	UNROLL
	for (int i = 0; i < 4; i++) {
		x[i] = bcast(r0, i);
		x[4 + i] = bcast(c->kb, i);
		x[8 + i] = bcast(c->kc, i);
		x[12 + i] = nw[i];
	}
	for (int i = 0; i < 10; i++)
		DOUBLE_ROUND_V();
	/* block 0 under the subkey, nonce 0^4 || nonce[16:24] */
	UNROLL
	for (int i = 0; i < 4; i++) {
		in[4 + i] = x[i];
		in[8 + i] = x[12 + i];
		in[i] = bcast(r0, i);
	}
	in[12] = in[13] = _mm512_setzero_si512();
	in[14] = nw[4];
	in[15] = nw[5];
	UNROLL
	for (int i = 0; i < 8; i++)
		_mm512_store_si512(c->sub[i], in[4 + i]);
	UNROLL
	for (int i = 0; i < 16; i++)
		x[i] = in[i];
	for (int i = 0; i < 10; i++)
		DOUBLE_ROUND_V();
	UNROLL
	for (int i = 0; i < 8; i++)
		_mm512_store_si512(c->pk[i], _mm512_add_epi32(x[i], in[i]));
}

INLINE uint64_t pk64(const struct xctx *c, int w, size_t j)
{
	return (uint64_t)c->pk[w][j] | (uint64_t)c->pk[w + 1][j] << 32;
}

/* Message j of the last keys16(), nonce at nonce. */
INLINE void chapoly_keyed(struct xctx *c, size_t j, const uint8_t *nonce,
			  uint8_t *out, const uint8_t *in, size_t len,
			  const uint8_t *aad, uint8_t tag[16], bool enc)
{
	__m512i *s = c->st;
	__m128i r0 = row0();

	UNROLL
	for (int i = 0; i < 4; i++)
		s[i] = bcast(r0, i);
	UNROLL
	for (int i = 0; i < 8; i++)
		s[4 + i] = _mm512_set1_epi32((int)c->sub[i][j]);
	s[12] = _mm512_set_epi32(16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
				 3, 2, 1);
	s[13] = _mm512_setzero_si512();
	s[14] = _mm512_set1_epi32((int)le32(nonce + 16));
	s[15] = _mm512_set1_epi32((int)le32(nonce + 20));
	poly_key(&c->p, pk64(c, 0, j), pk64(c, 2, j), pk64(c, 4, j),
		 pk64(c, 6, j));
	chapoly_body(c, s, NULL, out, in, len, aad, 24, tag, enc);
}

/* The runs, with the keys of up to 16 messages derived together; a group
 * of fewer than RUN_KEYS_MIN goes message by message. */
NOINLINE void seal_run_w(struct xctx *c, const struct aead_run *r)
{
	uint8_t aad[24];

	memcpy(aad + 8, r->file_id, 16);
	for (size_t g = 0; g < r->n; g += 16) {
		size_t m = r->n - g < 16 ? r->n - g : 16;
		uint8_t *blk = r->cipher_out + g * r->cbs;

		bool vec = m >= RUN_KEYS_MIN && r->cbs <= KEYS16_MAX_STRIDE;

		if (vec)
			keys16(c, blk, r->cbs, m);
		for (size_t j = 0; j < m; j++, blk += r->cbs) {
			size_t i = g + j;
			size_t len = i + 1 < r->n ? r->bs : r->last_len;
			const uint8_t *pt = r->plain_in + i * r->bs;

			aead_run_aad(aad, r, i);
			if (vec)
				chapoly_keyed(c, j, blk, blk + 24, pt, len,
					      aad, blk + 24 + len, true);
			else
				xchapoly(c, blk, blk + 24, pt, len, aad, 24,
					 blk + 24 + len, true);
		}
	}
}

NOINLINE int open_run_w(struct xctx *c, const struct aead_run *r,
		       size_t *bad)
{
	uint8_t aad[24], tag[16];

	memcpy(aad + 8, r->file_id, 16);
	for (size_t g = 0; g < r->n; g += 16) {
		size_t m = r->n - g < 16 ? r->n - g : 16;
		const uint8_t *blk = r->cipher_in + g * r->cbs;

		bool vec = m >= RUN_KEYS_MIN && r->cbs <= KEYS16_MAX_STRIDE;

		if (vec)
			keys16(c, blk, r->cbs, m);
		for (size_t j = 0; j < m; j++, blk += r->cbs) {
			size_t i = g + j;
			size_t len = i + 1 < r->n ? r->bs : r->last_len;
			uint8_t *pt = r->plain_out + i * r->bs;
			int ok;

			aead_run_aad(aad, r, i);
			if (vec)
				chapoly_keyed(c, j, blk, pt, blk + 24, len,
					      aad, tag, false);
			else
				xchapoly(c, blk, pt, blk + 24, len, aad, 24,
					 tag, false);
			ok = ct_equal(tag, blk + 24 + len, sizeof(tag));
			if (!ok) {
				secure_zero(tag, sizeof(tag));
				*bad = i;
				return -EBADMSG;
			}
		}
	}
	secure_zero(tag, sizeof(tag));
	return 0;
}

static int xc5_seal_run(void *ctx, const struct aead_run *r)
{
	if (r->bs > AEAD_CHACHA_MAX || r->last_len > AEAD_CHACHA_MAX)
		return -EIO;
	seal_run_w(ctx, r);
	burn(ctx);
	return 0;
}

static int xc5_open_run(void *ctx, const struct aead_run *r, size_t *bad)
{
	int rc;

	if (r->bs > AEAD_CHACHA_MAX || r->last_len > AEAD_CHACHA_MAX) {
		*bad = 0;
		return -EBADMSG;
	}
	rc = open_run_w(ctx, r, bad);
	burn(ctx);
	return rc;
}

const struct aead_impl aead_xchacha_avx512 = {
	.name = "XChaCha20-Poly1305-AVX512",
	.cipher = AEAD_XCHACHA20_POLY1305,
	.key_len = 32,
	.nonce_len = 24,
	.tag_len = AEAD_TAG_LEN,
	.msg_max = AEAD_CHACHA_MAX,
	.ctx_new = xc5_new,
	.ctx_free = xc5_free,
	.seal = xc5_seal,
	.open = xc5_open,
	.seal_run = xc5_seal_run,
	.open_run = xc5_open_run,
	.supported = cpu_ok,
	.needs = "AVX-512 IFMA",
	.reference = &aead_xchacha_ossl,
};

/* ---- test hooks ---------------------------------------------------------- */

/* The workers run only after cpu_ok(): code built for AVX-512 may use it
 * from its first instruction (zeroing a local array), so the exported
 * hooks themselves are plain code. */
NOINLINE int test_poly1305_w(uint8_t tag[16], const uint8_t key[32],
			     const uint8_t *msg, size_t len)
{
	struct xctx *c;
	size_t n = len / 16;
	uint8_t last[16] = { 0 };

	c = secmem_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	poly_key(&c->p, le64(key), le64(key + 8), le64(key + 16),
		 le64(key + 24));
	if (n >= VEC_MIN_BLOCKS) {
		poly_blocks_vec(&c->p, msg, n & ~(size_t)7);
		msg += 16 * (n & ~(size_t)7);
		n &= 7;
	}
	poly_blocks(&c->p, msg, n, 1);
	msg += 16 * n;
	if (len % 16) {
		/* the last partial block gets a 1 byte instead of 2^128 */
		memcpy(last, msg, len % 16);
		last[len % 16] = 1;
		poly_blocks(&c->p, last, 1, 0);
	}
	poly_tag(&c->p, tag);
	xc5_free(c);
	return 0;
}

int xchacha_avx512_test_poly1305(uint8_t tag[16], const uint8_t key[32],
				 const uint8_t *msg, size_t len)
{
	if (!cpu_ok())
		return -ENOTSUP;
	return test_poly1305_w(tag, key, msg, len);
}

NOINLINE void test_chapoly_w(struct xctx *c, uint8_t *out,
			     const uint8_t nonce[12], const uint8_t *pt,
			     size_t len, const uint8_t *aad, size_t aadlen)
{
	uint8_t row[16] = { 0 };

	memcpy(row + 4, nonce, 12);
	chapoly(c, c->kb, c->kc, load_row(row), out, pt, len, aad, aadlen,
		out + len, true);
}

int xchacha_avx512_test_chapoly(uint8_t *out, const uint8_t key[32],
				const uint8_t nonce[12], const uint8_t *pt,
				size_t len, const uint8_t *aad, size_t aadlen)
{
	struct xctx *c;
	int rc = xc5_new((void **)&c, key);

	if (rc)
		return rc;
	test_chapoly_w(c, out, nonce, pt, len, aad, aadlen);
	xc5_free(c);
	return 0;
}
