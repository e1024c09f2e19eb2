/* SPDX-License-Identifier: MIT */
/*
 * The master key and its wrapping in gocryptfs.conf (spec §1.6): scrypt of
 * the password gives a key-encryption key (through HKDF on v1.3+ configs),
 * which seals the 32-byte master key with AES-256-GCM (16-byte nonce, AAD
 * of 8 zero bytes). Legacy configs without HKDF (12-byte nonce, KEK =
 * scrypt output) keep that layout when re-wrapped (-passwd, as gocryptfs
 * 2.3). Every intermediate secret is wiped before return.
 */
#ifndef CONFIG_MASTERKEY_H
#define CONFIG_MASTERKEY_H

#include <stddef.h>
#include <stdint.h>

#define MASTERKEY_LEN 32
#define MASTERKEY_DEFAULT_LOGN 16
#define MASTERKEY_MIN_LOGN 10
#define MASTERKEY_MAX_LOGN 28

struct conf;

/*
 * Unwrap c->enc_key with pw into key. Returns 0; -EACCES if the password is
 * wrong (authentication failure, or a blob of the wrong size); -EPROTO if
 * the scrypt parameters cannot be used (conf_validate_unlock fails);
 * -ENOMEM or -EIO. key is zeroed on failure.
 */
int masterkey_unwrap(const struct conf *c, const uint8_t *pw, size_t pwlen,
		     uint8_t key[static MASTERKEY_LEN]);

/*
 * Wrap key with pw into c: fresh 32-byte salt, N = 2^logn, R 8, P 1,
 * KeyLen 32, fresh nonce; sets c->enc_key in the layout c's flags name:
 * HKDF (16-byte nonce) or legacy (12-byte nonce). Returns 0, -EINVAL (logn
 * out of range), -ENOMEM or -EIO.
 */
int masterkey_wrap(struct conf *c, unsigned logn, const uint8_t *pw,
		   size_t pwlen, const uint8_t key[static MASTERKEY_LEN]);

/* Fill key with 32 bytes from the CSPRNG. Returns 0 or -EIO. */
int masterkey_generate(uint8_t key[static MASTERKEY_LEN]);

/* Parse a -masterkey string: dashes removed, 64 hex digits. Returns 0 or
 * -EINVAL (key zeroed). */
int masterkey_parse_hex(uint8_t key[static MASTERKEY_LEN], const char *s);

/* The -init display format of spec §6.1 (two lines, indented, grouped),
 * e.g. "    bbced0fb-...-c2920b58-\n    6e00eeb8-...-7abab112\n".
 * out must hold MASTERKEY_DISPLAY_LEN bytes. */
#define MASTERKEY_DISPLAY_LEN 96
void masterkey_format(char out[static MASTERKEY_DISPLAY_LEN],
		      const uint8_t key[static MASTERKEY_LEN]);

#endif
