// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: long-name sidecars (spec §4.5). The filesystem reads
 * "gocryptfs.longname.X.name" (1..NAMES_MAX_SIDECAR bytes, no NUL) and
 * decrypts its content with the directory IV; this target does the same
 * with arbitrary bytes, keyed like vectors/gcm. A sidecar that decrypts
 * must hold a valid name whose encryption is exactly the sidecar content,
 * and whose stored form (if the name is long) is a hashed
 * "gocryptfs.longname." entry, never a sidecar or an internal name.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/names.h"
#include "fuzz_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char root_iv_hex[] = "8b7767db205c0159348593f1e870651c";

static struct fuzz_engines eng;
static struct names *nm;
static uint8_t iv[16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool inited;
	char side[NAMES_MAX_SIDECAR + 1], name[NAMES_MAX_PLAIN + 64];
	char again[NAMES_MAX_CNAME + 64], stored[NAMES_MAX_CNAME + 64];
	int rc;

	if (!inited) {
		uint8_t mk[32], eme[32];
		struct names_params p = {
			.raw64 = true, .diriv = true, .longnamemax = 255,
		};

		fuzz_engines_init(&eng);
		fuzz_master_key(mk, AEAD_AES_GCM_256);
		if (kdf_hkdf_sha256(eme, 32, mk, 32, KDF_INFO_EME) ||
		    names_new(&nm, eme, &p, eng.content[0][0]))
			abort();
		fuzz_unhex(iv, root_iv_hex, 16);
		inited = true;
	}
	/* what the filesystem accepts as a sidecar at all */
	if (size < 1 || size > NAMES_MAX_SIDECAR || memchr(data, 0, size))
		return 0;
	memcpy(side, data, size);
	side[size] = '\0';
	rc = names_decrypt(nm, iv, side, size, name, sizeof(name));
	if (rc == -EBADMSG)
		return 0;
	if (rc != 0)
		abort();
	if (!names_valid_plain(name, strnlen(name, sizeof(name))))
		abort();
	if (names_encrypt(nm, iv, name, again, sizeof(again)) ||
	    strcmp(again, side))
		abort();
	rc = names_store_name(nm, again, stored, sizeof(stored));
	if (rc < 0 || rc > 1)
		abort();
	if (rc == 1 && (!names_is_long(stored) || names_is_sidecar(stored) ||
			strlen(stored) > 255))
		abort();
	if (names_is_internal(nm, stored, false) ||
	    names_is_internal(nm, stored, true))
		abort();
	return 0;
}
