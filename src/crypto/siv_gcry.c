/* SPDX-License-Identifier: MIT */
/*
 * AES-SIV-512 (spec §3.6) on libgcrypt's GCRY_CIPHER_MODE_SIV with a 64-byte
 * key (K1 = S2V/CMAC key, K2 = CTR key). Each gcry_cipher_authenticate call
 * is one S2V component, so the vector [AAD, nonce, plaintext] is two
 * authenticate calls and one en/decrypt. The handle is per thread and keyed
 * once; gcry_cipher_reset between messages keeps the key.
 */
#include "crypto/aead_impl.h"

#include <errno.h>

#include <gcrypt.h>

static void siv_free(void *ctx)
{
	gcry_cipher_close(ctx);
}

static int siv_new(void **out, const uint8_t *key)
{
	gcry_cipher_hd_t h;

	if (gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_SIV,
			     GCRY_CIPHER_SECURE))
		return -EIO;
	if (gcry_cipher_setkey(h, key, 64)) {
		gcry_cipher_close(h);
		return -EIO;
	}
	*out = h;
	return 0;
}

static int siv_seal(void *ctx, uint8_t *body, const uint8_t *nonce,
		    const uint8_t *pt, size_t ptlen, const uint8_t *aad,
		    size_t aadlen)
{
	gcry_cipher_hd_t h = ctx;

	if (gcry_cipher_reset(h) ||
	    gcry_cipher_authenticate(h, aad, aadlen) ||
	    gcry_cipher_authenticate(h, nonce, 16) ||
	    gcry_cipher_encrypt(h, body + 16, ptlen, pt, ptlen) ||
	    gcry_cipher_gettag(h, body, 16))
		return -EIO;
	return 0;
}

static int siv_open(void *ctx, uint8_t *pt, const uint8_t *nonce,
		    const uint8_t *body, size_t bodylen, const uint8_t *aad,
		    size_t aadlen)
{
	gcry_cipher_hd_t h = ctx;
	size_t len = bodylen - 16;

	/* decrypt verifies the SIV and fails with GPG_ERR_CHECKSUM */
	if (gcry_cipher_reset(h) ||
	    gcry_cipher_authenticate(h, aad, aadlen) ||
	    gcry_cipher_authenticate(h, nonce, 16) ||
	    gcry_cipher_set_decryption_tag(h, body, 16) ||
	    gcry_cipher_decrypt(h, pt, len, body + 16, len))
		return -EBADMSG;
	return 0;
}

AEAD_IMPL_DEFINE(aead_siv_gcry, siv, "AES-SIV-512-libgcrypt", AEAD_AES_SIV_512, 64, 16,
		 true,
		 SIZE_MAX - 64);
