/* SPDX-License-Identifier: MIT */
/*
 * EME-AES-256 (spec §4.4). E and its inverse come from AES-256-ECB contexts
 * (padding off) that each thread keys once and keeps in thread-specific
 * storage, in secmem like everything key-derived (the EVP contexts through
 * secmem_lib_enter); every context of an instance is also on a list so that eme_free
 * can release contexts of threads that are still alive. A thread that exits
 * frees its own contexts through the key destructor.
 */
#include "crypto/eme.h"

#include "common/log.h"
#include "common/secmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

struct eme_tctx {
	EVP_CIPHER_CTX *enc, *dec;
	uint8_t l0[16]; /* E(0^16), key-derived: wiped on free */
	struct eme *owner;
	struct eme_tctx *prev, *next; /* protected by owner->lock */
};

struct eme {
	uint8_t *key; /* 32 bytes, secmem */
	EVP_CIPHER *aes;
	pthread_key_t tls;
	pthread_mutex_t lock;
	struct eme_tctx *all; /* protected by lock */
};

static void tctx_destroy(struct eme_tctx *t)
{
	EVP_CIPHER_CTX_free(t->enc);
	EVP_CIPHER_CTX_free(t->dec);
	secmem_free(t, sizeof(*t)); /* wipes l0 */
}

/* Thread exit: unlink and free this thread's contexts. */
static void tctx_exit(void *arg)
{
	struct eme_tctx *t = arg;
	struct eme *e = t->owner;

	pthread_mutex_lock(&e->lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		e->all = t->next;
	if (t->next)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&e->lock);
	tctx_destroy(t);
}

static const uint8_t zero16[16];

static int ecb(EVP_CIPHER_CTX *ctx, uint8_t *out, const uint8_t *in,
	       size_t len)
{
	int outl = 0;

	if (EVP_CipherUpdate(ctx, out, &outl, in, (int)len) != 1 ||
	    (size_t)outl != len)
		return -EIO;
	return 0;
}

static int tctx_get(struct eme *e, struct eme_tctx **out)
{
	struct eme_tctx *t = pthread_getspecific(e->tls);
	int rc = -EIO;
	bool ok;

	if (t) {
		*out = t;
		return 0;
	}
	t = secmem_alloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->owner = e;
	/* The contexts hold the AES key schedules: secmem. */
	secmem_lib_enter();
	t->enc = EVP_CIPHER_CTX_new();
	t->dec = EVP_CIPHER_CTX_new();
	ok = t->enc && t->dec &&
	     EVP_EncryptInit_ex2(t->enc, e->aes, e->key, NULL, NULL) == 1 &&
	     EVP_DecryptInit_ex2(t->dec, e->aes, e->key, NULL, NULL) == 1 &&
	     EVP_CIPHER_CTX_set_padding(t->enc, 0) == 1 &&
	     EVP_CIPHER_CTX_set_padding(t->dec, 0) == 1;
	secmem_lib_leave();
	if (!ok || ecb(t->enc, t->l0, zero16, 16))
		goto out;
	if (pthread_setspecific(e->tls, t)) {
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&e->lock);
	t->next = e->all;
	if (e->all)
		e->all->prev = t;
	e->all = t;
	pthread_mutex_unlock(&e->lock);
	*out = t;
	return 0;
out:
	log_err("eme: cannot set up AES-256-ECB");
	tctx_destroy(t);
	return rc;
}

int eme_new(struct eme **out, const uint8_t key[static 32])
{
	struct eme *e;
	int rc = -ENOMEM;

	*out = NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->key = secmem_alloc(32);
	if (!e->key)
		goto out_free;
	memcpy(e->key, key, 32);
	e->aes = EVP_CIPHER_fetch(NULL, "AES-256-ECB", NULL);
	if (!e->aes) {
		log_err("eme: AES-256-ECB unavailable");
		rc = -EIO;
		goto out_free;
	}
	if (pthread_mutex_init(&e->lock, NULL))
		goto out_free;
	if (pthread_key_create(&e->tls, tctx_exit)) {
		pthread_mutex_destroy(&e->lock);
		goto out_free;
	}
	*out = e;
	return 0;
out_free:
	EVP_CIPHER_free(e->aes);
	secmem_free(e->key, 32);
	free(e);
	return rc;
}

void eme_free(struct eme *e)
{
	struct eme_tctx *t, *next;

	if (!e)
		return;
	/* After the key is deleted no destructor runs for it any more. */
	pthread_key_delete(e->tls);
	for (t = e->all; t; t = next) {
		next = t->next;
		tctx_destroy(t);
	}
	pthread_mutex_destroy(&e->lock);
	EVP_CIPHER_free(e->aes);
	secmem_free(e->key, 32);
	free(e);
}

/* Doubling in GF(2^128), the block read as a little-endian integer. */
static void mult2(uint8_t out[16], const uint8_t in[16])
{
	uint8_t carry = in[15] >> 7;

	for (int j = 15; j > 0; j--)
		out[j] = (uint8_t)(in[j] << 1 | in[j - 1] >> 7);
	out[0] = (uint8_t)(in[0] << 1) ^ (carry ? 0x87 : 0);
}

static void xor16(uint8_t *out, const uint8_t *a, const uint8_t *b)
{
	for (int i = 0; i < 16; i++)
		out[i] = a[i] ^ b[i];
}

static int transform(struct eme *e, uint8_t *out, const uint8_t *in,
		     size_t len, const uint8_t tweak[static 16], bool enc)
{
	uint8_t L[EME_MAX_BLOCKS][16], ppp[EME_MAX_BLOCKS][16];
	uint8_t mp[16], mc[16], m[16];
	struct eme_tctx *t;
	EVP_CIPHER_CTX *f;
	size_t nb = len / 16, j;
	int rc;

	if (len == 0 || len % 16 || nb > EME_MAX_BLOCKS)
		return -EINVAL;
	rc = tctx_get(e, &t);
	if (rc)
		return rc;
	f = enc ? t->enc : t->dec;

	/* L = E(0), always the forward cipher; L_j = 2^j * L. */
	mult2(L[0], t->l0);
	for (j = 1; j < nb; j++)
		mult2(L[j], L[j - 1]);

	/* PPP_j = F(P_j ^ L_j), all blocks in one call. */
	for (j = 0; j < nb; j++)
		xor16(ppp[j], in + 16 * j, L[j]);
	rc = ecb(f, ppp[0], ppp[0], len);
	if (rc)
		goto out;

	/* MP = T ^ PPP_1 ^ ... ^ PPP_m; MC = F(MP); M = MP ^ MC */
	memcpy(mp, tweak, 16);
	for (j = 0; j < nb; j++)
		xor16(mp, mp, ppp[j]);
	rc = ecb(f, mc, mp, 16);
	if (rc)
		goto out;
	xor16(m, mp, mc);

	/* CCC_j = PPP_j ^ 2^(j-1) M for j >= 2 (in place in ppp);
	 * CCC_1 = MC ^ T ^ CCC_2 ^ ... ^ CCC_m */
	xor16(ppp[0], mc, tweak);
	for (j = 1; j < nb; j++) {
		mult2(m, m);
		xor16(ppp[j], ppp[j], m);
		xor16(ppp[0], ppp[0], ppp[j]);
	}

	/* C_j = F(CCC_j) ^ L_j */
	rc = ecb(f, ppp[0], ppp[0], len);
	if (rc)
		goto out;
	for (j = 0; j < nb; j++)
		xor16(out + 16 * j, ppp[j], L[j]);
out:
	if (rc)
		log_err("eme: AES-256-ECB failed");
	secure_zero(L, 16 * nb);
	secure_zero(ppp, 16 * nb);
	return rc;
}

int eme_encrypt(struct eme *e, uint8_t *out, const uint8_t *in, size_t len,
		const uint8_t tweak[static 16])
{
	return transform(e, out, in, len, tweak, true);
}

int eme_decrypt(struct eme *e, uint8_t *out, const uint8_t *in, size_t len,
		const uint8_t tweak[static 16])
{
	return transform(e, out, in, len, tweak, false);
}
