/* SPDX-License-Identifier: MIT */
/*
 * AES-256-GCM with a 16-byte IV (spec §3.5) on libgcrypt (VAES/VPCLMUL code
 * paths in 1.10). One cipher handle per thread, keyed once in libgcrypt's
 * secure memory; per message: setiv, authenticate, en/decrypt, and gettag or
 * checktag (which compares in constant time).
 */
#include "crypto/aead_impl.h"

#include <errno.h>

#include <gcrypt.h>

static void gcm_free(void *ctx)
{
	gcry_cipher_close(ctx); /* wipes the handle; NULL is a no-op */
}

static int gcm_new(void **out, const uint8_t *key)
{
	gcry_cipher_hd_t h;

	if (gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_GCM,
			     GCRY_CIPHER_SECURE))
		return -EIO;
	if (gcry_cipher_setkey(h, key, 32)) {
		gcry_cipher_close(h);
		return -EIO;
	}
	*out = h;
	return 0;
}

static int gcm_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	gcry_cipher_hd_t h = ctx;

	if (gcry_cipher_setiv(h, nonce, 16) ||
	    gcry_cipher_authenticate(h, aad, aadlen) ||
	    gcry_cipher_encrypt(h, body, ptlen, pt, ptlen) ||
	    gcry_cipher_gettag(h, body + ptlen, AEAD_TAG_LEN))
		return -EIO;
	return 0;
}

static int gcm_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	gcry_cipher_hd_t h = ctx;
	size_t len = bodylen - AEAD_TAG_LEN;

	if (gcry_cipher_setiv(h, nonce, 16) ||
	    gcry_cipher_authenticate(h, aad, aadlen) ||
	    gcry_cipher_decrypt(h, pt, len, body, len) ||
	    gcry_cipher_checktag(h, body + len, AEAD_TAG_LEN))
		return -EBADMSG;
	return 0;
}

AEAD_IMPL_DEFINE(aead_gcm_gcry, gcm, "AES-GCM-256-libgcrypt", AEAD_AES_GCM_256, 32, 16,
		 true,
		 AEAD_GCM_MAX);
