/* SPDX-License-Identifier: MIT */
/*
 * AES-256-GCM with a 16-byte IV (spec §3.5) on OpenSSL libcrypto. The cipher
 * is fetched once per process; each thread context holds one encrypting and
 * one decrypting EVP context, keyed once. Per message only the IV (and, to
 * open, the expected tag) is set: no key schedule, no allocation.
 */
#include "crypto/aead_impl.h"

#include "common/secmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

struct gcm_ossl {
	EVP_CIPHER_CTX *enc, *dec;
};

static EVP_CIPHER *g_gcm;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fetch(void)
{
	g_gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
}

static void gcm_free(void *ctx)
{
	struct gcm_ossl *c = ctx;

	if (!c)
		return;
	EVP_CIPHER_CTX_free(c->enc); /* wipes the key schedule */
	EVP_CIPHER_CTX_free(c->dec);
	free(c);
}

static int gcm_new(void **out, const uint8_t *key)
{
	size_t ivlen = 16;
	OSSL_PARAM p[] = {
		OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &ivlen),
		OSSL_PARAM_END,
	};
	struct gcm_ossl *c;
	bool ok;

	pthread_once(&g_once, fetch);
	if (!g_gcm)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* The contexts hold the key schedule and GHASH table: secmem. */
	secmem_lib_enter();
	c->enc = EVP_CIPHER_CTX_new();
	c->dec = EVP_CIPHER_CTX_new();
	ok = c->enc && c->dec &&
	     EVP_EncryptInit_ex2(c->enc, g_gcm, key, NULL, p) == 1 &&
	     EVP_DecryptInit_ex2(c->dec, g_gcm, key, NULL, p) == 1;
	secmem_lib_leave();
	if (!ok) {
		gcm_free(c);
		return -EIO;
	}
	*out = c;
	return 0;
}

static int gcm_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	struct gcm_ossl *c = ctx;
	OSSL_PARAM p[] = {
		OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
					body + ptlen, AEAD_TAG_LEN),
		OSSL_PARAM_END,
	};
	int l;

	if (EVP_EncryptInit_ex2(c->enc, NULL, NULL, nonce, NULL) != 1 ||
	    EVP_EncryptUpdate(c->enc, NULL, &l, aad, (int)aadlen) != 1 ||
	    EVP_EncryptUpdate(c->enc, body, &l, pt, (int)ptlen) != 1 ||
	    EVP_EncryptFinal_ex(c->enc, body + ptlen, &l) != 1 ||
	    EVP_CIPHER_CTX_get_params(c->enc, p) != 1)
		return -EIO;
	return 0;
}

static int gcm_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	struct gcm_ossl *c = ctx;
	size_t len = bodylen - AEAD_TAG_LEN;
	OSSL_PARAM p[] = {
		OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
					(void *)(uintptr_t)(body + len),
					AEAD_TAG_LEN),
		OSSL_PARAM_END,
	};
	int l;

	if (EVP_DecryptInit_ex2(c->dec, NULL, NULL, nonce, p) != 1 ||
	    EVP_DecryptUpdate(c->dec, NULL, &l, aad, (int)aadlen) != 1 ||
	    EVP_DecryptUpdate(c->dec, pt, &l, body, (int)len) != 1 ||
	    EVP_DecryptFinal_ex(c->dec, pt + len, &l) != 1)
		return -EBADMSG;
	return 0;
}

AEAD_IMPL_DEFINE(aead_gcm_ossl, gcm, "AES-GCM-256-OpenSSL", AEAD_AES_GCM_256, 32, 16,
		 false,
		 AEAD_MIN_MAX(AEAD_GCM_MAX, AEAD_EVP_MAX));
