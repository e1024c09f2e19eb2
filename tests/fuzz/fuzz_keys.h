/* SPDX-License-Identifier: MIT */
/*
 * Shared setup of the crypto fuzz targets: content engines for every
 * registered AEAD implementation, keyed like the gocryptfs 2.3 vector
 * filesystems (their master keys through HKDF, spec §2.1), so that seeds
 * taken from the vectors decrypt and the fuzzer starts on the success path.
 * Test data only: these keys protect nothing.
 */
#ifndef FUZZ_FUZZ_KEYS_H
#define FUZZ_FUZZ_KEYS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/aead.h"
#include "crypto/content.h"
#include "crypto/kdf.h"

/* vectors/{gcm,aessiv,xchacha}/masterkey.hex */
static const char *const fuzz_mk_hex[AEAD_CIPHER_COUNT] = {
	"bbced0fb58def0e78e2a8be6c2920b586e00eeb85f27e7a783e378797abab112",
	"77481a3efdc396a25fbae7388a07616dfc76983a8eed6c15488ac2cf312793d1",
	"0b5022088851638ad8111922ec4945f27bd95fdd6b0078c3be7698e22b448a0b",
};

static const char *const fuzz_info[AEAD_CIPHER_COUNT] = {
	KDF_INFO_GCM, KDF_INFO_SIV, KDF_INFO_XCHACHA,
};

#define FUZZ_MAX_IMPLS 16

struct fuzz_engines {
	size_t n[AEAD_CIPHER_COUNT];
	struct aead *aead[AEAD_CIPHER_COUNT][FUZZ_MAX_IMPLS];
	struct content *content[AEAD_CIPHER_COUNT][FUZZ_MAX_IMPLS];
};

static inline void fuzz_unhex(uint8_t *out, const char *hex, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			abort();
		out[i] = (uint8_t)v;
	}
}

static inline void fuzz_master_key(uint8_t mk[32], int cipher)
{
	fuzz_unhex(mk, fuzz_mk_hex[cipher], 32);
}

/* Build engines for all implementations once; aborts on failure. */
static inline void fuzz_engines_init(struct fuzz_engines *e)
{
	aead_set_threads(1);
	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < aead_impl_count(); i++) {
		const struct aead_impl *impl = aead_impl_at(i);
		int c = (int)aead_impl_cipher(impl);
		uint8_t mk[32], key[AEAD_MAX_KEY_LEN];
		size_t kl = aead_cipher_key_len((enum aead_cipher)c);
		size_t k = e->n[c];

		if (k >= FUZZ_MAX_IMPLS)
			continue;
		fuzz_master_key(mk, c);
		if (kdf_hkdf_sha256(key, kl, mk, 32, fuzz_info[c]) ||
		    aead_new(&e->aead[c][k], impl, key, kl) ||
		    content_new(&e->content[c][k], e->aead[c][k]))
			abort();
		e->n[c]++;
	}
	for (int c = 0; c < AEAD_CIPHER_COUNT; c++)
		if (!e->n[c])
			abort();
}

#endif
