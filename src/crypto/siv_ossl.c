/* SPDX-License-Identifier: MIT */
/*
 * AES-SIV-512 (spec §3.6, RFC 5297) on OpenSSL libcrypto, with our own S2V.
 * OpenSSL 3.0's "AES-256-SIV" cannot seal a second message on one context
 * without being re-keyed, and its CMAC runs one EVP call per 16-byte block,
 * so S2V here is CMAC built on one AES-256-CBC context keyed once with K1
 * (a whole block string per EVP call), and the CTR part is an AES-256-CTR
 * context keyed once with K2 that only gets a new counter per message.
 * The CMAC subkeys and CMAC(0^128) are key-derived: the context lives in
 * locked memory and is wiped on free.
 * The core is key-size generic so the RFC 5297 AES-SIV-256 vectors can test
 * it (aead_siv_ossl_s2v_test).
 */
#include "crypto/aead_impl.h"

#include "common/secmem.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define SCRATCH 4096

struct siv_ossl {
	EVP_CIPHER_CTX *cbc, *ctr;
	uint8_t k1[16], k2[16]; /* CMAC subkeys */
	uint8_t d0[16];		/* CMAC(0^128), the S2V start */
	uint8_t scratch[SCRATCH];
};

static EVP_CIPHER *g_cbc[2], *g_ctr[2]; /* [0] AES-128, [1] AES-256 */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const uint8_t zero16[16];

static void fetch(void)
{
	g_cbc[0] = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL);
	g_ctr[0] = EVP_CIPHER_fetch(NULL, "AES-128-CTR", NULL);
	g_cbc[1] = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
	g_ctr[1] = EVP_CIPHER_fetch(NULL, "AES-256-CTR", NULL);
}

/* Doubling in GF(2^128), big-endian (RFC 5297 dbl). */
static void dbl(uint8_t out[16], const uint8_t in[16])
{
	uint8_t carry = in[0] >> 7;

	for (int i = 0; i < 15; i++)
		out[i] = (uint8_t)(in[i] << 1 | in[i + 1] >> 7);
	out[15] = (uint8_t)(in[15] << 1) ^ (uint8_t)(carry * 0x87);
}

static void xor16(uint8_t *out, const uint8_t *a, const uint8_t *b)
{
	for (int i = 0; i < 16; i++)
		out[i] = a[i] ^ b[i];
}

/* CBC-encrypt n bytes (a multiple of 16) continuing the chain; the last
 * output block goes to last (if n > 0). */
static int cbc(struct siv_ossl *c, const uint8_t *in, size_t n,
	       uint8_t last[16])
{
	int l;

	while (n) {
		size_t k = n < SCRATCH ? n : SCRATCH;

		if (EVP_EncryptUpdate(c->cbc, c->scratch, &l, in,
				      (int)k) != 1 || (size_t)l != k)
			return -EIO;
		memcpy(last, c->scratch + k - 16, 16);
		in += k;
		n -= k;
	}
	return 0;
}

/* out = CMAC(K1, M) where M is msg with d XORed into its last 16 bytes
 * when d is given (RFC 5297 "xorend"; then len >= 16). */
static int cmac(struct siv_ossl *c, uint8_t out[16], const uint8_t *msg,
		size_t len, const uint8_t *d)
{
	size_t nb = len ? (len + 15) / 16 : 1, pre = (nb - 1) * 16, t0, i;
	uint8_t tail[32] = { 0 };
	int rc;

	/* The tail [t0, len) holds the last block and every byte d touches. */
	t0 = d && len - 16 < pre ? pre - 16 : pre;
	memcpy(tail, msg + t0, len - t0);
	if (d)
		for (i = 0; i < 16; i++)
			tail[len - t0 - 16 + i] ^= d[i];
	if (len && len % 16 == 0) {
		xor16(tail + (pre - t0), tail + (pre - t0), c->k1);
	} else {
		tail[len - t0] = 0x80;
		xor16(tail + (pre - t0), tail + (pre - t0), c->k2);
	}
	if (EVP_EncryptInit_ex2(c->cbc, NULL, NULL, zero16, NULL) != 1)
		return -EIO;
	rc = cbc(c, msg, t0, out);
	if (!rc)
		rc = cbc(c, tail, pre - t0 + 16, out);
	secure_zero(tail, sizeof(tail));
	return rc;
}

/* V = S2V(K1, ad[0], ..., ad[nad-1], pt) */
static int s2v(struct siv_ossl *c, uint8_t v[16], const uint8_t *const *ad,
	       const size_t *adlen, size_t nad, const uint8_t *pt,
	       size_t ptlen)
{
	uint8_t d[16], m[16];
	int rc = 0;

	memcpy(d, c->d0, 16);
	for (size_t i = 0; !rc && i < nad; i++) {
		rc = cmac(c, m, ad[i], adlen[i], NULL);
		dbl(d, d);
		xor16(d, d, m);
	}
	if (rc) {
	} else if (ptlen >= 16) {
		rc = cmac(c, v, pt, ptlen, d);
	} else {
		memset(m, 0, 16);
		if (ptlen) /* pt may be NULL for an empty message */
			memcpy(m, pt, ptlen);
		m[ptlen] = 0x80;
		dbl(d, d);
		xor16(m, m, d);
		rc = cmac(c, v, m, 16, NULL);
	}
	secure_zero(d, sizeof(d));
	secure_zero(m, sizeof(m));
	return rc;
}

/* AES-CTR from Q = V with bits 31 and 63 cleared (RFC 5297 §2.6). */
static int ctr(struct siv_ossl *c, uint8_t *out, const uint8_t *in,
	       size_t len, const uint8_t v[16])
{
	uint8_t q[16];
	int l;

	memcpy(q, v, 16);
	q[8] &= 0x7f;
	q[12] &= 0x7f;
	if (EVP_EncryptInit_ex2(c->ctr, NULL, NULL, q, NULL) != 1 ||
	    (len && EVP_EncryptUpdate(c->ctr, out, &l, in, (int)len) != 1))
		return -EIO;
	return 0;
}

static void siv_free(void *ctx)
{
	struct siv_ossl *c = ctx;

	if (!c)
		return;
	EVP_CIPHER_CTX_free(c->cbc);
	EVP_CIPHER_CTX_free(c->ctr);
	secmem_free(c, sizeof(*c)); /* wipes */
}

/* key = K1 || K2, each half bytes (16 or 32). */
static int siv_new_half(void **out, const uint8_t *key, size_t half)
{
	int big = half == 32;
	struct siv_ossl *c;
	uint8_t l[16];
	bool ok;

	pthread_once(&g_once, fetch);
	if (!g_cbc[big] || !g_ctr[big])
		return -EIO;
	c = secmem_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	secmem_lib_enter(); /* the EVP contexts hold the key schedules */
	c->cbc = EVP_CIPHER_CTX_new();
	c->ctr = EVP_CIPHER_CTX_new();
	ok = c->cbc && c->ctr &&
	     EVP_EncryptInit_ex2(c->cbc, g_cbc[big], key, zero16, NULL) == 1 &&
	     EVP_CIPHER_CTX_set_padding(c->cbc, 0) == 1 &&
	     EVP_EncryptInit_ex2(c->ctr, g_ctr[big], key + half, zero16,
				 NULL) == 1;
	secmem_lib_leave();
	if (!ok || cbc(c, zero16, 16, l))
		goto fail;
	dbl(c->k1, l);
	dbl(c->k2, c->k1);
	secure_zero(l, sizeof(l));
	if (cmac(c, c->d0, zero16, 16, NULL))
		goto fail;
	*out = c;
	return 0;
fail:
	siv_free(c);
	return -EIO;
}

static int siv_new(void **out, const uint8_t *key)
{
	return siv_new_half(out, key, 32);
}

static int siv_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	const uint8_t *ad[2] = { aad, nonce };
	const size_t adlen[2] = { aadlen, 16 };
	struct siv_ossl *c = ctx;

	if (s2v(c, body, ad, adlen, 2, pt, ptlen) ||
	    ctr(c, body + 16, pt, ptlen, body))
		return -EIO;
	return 0;
}

static int siv_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	const uint8_t *ad[2] = { aad, nonce };
	const size_t adlen[2] = { aadlen, 16 };
	struct siv_ossl *c = ctx;
	size_t len = bodylen - 16;
	uint8_t v[16];

	if (ctr(c, pt, body + 16, len, body) ||
	    s2v(c, v, ad, adlen, 2, pt, len) || CRYPTO_memcmp(v, body, 16))
		return -EBADMSG;
	return 0;
}

int aead_siv_ossl_test(uint8_t *out, const uint8_t *key, size_t keylen,
		       const uint8_t *const *ad, const size_t *adlen,
		       size_t nad, const uint8_t *pt, size_t ptlen)
{
	void *ctx = NULL;
	int rc;

	if (keylen != 32 && keylen != 64)
		return -EINVAL;
	rc = siv_new_half(&ctx, key, keylen / 2);
	if (rc)
		return rc;
	rc = s2v(ctx, out, ad, adlen, nad, pt, ptlen);
	if (!rc)
		rc = ctr(ctx, out + 16, pt, ptlen, out);
	siv_free(ctx);
	return rc;
}

AEAD_IMPL_DEFINE(aead_siv_ossl, siv, "AES-SIV-512-OpenSSL", AEAD_AES_SIV_512, 64, 16,
		 false,
		 AEAD_EVP_MAX);
