/* SPDX-License-Identifier: MIT */
/*
 * XChaCha20-Poly1305 (spec §3.7) on OpenSSL libcrypto: our HChaCha20 gives
 * the subkey from the first 16 nonce bytes, then EVP ChaCha20-Poly1305 runs
 * with the 12-byte nonce 0^4 || nonce[16:24]. The subkey depends on the
 * nonce, so every message re-keys the inner cipher (inherent to XChaCha);
 * the EVP contexts themselves are per thread and reused.
 */
#include "crypto/aead_impl.h"
#include "crypto/hchacha20.h"

#include "common/secmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

struct xc_ossl {
	EVP_CIPHER_CTX *enc, *dec;
	const uint8_t *key; /* borrowed from the instance (secmem) */
};

static EVP_CIPHER *g_chapoly;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fetch(void)
{
	g_chapoly = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
}

static void xc_free(void *ctx)
{
	struct xc_ossl *c = ctx;

	if (!c)
		return;
	EVP_CIPHER_CTX_free(c->enc);
	EVP_CIPHER_CTX_free(c->dec);
	free(c);
}

static int xc_new(void **out, const uint8_t *key)
{
	struct xc_ossl *c;
	bool ok;

	pthread_once(&g_once, fetch);
	if (!g_chapoly)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->key = key;
	/* The contexts keep each message's subkey and state: secmem. */
	secmem_lib_enter();
	c->enc = EVP_CIPHER_CTX_new();
	c->dec = EVP_CIPHER_CTX_new();
	ok = c->enc && c->dec &&
	     EVP_EncryptInit_ex2(c->enc, g_chapoly, NULL, NULL, NULL) == 1 &&
	     EVP_DecryptInit_ex2(c->dec, g_chapoly, NULL, NULL, NULL) == 1;
	secmem_lib_leave();
	if (!ok) {
		xc_free(c);
		return -EIO;
	}
	*out = c;
	return 0;
}

/* subkey = HChaCha20(key, nonce[0:16]); iv = 0^4 || nonce[16:24] */
static void derive(const struct xc_ossl *c, const uint8_t *nonce,
		   uint8_t subkey[32], uint8_t iv[12])
{
	hchacha20(subkey, c->key, nonce);
	memset(iv, 0, 4);
	memcpy(iv + 4, nonce + 16, 8);
}

static int xc_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		   const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		   size_t aadlen)
{
	struct xc_ossl *c = ctx;
	OSSL_PARAM p[] = {
		OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
					body + ptlen, AEAD_TAG_LEN),
		OSSL_PARAM_END,
	};
	uint8_t subkey[32], iv[12];
	int l, ok;

	derive(c, nonce, subkey, iv);
	ok = EVP_EncryptInit_ex2(c->enc, NULL, subkey, iv, NULL) == 1 &&
	     EVP_EncryptUpdate(c->enc, NULL, &l, aad, (int)aadlen) == 1 &&
	     EVP_EncryptUpdate(c->enc, body, &l, pt, (int)ptlen) == 1 &&
	     EVP_EncryptFinal_ex(c->enc, body + ptlen, &l) == 1 &&
	     EVP_CIPHER_CTX_get_params(c->enc, p) == 1;
	secure_zero(subkey, sizeof(subkey));
	return ok ? 0 : -EIO;
}

static int xc_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		   const uint8_t *body, size_t bodylen, const uint8_t *aad,
		   size_t aadlen)
{
	struct xc_ossl *c = ctx;
	size_t len = bodylen - AEAD_TAG_LEN;
	OSSL_PARAM p[] = {
		OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
					(void *)(uintptr_t)(body + len),
					AEAD_TAG_LEN),
		OSSL_PARAM_END,
	};
	uint8_t subkey[32], iv[12];
	int l, ok;

	derive(c, nonce, subkey, iv);
	ok = EVP_DecryptInit_ex2(c->dec, NULL, subkey, iv, p) == 1 &&
	     EVP_DecryptUpdate(c->dec, NULL, &l, aad, (int)aadlen) == 1 &&
	     EVP_DecryptUpdate(c->dec, pt, &l, body, (int)len) == 1 &&
	     EVP_DecryptFinal_ex(c->dec, pt + len, &l) == 1;
	secure_zero(subkey, sizeof(subkey));
	return ok ? 0 : -EBADMSG;
}

AEAD_IMPL_DEFINE(aead_xchacha_ossl, xc, "XChaCha20-Poly1305-OpenSSL", AEAD_XCHACHA20_POLY1305, 32, 24,
		 false,
		 AEAD_MIN_MAX(AEAD_CHACHA_MAX, AEAD_EVP_MAX));
