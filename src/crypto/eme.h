/* SPDX-License-Identifier: MIT */
/*
 * EME (ECB-Mix-ECB, Halevi-Rogaway) wide-block encryption over AES-256, as
 * gocryptfs uses it for file and xattr names (spec §4.4): a 16-byte tweak and
 * 1..128 blocks of 16 bytes. Private to src/crypto.
 *
 * One struct eme may be used from many threads at once: each thread gets its
 * own pair of AES-256-ECB contexts, keyed on first use and reused afterwards.
 */
#ifndef CRYPTO_EME_H
#define CRYPTO_EME_H

#include <stddef.h>
#include <stdint.h>

#define EME_BLOCK 16
#define EME_MAX_BLOCKS 128

struct eme;

/* Key an instance; the key is copied into locked memory. Returns 0, -ENOMEM
 * or -EIO. Caller frees with eme_free. */
int eme_new(struct eme **out, const uint8_t key[static 32]);
/* Wipe the key and free every thread's contexts. NULL is a no-op. No thread
 * may use the instance during or after the call. */
void eme_free(struct eme *e);

/* Encrypt or decrypt len bytes (a multiple of 16, 16..2048) from in to out
 * under tweak. in and out may be the same buffer. Returns 0, -EINVAL for a
 * bad length, -ENOMEM or -EIO (library failure). */
int eme_encrypt(struct eme *e, uint8_t *out, const uint8_t *in, size_t len,
		const uint8_t tweak[static 16]);
int eme_decrypt(struct eme *e, uint8_t *out, const uint8_t *in, size_t len,
		const uint8_t tweak[static 16]);

#endif
