/* SPDX-License-Identifier: MIT */
/*
 * Key derivation (spec §1.6, §2): HKDF-SHA256 without salt through the EVP_KDF
 * interface of OpenSSL 3, scrypt through libscrypt, and the SHA-2 digests.
 * Callers own every output buffer and wipe derived keys after use.
 */
#include "crypto/kdf.h"

#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libscrypt.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

static char sha256_name[] = "SHA256";

int kdf_hkdf_sha256(uint8_t *out, size_t outlen, const uint8_t *ikm,
		    size_t ikmlen, const char *info)
{
	EVP_KDF *kdf = NULL;
	EVP_KDF_CTX *kctx = NULL;
	OSSL_PARAM params[4], *p = params;
	int rc = -EIO;

	if (!out || !outlen || (!ikm && ikmlen) || !info)
		return -EINVAL;
	kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	if (!kdf)
		goto out;
	kctx = EVP_KDF_CTX_new(kdf);
	if (!kctx)
		goto out;
	/* No salt parameter: RFC 5869 then uses HashLen zero bytes (§2.1). */
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						sha256_name, 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						 (void *)(uintptr_t)ikm,
						 ikmlen);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
						 (void *)(uintptr_t)info,
						 strlen(info));
	*p = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, out, outlen, params) != 1)
		goto out;
	rc = 0;
out:
	if (rc)
		log_err("hkdf-sha256 failed");
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	return rc;
}

int kdf_scrypt(uint8_t *out, size_t outlen, const uint8_t *pw, size_t pwlen,
	       const uint8_t *salt, size_t saltlen, uint64_t N, uint32_t r,
	       uint32_t p)
{
	if (!out || !outlen || (!pw && pwlen) || (!salt && saltlen))
		return -EINVAL;
	/* N not a power of two makes Go's scrypt fail; reject it cleanly
	 * (spec §1.5). libscrypt's own limit: r * p < 2^30. */
	if (N < 2 || (N & (N - 1)) || r == 0 || p == 0 ||
	    (uint64_t)r * p >= (1u << 30))
		return -EINVAL;
	/* 128 * r * N bytes of memory; refuse what cannot be addressed. */
	if (N > SIZE_MAX / 128 / r)
		return -ENOMEM;
	/* The time grows with N * r * p: beyond the dearest cost gocryptfs
	 * can write (-scryptn 28: N = 2^28, r = 8, p = 1) a hostile config
	 * would keep us busy for hours (p = 2^20 at N = 2^16: days). */
	if (N > KDF_SCRYPT_MAX_WORK / ((uint64_t)r * p)) {
		log_err("scrypt cost N=%llu r=%u p=%u is too high",
			(unsigned long long)N, r, p);
		return -EINVAL;
	}
	errno = 0;
	if (libscrypt_scrypt(pw, pwlen, salt, saltlen, N, r, p, out,
			     outlen) != 0) {
		int e = errno;

		log_err("scrypt failed");
		if (e == ENOMEM)
			return -ENOMEM;
		if (e == EINVAL || e == EFBIG)
			return -EINVAL;
		return -EIO;
	}
	return 0;
}

/* The digests are fetched once per process: a long-name lookup hashes on
 * every call and a fetch takes the provider store lock. */
static EVP_MD *md_sha256, *md_sha512;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void md_fetch(void)
{
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	md_sha512 = EVP_MD_fetch(NULL, "SHA512", NULL);
}

static int digest(bool sha512, uint8_t *out, const uint8_t *in, size_t len)
{
	EVP_MD *md;

	if (!in && len)
		return -EINVAL;
	pthread_once(&md_once, md_fetch);
	md = sha512 ? md_sha512 : md_sha256;
	if (!md || EVP_Digest(in, len, out, NULL, md, NULL) != 1) {
		log_err("sha%s failed", sha512 ? "512" : "256");
		return -EIO;
	}
	return 0;
}

int kdf_sha512(uint8_t out[static 64], const uint8_t *in, size_t len)
{
	return digest(true, out, in, len);
}

int kdf_sha256(uint8_t out[static 32], const uint8_t *in, size_t len)
{
	return digest(false, out, in, len);
}

int kdf_sha256_2(uint8_t out[static 32], const uint8_t *a, size_t alen,
		 const uint8_t *b, size_t blen)
{
	EVP_MD_CTX *ctx;
	int rc = -EIO;

	if ((!a && alen) || (!b && blen))
		return -EINVAL;
	pthread_once(&md_once, md_fetch);
	ctx = EVP_MD_CTX_new();
	if (ctx && md_sha256 && EVP_DigestInit_ex(ctx, md_sha256, NULL) == 1 &&
	    EVP_DigestUpdate(ctx, a, alen) == 1 &&
	    EVP_DigestUpdate(ctx, b, blen) == 1 &&
	    EVP_DigestFinal_ex(ctx, out, NULL) == 1)
		rc = 0;
	else
		log_err("sha256 failed");
	EVP_MD_CTX_free(ctx);
	return rc;
}

struct kdf_sha256_ctx {
	EVP_MD_CTX *md;
};

struct kdf_sha256_ctx *kdf_sha256_begin(void)
{
	struct kdf_sha256_ctx *c = malloc(sizeof(*c));

	pthread_once(&md_once, md_fetch);
	if (!c)
		return NULL;
	c->md = EVP_MD_CTX_new();
	if (!c->md || !md_sha256 ||
	    EVP_DigestInit_ex(c->md, md_sha256, NULL) != 1) {
		kdf_sha256_end(c);
		return NULL;
	}
	return c;
}

int kdf_sha256_add(struct kdf_sha256_ctx *c, const void *p, size_t n)
{
	return EVP_DigestUpdate(c->md, p, n) == 1 ? 0 : -EIO;
}

int kdf_sha256_peek(struct kdf_sha256_ctx *c, uint8_t out[static 32],
		    const void *tail, size_t tlen)
{
	EVP_MD_CTX *t = EVP_MD_CTX_new();
	int rc = -EIO;

	if (t && EVP_MD_CTX_copy_ex(t, c->md) == 1 &&
	    EVP_DigestUpdate(t, tail, tlen) == 1 &&
	    EVP_DigestFinal_ex(t, out, NULL) == 1)
		rc = 0;
	EVP_MD_CTX_free(t);
	return rc;
}

void kdf_sha256_end(struct kdf_sha256_ctx *c)
{
	if (c) {
		EVP_MD_CTX_free(c->md);
		free(c);
	}
}
