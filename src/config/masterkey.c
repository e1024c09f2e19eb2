/* SPDX-License-Identifier: MIT */
/*
 * Master key wrapping (spec §1.6). The KEK path is scrypt -> HKDF("AES-GCM
 * file content encryption") -> AES-256-GCM with a 16-byte nonce through the
 * aead.h interface; the legacy no-HKDF path (KEK = scrypt output) needs a
 * 12-byte GCM nonce, which no content cipher uses, so it calls EVP
 * directly.
 */
#include "config/masterkey.h"
#include "common/log.h"
#include "common/secmem.h"
#include "config/conf.h"
#include "crypto/aead.h"
#include "crypto/kdf.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <string.h>

/* AAD of the wrapped key: BE64(0), "block 0, no file ID" (spec §3.2). */
static const uint8_t wrap_aad[8];

#define WRAP_NONCE_LEN 16
#define LEGACY_NONCE_LEN 12
#define WRAP_BLOB_LEN (WRAP_NONCE_LEN + MASTERKEY_LEN + AEAD_TAG_LEN)
#define LEGACY_BLOB_LEN (LEGACY_NONCE_LEN + MASTERKEY_LEN + AEAD_TAG_LEN)

/* An AES-GCM-256 instance keyed with kek: any implementation will do,
 * they are byte-identical. */
static int kek_aead(struct aead **a, const uint8_t kek[static 32])
{
	for (size_t i = 0; i < aead_impl_count(); i++) {
		const struct aead_impl *im = aead_impl_at(i);

		if (aead_impl_cipher(im) == AEAD_AES_GCM_256)
			return aead_new(a, im, kek, 32);
	}
	return -EIO;
}

/* kek = HKDF(scrypt(pw)) for HKDF configs, else scrypt(pw) itself. */
static int derive_kek(uint8_t kek[static 32], const struct conf *c,
		      const uint8_t *pw, size_t pwlen, int hkdf)
{
	uint8_t s[32];
	int rc;

	/* not cut to 32 bits: R = 2^32 + 8 is no cheap R = 8 */
	if (c->scrypt.r < 0 || c->scrypt.r > UINT32_MAX || c->scrypt.p < 0 ||
	    c->scrypt.p > UINT32_MAX) {
		log_err("scrypt cost N=%lld r=%lld p=%lld is too high",
			(long long)c->scrypt.n, (long long)c->scrypt.r,
			(long long)c->scrypt.p);
		return -EINVAL;
	}
	rc = kdf_scrypt(s, sizeof(s), pw, pwlen, c->scrypt.salt,
			c->scrypt.salt_len, (uint64_t)c->scrypt.n,
			(uint32_t)c->scrypt.r, (uint32_t)c->scrypt.p);
	if (rc)
		goto out;
	if (hkdf)
		rc = kdf_hkdf_sha256(kek, 32, s, sizeof(s), KDF_INFO_GCM);
	else
		memcpy(kek, s, 32);
out:
	secure_zero(s, sizeof(s));
	return rc;
}

/* The legacy layout (spec §1.6): AES-256-GCM under kek with a 12-byte
 * nonce, blob = nonce || ct || tag. enc: seal the 32 bytes in into out and
 * tag; else open in with tag into out. */
static int crypt_legacy(int enc, const uint8_t kek[static 32],
			const uint8_t nonce[static LEGACY_NONCE_LEN],
			const uint8_t *in, uint8_t *out,
			uint8_t tag[static AEAD_TAG_LEN])
{
	uint8_t tmp[MASTERKEY_LEN];
	EVP_CIPHER_CTX *ctx;
	int outl = 0, rc = -EIO;

	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL,
			      enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
				LEGACY_NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(ctx, NULL, NULL, kek, nonce, enc) != 1 ||
	    EVP_CipherUpdate(ctx, NULL, &outl, wrap_aad,
			     sizeof(wrap_aad)) != 1 ||
	    EVP_CipherUpdate(ctx, tmp, &outl, in, MASTERKEY_LEN) != 1 ||
	    (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG,
					 AEAD_TAG_LEN, tag) != 1))
		goto out;
	if (EVP_CipherFinal_ex(ctx, tmp + outl, &outl) != 1) {
		rc = enc ? -EIO : -EACCES;
		goto out;
	}
	if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG,
				       AEAD_TAG_LEN, tag) != 1)
		goto out;
	memcpy(out, tmp, MASTERKEY_LEN);
	rc = 0;
out:
	EVP_CIPHER_CTX_free(ctx);
	secure_zero(tmp, sizeof(tmp));
	return rc;
}

int masterkey_unwrap(const struct conf *c, const uint8_t *pw, size_t pwlen,
		     uint8_t key[static MASTERKEY_LEN])
{
	char err[CONF_ERR_LEN];
	struct aead *a = NULL;
	uint8_t kek[32];
	int hkdf = conf_has(c, CONF_FLAG_HKDF);
	int rc;

	secure_zero(key, MASTERKEY_LEN);
	if (conf_validate_unlock(c, err))
		return -EPROTO;
	/* The blob length is fixed per layout; anything else cannot
	 * authenticate, which gocryptfs reports as a wrong password. */
	if (c->enc_key_len != (hkdf ? WRAP_BLOB_LEN : LEGACY_BLOB_LEN))
		return -EACCES;
	rc = derive_kek(kek, c, pw, pwlen, hkdf);
	if (rc)
		goto out;
	if (!hkdf) {
		uint8_t tag[AEAD_TAG_LEN];

		memcpy(tag, c->enc_key + LEGACY_NONCE_LEN + MASTERKEY_LEN,
		       sizeof(tag));
		rc = crypt_legacy(0, kek, c->enc_key,
				  c->enc_key + LEGACY_NONCE_LEN, key, tag);
		goto out;
	}
	rc = kek_aead(&a, kek);
	if (rc)
		goto out;
	rc = aead_open(a, key, c->enc_key, c->enc_key_len, wrap_aad,
		       sizeof(wrap_aad));
	if (rc == -EBADMSG)
		rc = -EACCES;
out:
	aead_free(a);
	secure_zero(kek, sizeof(kek));
	if (rc)
		secure_zero(key, MASTERKEY_LEN);
	return rc;
}

int masterkey_wrap(struct conf *c, unsigned logn, const uint8_t *pw,
		   size_t pwlen, const uint8_t key[static MASTERKEY_LEN])
{
	struct aead *a = NULL;
	uint8_t kek[32];
	int hkdf = conf_has(c, CONF_FLAG_HKDF);
	int rc;

	if (logn < MASTERKEY_MIN_LOGN || logn > MASTERKEY_MAX_LOGN)
		return -EINVAL;
	if (RAND_bytes(c->scrypt.salt, 32) != 1)
		return -EIO;
	c->scrypt.salt_len = 32;
	c->scrypt.n = (int64_t)1 << logn;
	c->scrypt.r = 8;
	c->scrypt.p = 1;
	c->scrypt.key_len = 32;
	rc = derive_kek(kek, c, pw, pwlen, hkdf);
	if (rc)
		goto out;
	if (!hkdf) {
		/* A legacy config keeps its layout, as gocryptfs 2.3 does on
		 * -passwd (its flags say how to unwrap). */
		if (RAND_bytes(c->enc_key, LEGACY_NONCE_LEN) != 1) {
			rc = -EIO;
			goto out;
		}
		rc = crypt_legacy(1, kek, c->enc_key, key,
				  c->enc_key + LEGACY_NONCE_LEN,
				  c->enc_key + LEGACY_NONCE_LEN +
					  MASTERKEY_LEN);
		if (!rc)
			c->enc_key_len = LEGACY_BLOB_LEN;
		goto out;
	}
	rc = kek_aead(&a, kek);
	if (rc)
		goto out;
	rc = aead_seal(a, c->enc_key, NULL, key, MASTERKEY_LEN, wrap_aad,
		       sizeof(wrap_aad));
	if (rc)
		goto out;
	c->enc_key_len = WRAP_BLOB_LEN;
out:
	aead_free(a);
	secure_zero(kek, sizeof(kek));
	return rc;
}

int masterkey_generate(uint8_t key[static MASTERKEY_LEN])
{
	if (RAND_priv_bytes(key, MASTERKEY_LEN) != 1) {
		secure_zero(key, MASTERKEY_LEN);
		return -EIO;
	}
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int masterkey_parse_hex(uint8_t key[static MASTERKEY_LEN], const char *s)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (*s == '-')
			continue;
		v = hexval(*s);
		if (v < 0 || n >= MASTERKEY_LEN)
			goto bad;
		if (hi < 0) {
			hi = v;
		} else {
			key[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	if (n != MASTERKEY_LEN || hi >= 0)
		goto bad;
	return 0;
bad:
	secure_zero(key, MASTERKEY_LEN);
	return -EINVAL;
}

void masterkey_format(char out[static MASTERKEY_DISPLAY_LEN],
		      const uint8_t key[static MASTERKEY_LEN])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;

	for (size_t g = 0; g < 8; g++) {
		if (g % 4 == 0)
			p += sprintf(p, "    ");
		for (size_t i = 0; i < 4; i++) {
			*p++ = hex[key[g * 4 + i] >> 4];
			*p++ = hex[key[g * 4 + i] & 15];
		}
		if (g != 7)
			*p++ = '-';
		if (g % 4 == 3)
			*p++ = '\n';
	}
	*p = '\0';
}
