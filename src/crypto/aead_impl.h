/* SPDX-License-Identifier: MIT */
/*
 * Private backend vtable of the content ciphers (include only in
 * src/crypto). A backend is one library's implementation of one cipher; it
 * creates a per-thread context keyed once and then seals and opens messages
 * on it, one at a time or as a run of consecutive blocks of one file. aead.c
 * owns the threads, nonces, the split of a batch over the worker pool and the
 * hole and zero-nonce rules; a backend sees message bodies (nonce passed
 * separately):
 *   GCM, XChaCha: body = C || tag(16);   SIV: body = SIV(16) || C.
 */
#ifndef CRYPTO_AEAD_IMPL_H
#define CRYPTO_AEAD_IMPL_H

#include "crypto/aead.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A run of n consecutive content blocks of one file (spec §3.2): block i
 * (0 <= i < n) is number first + i, its plaintext is at plain + i * bs
 * (bs bytes, the last one last_len bytes) and its ciphertext block at
 * cipher + i * cbs, cbs = nonce_len + bs + tag_len (the last one shorter).
 * The nonce is already in place at the start of every ciphertext block when
 * the backend is called; the AAD of block i is be64(first + i) || file_id. */
struct aead_run {
	uint8_t *plain_out;	    /* open: where plaintext goes */
	const uint8_t *plain_in;    /* seal: plaintext */
	uint8_t *cipher_out;	    /* seal: ciphertext blocks */
	const uint8_t *cipher_in;   /* open: ciphertext blocks */
	size_t n, bs, cbs, last_len;
	uint64_t first;
	const uint8_t *file_id; /* 16 bytes */
};

/* The longest message (plaintext, and AAD) each algorithm takes; a backend
 * refuses more (seal -EIO, open -EBADMSG), as OpenSSL does. GCM: 2^32 - 2
 * counter blocks (SP 800-38D §5.2.1.1); ChaCha20-Poly1305: 2^32 - 1 blocks
 * of 64 bytes (RFC 8439 §2.8); the OpenSSL EVP calls take int lengths. */
#define AEAD_GCM_MAX ((size_t)((1ull << 36) - 32))
#define AEAD_CHACHA_MAX ((size_t)((1ull << 38) - 64))
#define AEAD_EVP_MAX ((size_t)INT_MAX)
#define AEAD_MIN_MAX(a, b) ((a) < (b) ? (a) : (b))

struct aead_impl {
	const char *name;
	enum aead_cipher cipher;
	size_t key_len, nonce_len, tag_len;
	size_t msg_max; /* see AEAD_GCM_MAX */
	bool gcrypt; /* needs aead_gcry_init() */
	/* A context keyed with key (key_len bytes, borrowed: the caller keeps
	 * it alive until ctx_free). Used by one thread at a time. Returns 0
	 * or -ENOMEM / -EIO. */
	int (*ctx_new)(void **ctx, const uint8_t *key);
	/* Wipe and free; NULL is a no-op. */
	void (*ctx_free)(void *ctx);
	/* body = ptlen + tag_len bytes. Returns 0 or -EIO. */
	int (*seal)(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen);
	/* pt = bodylen - tag_len bytes (bodylen >= tag_len). Returns 0 or
	 * -EBADMSG; pt may hold garbage on failure (the caller zeroes it). */
	int (*open)(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen);
	/* Seal every block of r (cipher_out, nonces in place). Returns 0 or
	 * -EIO. */
	int (*seal_run)(void *ctx, const struct aead_run *r);
	/* Open blocks of r in order until one fails; returns 0, or -EBADMSG
	 * with *bad = index of the failing block (whose plaintext and those
	 * after it are undefined: the caller zeroes and resumes). */
	int (*open_run)(void *ctx, const struct aead_run *r, size_t *bad);
	/* NULL, or false when this CPU lacks the instructions the backend
	 * needs (named by needs, e.g. "VAES/AVX-512"): aead_new then fails
	 * with -ENOTSUP and auto mode skips it. */
	bool (*supported)(void);
	const char *needs;
	/* Our own code: a library backend of the same cipher that it must
	 * agree with before its first use (aead_impl_selftest); NULL for
	 * the library backends themselves. */
	const struct aead_impl *reference;
};

/* The loops a backend's seal_run / open_run are made of: called with the
 * backend's own static seal or open function, they inline it (no indirect
 * call per block) and build each block's AAD in place. A backend with real
 * multi-block code writes its own instead. NULL seal_run / open_run entries
 * make aead.c run the same loops through the per-message entries. */
typedef int aead_seal_fn(void *ctx, uint8_t *body, const uint8_t *nonce,
			 const uint8_t *pt, size_t ptlen, const uint8_t *aad,
			 size_t aadlen);
typedef int aead_open_fn(void *ctx, uint8_t *pt, const uint8_t *nonce,
			 const uint8_t *body, size_t bodylen,
			 const uint8_t *aad, size_t aadlen);

static inline void aead_run_aad(uint8_t aad[24], const struct aead_run *r,
				size_t i)
{
	uint64_t v = r->first + i;

	for (int k = 7; k >= 0; k--, v >>= 8)
		aad[k] = (uint8_t)v;
}

static inline __attribute__((always_inline)) int
aead_run_seal(void *ctx, const struct aead_run *r, size_t nonce_len,
	      aead_seal_fn *seal)
{
	uint8_t aad[24];

	memcpy(aad + 8, r->file_id, 16);
	for (size_t i = 0; i < r->n; i++) {
		uint8_t *blk = r->cipher_out + i * r->cbs;

		aead_run_aad(aad, r, i);
		if (seal(ctx, blk + nonce_len, blk, r->plain_in + i * r->bs,
			 i + 1 < r->n ? r->bs : r->last_len, aad, sizeof(aad)))
			return -EIO;
	}
	return 0;
}

static inline __attribute__((always_inline)) int
aead_run_open(void *ctx, const struct aead_run *r, size_t nonce_len,
	      size_t tag_len, size_t *bad, aead_open_fn *open)
{
	uint8_t aad[24];

	memcpy(aad + 8, r->file_id, 16);
	for (size_t i = 0; i < r->n; i++) {
		const uint8_t *blk = r->cipher_in + i * r->cbs;
		size_t len = i + 1 < r->n ? r->bs : r->last_len;

		aead_run_aad(aad, r, i);
		if (open(ctx, r->plain_out + i * r->bs, blk, blk + nonce_len,
			 len + tag_len, aad, sizeof(aad))) {
			*bad = i;
			return -EBADMSG;
		}
	}
	return 0;
}

/* Defines the implementation var of a backend whose per-thread context
 * functions are pfx_new/pfx_free and whose per-message functions are
 * pfx_seal/pfx_open, with batch entries made of the loops above. Messages
 * (and AAD) longer than mmax are refused before pfx_seal/pfx_open. */
#define AEAD_IMPL_DEFINE(var, pfx, impl_name, cipher_id, klen, nlen, gcry,   \
			 mmax)                                                \
	static int pfx##_seal_chk(void *ctx, uint8_t *body,                   \
				  const uint8_t *nonce, const uint8_t *pt,    \
				  size_t ptlen, const uint8_t *aad,           \
				  size_t aadlen)                              \
	{                                                                     \
		if (ptlen > (mmax) || aadlen > (mmax))                        \
			return -EIO;                                          \
		return pfx##_seal(ctx, body, nonce, pt, ptlen, aad, aadlen);  \
	}                                                                     \
	static int pfx##_open_chk(void *ctx, uint8_t *pt,                     \
				  const uint8_t *nonce, const uint8_t *body,  \
				  size_t bodylen, const uint8_t *aad,         \
				  size_t aadlen)                              \
	{                                                                     \
		if (bodylen - AEAD_TAG_LEN > (mmax) || aadlen > (mmax))       \
			return -EBADMSG;                                      \
		return pfx##_open(ctx, pt, nonce, body, bodylen, aad,         \
				  aadlen);                                    \
	}                                                                     \
	static int pfx##_seal_run(void *ctx, const struct aead_run *r)        \
	{                                                                     \
		return aead_run_seal(ctx, r, (nlen), pfx##_seal_chk);         \
	}                                                                     \
	static int pfx##_open_run(void *ctx, const struct aead_run *r,        \
				  size_t *bad)                                \
	{                                                                     \
		return aead_run_open(ctx, r, (nlen), AEAD_TAG_LEN, bad,       \
				     pfx##_open_chk);                         \
	}                                                                     \
	const struct aead_impl var = {                                        \
		.name = (impl_name), .cipher = (cipher_id),                   \
		.key_len = (klen), .nonce_len = (nlen),                       \
		.tag_len = AEAD_TAG_LEN, .msg_max = (mmax), .gcrypt = (gcry), \
		.ctx_new = pfx##_new, .ctx_free = pfx##_free,                 \
		.seal = pfx##_seal_chk, .open = pfx##_open_chk,               \
		.seal_run = pfx##_seal_run, .open_run = pfx##_open_run,       \
	}

/* Vector code spills key-derived registers (round keys, states, key
 * stream) to the stack: a backend's entry point runs the work in a
 * function of its own and then overwrites AEAD_BURN_BYTES of stack below
 * its own frame, where that function's frames were. */
#if defined(__SANITIZE_ADDRESS__)
#define AEAD_BURN_BYTES 32768 /* AddressSanitizer: frames of up to 23 KiB */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AEAD_BURN_BYTES 32768
#endif
#endif
#ifndef AEAD_BURN_BYTES
#define AEAD_BURN_BYTES 6144
#endif

static __attribute__((noinline, unused)) void aead_burn_stack(void)
{
	uint8_t buf[AEAD_BURN_BYTES];

	memset(buf, 0, sizeof(buf));
	__asm__ volatile("" : : "r"(buf) : "memory");
}

/* The registers keep round keys and states after the work too, and a core
 * dump holds every thread's registers: the AVX-512 backends clear zmm0-31
 * (vzeroall clears zmm0-15) after each call. A call clobbers every vector
 * register, so the compiler keeps nothing there across this one. */
static __attribute__((noinline, unused)) void aead_wipe_vregs(void)
{
	__asm__ volatile("vzeroall\n\t"
			 "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
			 "vmovdqa64 %%zmm16, %%zmm17\n\t"
			 "vmovdqa64 %%zmm16, %%zmm18\n\t"
			 "vmovdqa64 %%zmm16, %%zmm19\n\t"
			 "vmovdqa64 %%zmm16, %%zmm20\n\t"
			 "vmovdqa64 %%zmm16, %%zmm21\n\t"
			 "vmovdqa64 %%zmm16, %%zmm22\n\t"
			 "vmovdqa64 %%zmm16, %%zmm23\n\t"
			 "vmovdqa64 %%zmm16, %%zmm24\n\t"
			 "vmovdqa64 %%zmm16, %%zmm25\n\t"
			 "vmovdqa64 %%zmm16, %%zmm26\n\t"
			 "vmovdqa64 %%zmm16, %%zmm27\n\t"
			 "vmovdqa64 %%zmm16, %%zmm28\n\t"
			 "vmovdqa64 %%zmm16, %%zmm29\n\t"
			 "vmovdqa64 %%zmm16, %%zmm30\n\t"
			 "vmovdqa64 %%zmm16, %%zmm31" : : : "memory");
}

/* The same on a CPU without AVX-512 (the AVX2 backends): vzeroall clears
 * all sixteen 256-bit registers. */
static __attribute__((noinline, unused)) void aead_wipe_ymm(void)
{
	__asm__ volatile("vzeroall" : : : "memory");
}

extern const struct aead_impl aead_gcm_ossl, aead_gcm_gcry, aead_gcm_vaes;
extern const struct aead_impl aead_gcm_vaes_avx2;
extern const struct aead_impl aead_siv_ossl, aead_siv_gcry;
extern const struct aead_impl aead_xchacha_ossl, aead_xchacha_gcry;
extern const struct aead_impl aead_xchacha_avx512;

/* 0 when impl (which has a reference) seals a set of messages and block
 * runs of lengths that take every path of vector code (empty, one byte,
 * part of a vector, whole blocks, a tail) exactly as its reference does,
 * opens them again and refuses each with one bit flipped; -EIO otherwise
 * (-ENOMEM, -ENOTSUP from creating the contexts). aead_impl_supported runs
 * it once per backend and process and leaves a backend that fails out. */
int aead_impl_selftest(const struct aead_impl *impl);

/* Test hooks of the AVX-512 XChaCha20-Poly1305 code (-ENOTSUP on CPUs
 * without it): RFC 8439 Poly1305 of any message (§2.5), and the
 * ChaCha20-Poly1305 AEAD with a 12-byte nonce (§2.8), out = C || tag. */
int xchacha_avx512_test_poly1305(uint8_t tag[16], const uint8_t key[32],
				 const uint8_t *msg, size_t len);
int xchacha_avx512_test_chapoly(uint8_t *out, const uint8_t key[32],
				const uint8_t nonce[12], const uint8_t *pt,
				size_t len, const uint8_t *aad,
				size_t aadlen);

/* Test hook: RFC 5297 SIV || C over any S2V vector with a 32- or 64-byte
 * key (AES-SIV-256/-512) through the OpenSSL S2V/CTR core. */
int aead_siv_ossl_test(uint8_t *out, const uint8_t *key, size_t keylen,
		       const uint8_t *const *ad, const size_t *adlen,
		       size_t nad, const uint8_t *pt, size_t ptlen);

/* Initialise libgcrypt once (version check, secure memory, finished). */
int aead_gcry_init(void);

#endif
