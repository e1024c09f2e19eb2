/* SPDX-License-Identifier: MIT */
/*
 * What our two VAES AES-256-GCM backends share (gcm_vaes.c on AVX-512,
 * gcm_vaes_avx2.c on AVX2): the GF(2^128) arithmetic on single reflected
 * blocks, the AES-256 key schedule, the powers of H, J0 and the final
 * length block, AES on the includer's vectors, and the backend's entry
 * points. Included by each after it has defined TARGET, INLINE, ROUNDS,
 * struct vctx and its vector: vec, LANES (blocks per vector), NV, NB,
 * CHUNK, FORV; V_XOR, V_ADD32, V_LOADU, V_STOREU, V_AESENC, V_AESENCLAST,
 * V_CAST128 (the first block), V_BCAST (a block in every lane), V_CTR(a)
 * (lane j holds a + j + 1 in its low 32 bits) and V_EACH(n) (n in every
 * lane's low 32 bits). Its functions are compiled with the includer's
 * target. GHASH works on byte-reflected
 * blocks, in which the field product of a and b is a Montgomery-style
 * reduction of the carry-less product of a and b * x^-1; that is why the
 * powers of H are stored divided by x.
 */
#ifndef CRYPTO_GCM_VAES_COMMON_H
#define CRYPTO_GCM_VAES_COMMON_H

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

/* hp[n - k] = H^k * x^-1 for k = 1..n, h = H reflected. */
INLINE void hpowers(__m128i *hp, int n, __m128i h)
{
	hp[n - 1] = div_x_vec(h);
	for (int k = 2; k <= n; k++) {
		h = gfmul(h, hp[n - 1]);
		hp[n - k] = div_x_vec(h);
	}
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

/* The ROUNDS + 1 round keys of AES-256 key (the caller wipes rk). */
INLINE void aes256_expand(__m128i rk[ROUNDS + 1], const uint8_t *key)
{
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
}

/* J0 = GHASH(IV || 0^64 || [128]_64), reflected: IV * H^2 ^ L * H, with
 * h2 = H^2 * x^-1 and h1 = H * x^-1. */
INLINE __m128i gcm_j0(const uint8_t *iv, __m128i h2, __m128i h1)
{
	__m128i lb = _mm_set_epi64x(0, 128);
	__m128i j0 = bswap128(_mm_loadu_si128((const __m128i *)iv));
	__m128i lo, hi, mid;

	lo = _mm_xor_si128(_mm_clmulepi64_si128(j0, h2, 0x00),
			   _mm_clmulepi64_si128(lb, h1, 0x00));
	hi = _mm_xor_si128(_mm_clmulepi64_si128(j0, h2, 0x11),
			   _mm_clmulepi64_si128(lb, h1, 0x11));
	mid = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(j0, h2, 0x01),
					  _mm_clmulepi64_si128(j0, h2, 0x10)),
			    _mm_xor_si128(_mm_clmulepi64_si128(lb, h1, 0x01),
					  _mm_clmulepi64_si128(lb, h1, 0x10)));
	lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
	hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
	return reduce(lo, hi);
}

/* The hash y after the length block [len(A)]_64 || [len(C)]_64, reflected. */
INLINE __m128i gcm_final(__m128i y, size_t aadlen, size_t len, __m128i h1)
{
	y = _mm_xor_si128(y, _mm_set_epi64x((long long)(aadlen * 8),
					    (long long)(len * 8)));
	return gfmul(y, h1);
}

/* ---- AES on the includer's vectors ---- */

/* AES-256 on one block. */
INLINE __m128i aes_block(const struct vctx *c, __m128i b)
{
	b = _mm_xor_si128(b, V_CAST128(c->rk[0]));
	for (int r = 1; r < ROUNDS; r++)
		b = _mm_aesenc_si128(b, V_CAST128(c->rk[r]));
	return _mm_aesenclast_si128(b, V_CAST128(c->rk[ROUNDS]));
}

/* AES-256 on the NV vectors of a step. */
INLINE void aes_step(const struct vctx *c, vec b[NV])
{
	vec k = c->rk[0];

#define XK(i) b[i] = V_XOR(b[i], k);
#define ENC(i) b[i] = V_AESENC(b[i], k);
#define ENCLAST(i) b[i] = V_AESENCLAST(b[i], k);
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

/* AES-256 on one vector. */
INLINE vec aes_x1(const struct vctx *c, vec b)
{
	b = V_XOR(b, c->rk[0]);
	for (int r = 1; r < ROUNDS; r++)
		b = V_AESENC(b, c->rk[r]);
	return V_AESENCLAST(b, c->rk[ROUNDS]);
}

/* The counter has 32 bits (inc32): past AEAD_GCM_MAX bytes the key stream
 * would repeat. The AAD's bit length must fit in 64 bits. */
#define GCM_AAD_MAX ((size_t)((1ull << 61) - 1))

/* The backend var named impl_name, needing what needs names, on the
 * includer's cpu_ok, vaes_setup and gcm; wipe clears the vector registers
 * the includer's code can use. The work runs in functions of their own
 * (the run loops of aead_impl.h, compiled for the vector instructions so
 * that seal and open inline into them); the entry points then wipe the
 * stack those frames used: round keys, powers of H and key stream spilled
 * from vector registers. */
#define GCM_VAES_BACKEND(var, impl_name, needs_what, wipe)                  \
	static void vaes_free(void *ctx)                                    \
	{                                                                   \
		secmem_free(ctx, sizeof(struct vctx)); /* wipes */          \
	}                                                                   \
	static int vaes_new(void **out, const uint8_t *key)                 \
	{                                                                   \
		struct vctx *c;                                             \
		if (!cpu_ok())                                              \
			return -ENOTSUP;                                    \
		c = secmem_alloc(sizeof(*c));                               \
		if (!c)                                                     \
			return -ENOMEM;                                     \
		vaes_setup(c, key);                                         \
		wipe(); /* the round keys */                                \
		*out = c;                                                   \
		return 0;                                                   \
	}                                                                   \
	INLINE int seal_inl(void *ctx, uint8_t *body, const uint8_t *nonce, \
			    const uint8_t *pt, size_t ptlen,                \
			    const uint8_t *aad, size_t aadlen)              \
	{                                                                   \
		if (ptlen > AEAD_GCM_MAX || aadlen > GCM_AAD_MAX)           \
			return -EIO;                                        \
		gcm(ctx, body, pt, ptlen, nonce, aad, aadlen, body + ptlen, \
		    true);                                                  \
		return 0;                                                   \
	}                                                                   \
	INLINE int open_inl(void *ctx, uint8_t *pt, const uint8_t *nonce,   \
			    const uint8_t *body, size_t bodylen,            \
			    const uint8_t *aad, size_t aadlen)              \
	{                                                                   \
		size_t len = bodylen - AEAD_TAG_LEN;                        \
		uint8_t tag[16];                                            \
		int ok;                                                     \
		if (len > AEAD_GCM_MAX || aadlen > GCM_AAD_MAX)             \
			return -EBADMSG;                                    \
		gcm(ctx, pt, body, len, nonce, aad, aadlen, tag, false);    \
		ok = ct_equal(tag, body + len, sizeof(tag));                \
		secure_zero(tag, sizeof(tag));                              \
		return ok ? 0 : -EBADMSG;                                   \
	}                                                                   \
	TARGET static __attribute__((noinline)) int seal_w(                 \
		void *ctx, uint8_t *body, const uint8_t *nonce,             \
		const uint8_t *pt, size_t ptlen, const uint8_t *aad,        \
		size_t aadlen)                                              \
	{                                                                   \
		return seal_inl(ctx, body, nonce, pt, ptlen, aad, aadlen);  \
	}                                                                   \
	TARGET static __attribute__((noinline)) int open_w(                 \
		void *ctx, uint8_t *pt, const uint8_t *nonce,               \
		const uint8_t *body, size_t bodylen, const uint8_t *aad,    \
		size_t aadlen)                                              \
	{                                                                   \
		return open_inl(ctx, pt, nonce, body, bodylen, aad, aadlen); \
	}                                                                   \
	TARGET static __attribute__((noinline)) int seal_run_w(             \
		void *ctx, const struct aead_run *r)                        \
	{                                                                   \
		return aead_run_seal(ctx, r, 16, seal_inl);                 \
	}                                                                   \
	TARGET static __attribute__((noinline)) int open_run_w(             \
		void *ctx, const struct aead_run *r, size_t *bad)           \
	{                                                                   \
		return aead_run_open(ctx, r, 16, AEAD_TAG_LEN, bad,         \
				     open_inl);                             \
	}                                                                   \
	static int vaes_seal(void *ctx, uint8_t *body, const uint8_t *nonce, \
			     const uint8_t *pt, size_t ptlen,               \
			     const uint8_t *aad, size_t aadlen)             \
	{                                                                   \
		int rc = seal_w(ctx, body, nonce, pt, ptlen, aad, aadlen);  \
		aead_burn_stack();                                          \
		wipe();                                                     \
		return rc;                                                  \
	}                                                                   \
	static int vaes_open(void *ctx, uint8_t *pt, const uint8_t *nonce,  \
			     const uint8_t *body, size_t bodylen,           \
			     const uint8_t *aad, size_t aadlen)             \
	{                                                                   \
		int rc = open_w(ctx, pt, nonce, body, bodylen, aad, aadlen); \
		aead_burn_stack();                                          \
		wipe();                                                     \
		return rc;                                                  \
	}                                                                   \
	static int vaes_seal_run(void *ctx, const struct aead_run *r)       \
	{                                                                   \
		int rc = seal_run_w(ctx, r);                                \
		aead_burn_stack();                                          \
		wipe();                                                     \
		return rc;                                                  \
	}                                                                   \
	static int vaes_open_run(void *ctx, const struct aead_run *r,       \
				 size_t *bad)                               \
	{                                                                   \
		int rc = open_run_w(ctx, r, bad);                           \
		aead_burn_stack();                                          \
		wipe();                                                     \
		return rc;                                                  \
	}                                                                   \
	const struct aead_impl var = {                                      \
		.name = (impl_name),                                        \
		.cipher = AEAD_AES_GCM_256,                                 \
		.key_len = 32,                                              \
		.nonce_len = 16,                                            \
		.tag_len = AEAD_TAG_LEN,                                    \
		.msg_max = AEAD_GCM_MAX,                                    \
		.ctx_new = vaes_new,                                        \
		.ctx_free = vaes_free,                                      \
		.seal = vaes_seal,                                          \
		.open = vaes_open,                                          \
		.seal_run = vaes_seal_run,                                  \
		.open_run = vaes_open_run,                                  \
		.supported = cpu_ok,                                        \
		.needs = (needs_what),                                      \
		.reference = &aead_gcm_ossl,                                \
	}

#endif
