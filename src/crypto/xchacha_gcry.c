/* SPDX-License-Identifier: MIT */
/*
 * XChaCha20-Poly1305 (spec §3.7) on libgcrypt: our HChaCha20 subkey, then
 * GCRY_CIPHER_CHACHA20 in GCRY_CIPHER_MODE_POLY1305 (the RFC 8439 AEAD)
 * with the 12-byte nonce 0^4 || nonce[16:24]. The handle is per thread and
 * reused; only its key changes per message, as XChaCha requires.
 */
#include "crypto/aead_impl.h"
#include "crypto/hchacha20.h"

#include "common/secmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gcrypt.h>

struct xc_gcry {
	gcry_cipher_hd_t h;
	const uint8_t *key; /* borrowed from the instance (secmem) */
};

static void xc_free(void *ctx)
{
	struct xc_gcry *c = ctx;

	if (!c)
		return;
	gcry_cipher_close(c->h);
	free(c);
}

static int xc_new(void **out, const uint8_t *key)
{
	struct xc_gcry *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->key = key;
	if (gcry_cipher_open(&c->h, GCRY_CIPHER_CHACHA20,
			     GCRY_CIPHER_MODE_POLY1305, GCRY_CIPHER_SECURE)) {
		free(c);
		return -EIO;
	}
	*out = c;
	return 0;
}

/* Key the handle for one message: HChaCha20 subkey and inner nonce. */
static int start(struct xc_gcry *c, const uint8_t *nonce, const uint8_t *aad,
		 size_t aadlen)
{
	uint8_t subkey[32], iv[12] = { 0 };
	int rc = 0;

	hchacha20(subkey, c->key, nonce);
	memcpy(iv + 4, nonce + 16, 8);
	if (gcry_cipher_setkey(c->h, subkey, sizeof(subkey)) ||
	    gcry_cipher_setiv(c->h, iv, sizeof(iv)) ||
	    gcry_cipher_authenticate(c->h, aad, aadlen))
		rc = -EIO;
	secure_zero(subkey, sizeof(subkey));
	return rc;
}

static int xc_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		   const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		   size_t aadlen)
{
	struct xc_gcry *c = ctx;

	if (start(c, nonce, aad, aadlen) ||
	    gcry_cipher_encrypt(c->h, body, ptlen, pt, ptlen) ||
	    gcry_cipher_gettag(c->h, body + ptlen, AEAD_TAG_LEN))
		return -EIO;
	return 0;
}

static int xc_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		   const uint8_t *body, size_t bodylen, const uint8_t *aad,
		   size_t aadlen)
{
	struct xc_gcry *c = ctx;
	size_t len = bodylen - AEAD_TAG_LEN;

	if (start(c, nonce, aad, aadlen) ||
	    gcry_cipher_decrypt(c->h, pt, len, body, len) ||
	    gcry_cipher_checktag(c->h, body + len, AEAD_TAG_LEN))
		return -EBADMSG;
	return 0;
}

AEAD_IMPL_DEFINE(aead_xchacha_gcry, xc, "XChaCha20-Poly1305-libgcrypt", AEAD_XCHACHA20_POLY1305, 32, 24,
		 true,
		 AEAD_CHACHA_MAX);
