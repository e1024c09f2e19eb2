/* SPDX-License-Identifier: MIT */
/*
 * Private backend vtable of the content ciphers (include only in
 * src/crypto). A backend is one library's implementation of one cipher; it
 * creates a per-thread context keyed once and then seals and opens messages
 * on it. aead.c owns the threads, nonces, block batches and hole rules; the
 * backends see one message body at a time (nonce passed separately):
 *   GCM, XChaCha: body = C || tag(16);   SIV: body = SIV(16) || C.
 */
#ifndef CRYPTO_AEAD_IMPL_H
#define CRYPTO_AEAD_IMPL_H

#include "crypto/aead.h"

#include <stdbool.h>

struct aead_impl {
	const char *name;
	enum aead_cipher cipher;
	size_t key_len, nonce_len, tag_len;
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
};

extern const struct aead_impl aead_gcm_ossl, aead_gcm_gcry;
extern const struct aead_impl aead_siv_ossl, aead_siv_gcry;
extern const struct aead_impl aead_xchacha_ossl, aead_xchacha_gcry;

/* Test hook: RFC 5297 SIV || C over any S2V vector with a 32- or 64-byte
 * key (AES-SIV-256/-512) through the OpenSSL S2V/CTR core. */
int aead_siv_ossl_test(uint8_t *out, const uint8_t *key, size_t keylen,
		       const uint8_t *const *ad, const size_t *adlen,
		       size_t nad, const uint8_t *pt, size_t ptlen);

/* Initialise libgcrypt once (version check, secure memory, finished). */
int aead_gcry_init(void);

#endif
