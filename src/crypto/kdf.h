/* SPDX-License-Identifier: MIT */
/*
 * Key derivation (spec §1.6, §2): HKDF-SHA256 with gocryptfs's info strings
 * and scrypt for the password.
 */
#ifndef CRYPTO_KDF_H
#define CRYPTO_KDF_H

#include <stddef.h>
#include <stdint.h>

#define KDF_INFO_EME "EME filename encryption"
#define KDF_INFO_GCM "AES-GCM file content encryption"
#define KDF_INFO_SIV "AES-SIV file content encryption"
#define KDF_INFO_XCHACHA "XChaCha20-Poly1305 file content encryption"

/* RFC 5869 HKDF-SHA256 with an empty salt; out gets outlen bytes.
 * Returns 0 or -EIO. */
int kdf_hkdf_sha256(uint8_t *out, size_t outlen, const uint8_t *ikm,
		    size_t ikmlen, const char *info);

/* Largest N * r * p kdf_scrypt accepts (gocryptfs -scryptn 28). */
#define KDF_SCRYPT_MAX_WORK (1ull << 31)

/* scrypt (RFC 7914). N must be a power of two > 1. Returns 0, -EINVAL for bad
 * parameters (also a cost N * r * p above KDF_SCRYPT_MAX_WORK), -ENOMEM or
 * -EIO. */
int kdf_scrypt(uint8_t *out, size_t outlen, const uint8_t *pw, size_t pwlen,
	       const uint8_t *salt, size_t saltlen, uint64_t N, uint32_t r,
	       uint32_t p);

/* SHA-512 (legacy SIV key derivation, spec §2.3) and SHA-256. */
int kdf_sha512(uint8_t out[static 64], const uint8_t *in, size_t len);
int kdf_sha256(uint8_t out[static 32], const uint8_t *in, size_t len);
/* SHA-256 of a || b. */
int kdf_sha256_2(uint8_t out[static 32], const uint8_t *a, size_t alen,
		 const uint8_t *b, size_t blen);

/* SHA-256 fed piece by piece; peek gives the digest of what was added
 * followed by tail, leaving the context as it was. begin returns NULL
 * when out of memory; end frees (NULL is a no-op). */
struct kdf_sha256_ctx;
struct kdf_sha256_ctx *kdf_sha256_begin(void);
int kdf_sha256_add(struct kdf_sha256_ctx *c, const void *p, size_t n);
int kdf_sha256_peek(struct kdf_sha256_ctx *c, uint8_t out[static 32],
		    const void *tail, size_t tlen);
void kdf_sha256_end(struct kdf_sha256_ctx *c);

#endif
