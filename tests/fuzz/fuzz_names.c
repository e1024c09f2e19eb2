// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: decoding stored names (spec §4): base64 -> EME -> unpad
 * -> validity checks, plus symlink targets, xattr names and the
 * long-name/sidecar/internal-entry classifiers, on arbitrary bytes.
 *
 * Input: one flag byte, then the stored name. Flags: bit 0 padded base64
 * (no Raw64), bit 1 deterministic names (zero IV), bit 2 the IV of the
 * vector's "sub" directory instead of the root one, bit 3 plaintext names,
 * bit 4 LongNameMax 100. Keys and IVs are those of vectors/gcm, so the
 * vector's names (the seeds) decrypt.
 *
 * Checks: only documented return values; a decrypted name is valid
 * (non-empty, no '/', no NUL, not "." or "..") and encrypts back to exactly
 * the input (so names are not malleable); the same round trip for xattr
 * names; a decrypted symlink target has the length the size function
 * predicts; a -badname display name is valid and leads back to its stored
 * name.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/names.h"
#include "fuzz_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int find_stored(const char *enc, void *arg)
{
	return strcmp(enc, arg) == 0;
}

/* -badname: a shown name is a valid name (at most 255 bytes, no '/' or
 * NUL, with the suffix) and leads back to the name it was made from. */
static void check_badname(const struct names *n, const uint8_t *iv,
			  const char *s)
{
	char d[NAMES_MAX_PLAIN + 1];
	int rc = names_badname_display(n, iv, s, d, sizeof(d));
	size_t len = strlen(d), sl = strlen(NAMES_BADNAME_SUFFIX);

	if (rc == -EINVAL || rc == -EBADMSG || rc == -ENAMETOOLONG)
		return;
	if (rc || len > NAMES_MAX_PLAIN || len <= sl || strchr(d, '/') ||
	    strcmp(d + len - sl, NAMES_BADNAME_SUFFIX))
		abort();
	if (!*s || strchr(s, '/'))
		return; /* not a stored name */
	if (names_badname_stored(n, iv, d, find_stored, (void *)s) != 1)
		abort();
}

/* vectors/gcm: root and sub/ gocryptfs.diriv */
static const char root_iv_hex[] = "8b7767db205c0159348593f1e870651c";
static const char sub_iv_hex[] = "d7d1629ef21ffc14d51b91edb054dc53";

static struct fuzz_engines eng;
static struct names *nm[32];
static uint8_t root_iv[16], sub_iv[16];

static void init(void)
{
	uint8_t mk[32], eme[32];

	fuzz_engines_init(&eng);
	fuzz_master_key(mk, AEAD_AES_GCM_256);
	if (kdf_hkdf_sha256(eme, 32, mk, 32, KDF_INFO_EME))
		abort();
	fuzz_unhex(root_iv, root_iv_hex, 16);
	fuzz_unhex(sub_iv, sub_iv_hex, 16);
	for (unsigned f = 0; f < 32; f++) {
		struct names_params p = {
			.plaintext = f & 8,
			.raw64 = !(f & 1),
			.diriv = !(f & 2),
			.longnamemax = (f & 16) ? 100 : 255,
		};

		if (names_new(&nm[f], eme, &p, eng.content[0][0]))
			abort();
	}
}

static void check_name(const struct names *n, const uint8_t iv[16],
		       const char *s, size_t len)
{
	char name[NAMES_MAX_PLAIN + 64], again[NAMES_MAX_CNAME + 64];
	char stored[NAMES_MAX_CNAME + 64];
	size_t nl;
	int rc;

	rc = names_decrypt(n, iv, s, len, name, sizeof(name));
	if (rc == -EBADMSG)
		return;
	if (rc != 0)
		abort();
	nl = strnlen(name, sizeof(name));
	if (nl == sizeof(name) || !names_valid_plain(name, nl))
		abort();
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    memchr(name, '/', nl))
		abort();
	rc = names_encrypt(n, iv, name, again, sizeof(again));
	if (rc != 0 || strlen(again) != len || memcmp(again, s, len))
		abort(); /* malleable: two stored names for one plaintext */
	rc = names_store_name(n, again, stored, sizeof(stored));
	if (rc < 0 || rc > 1)
		abort();
	/* with plaintext names "gocryptfs.longname.x" is an ordinary name
	 * (the filesystem checks the mode first); otherwise a stored name is
	 * long exactly when it was hashed */
	if (!names_params(n)->plaintext && (rc == 1) != names_is_long(stored))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool inited;
	char s[4200], out[4200], again[4200];
	const struct names *n;
	const uint8_t *iv;
	size_t len;
	long pl;
	int rc;

	if (!inited) {
		init();
		inited = true;
	}
	if (size < 1 || size > sizeof(s) - 1)
		return 0;
	n = nm[data[0] & 31];
	iv = (data[0] & 4) ? sub_iv : root_iv;
	len = size - 1;
	memcpy(s, data + 1, len);
	s[len] = '\0';

	check_name(n, iv, s, len);

	/* classifiers take C strings (the FS passes readdir names) */
	(void)names_is_long(s);
	(void)names_is_sidecar(s);
	(void)names_is_internal(n, s, true);
	(void)names_is_internal(n, s, false);

	rc = names_decrypt_symlink(n, s, strlen(s), out, sizeof(out));
	if (rc == 0) {
		pl = names_symlink_plain_len(n, s, strlen(s));
		if (pl < 0 || (size_t)pl != strlen(out))
			abort();
	} else if (rc != -EBADMSG && rc != -ENAMETOOLONG) {
		abort();
	}

	check_badname(n, iv, s);

	rc = names_decrypt_xattr(n, s, out, sizeof(out));
	if (rc == 0) {
		if (names_encrypt_xattr(n, out, again, sizeof(again)) ||
		    strcmp(again, s))
			abort();
	} else if (rc != 1 && rc != -EBADMSG) {
		abort();
	}
	return 0;
}
