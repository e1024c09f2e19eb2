/* SPDX-License-Identifier: MIT */
/*
 * HChaCha20 (draft-irtf-cfrg-xchacha §2.2, spec §3.7): derives the
 * XChaCha20 subkey from a 256-bit key and the first 16 nonce bytes.
 * Neither OpenSSL nor libgcrypt exports it.
 */
#ifndef CRYPTO_HCHACHA20_H
#define CRYPTO_HCHACHA20_H

#include <stdint.h>

/* out may alias neither input. The caller wipes out when done. */
void hchacha20(uint8_t out[static 32], const uint8_t key[static 32],
	       const uint8_t nonce[static 16]);

#endif
