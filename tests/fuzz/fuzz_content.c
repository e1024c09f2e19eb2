// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: file content decryption (spec §3) of arbitrary bytes:
 * header parse, ciphertext-to-plaintext size, block decryption of whatever
 * follows the header, and single-message open (symlinks, xattr values).
 *
 * Input: one selector byte, then a would-be ciphertext file. Selector bits
 * 0-1: cipher (3 = GCM), bits 2-3: implementation of that cipher, bits 4-5:
 * number of the first block. Seeds are the vector files with selector =
 * cipher, so they decrypt.
 *
 * Checks besides memory safety: only the documented return values; a bad
 * block number inside the input; on success the plaintext length matches
 * content_cipher_to_plain_size() and re-encrypting and decrypting again
 * gives the same plaintext.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fuzz_engines eng;

#define MAXIN (256 * 1024)

static void check_blocks(struct content *c, const uint8_t *ct, size_t ctlen,
			 uint64_t first, const uint8_t id[CONTENT_FILE_ID_LEN])
{
	static uint8_t pt[MAXIN], pt2[MAXIN], ct2[MAXIN + 4096];
	size_t ptlen = (size_t)-1, ptlen2 = 0;
	uint64_t bad = (uint64_t)-1;
	size_t cbs = content_cipher_bs(c);
	size_t nblocks = (ctlen + cbs - 1) / cbs;
	int rc;

	rc = content_decrypt_blocks(c, pt, &ptlen, ct, ctlen, first, id, &bad);
	if (rc == -EBADMSG) {
		if (bad < first || bad >= first + nblocks)
			abort();
		return;
	}
	if (rc != 0)
		abort();
	if (ptlen != content_cipher_to_plain_size(c, ctlen + CONTENT_HEADER_LEN,
						  NULL))
		abort();
	if (ptlen == 0)
		return;
	if (content_encrypt_blocks(c, ct2, pt, ptlen, first, id))
		abort();
	rc = content_decrypt_blocks(c, pt2, &ptlen2, ct2,
				    content_plain_to_cipher_size(c, ptlen) -
					    CONTENT_HEADER_LEN,
				    first, id, &bad);
	if (rc || ptlen2 != ptlen || memcmp(pt, pt2, ptlen))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool inited;
	static uint8_t msg[MAXIN];
	uint8_t id[CONTENT_FILE_ID_LEN];
	struct content *c;
	int cipher, rc;
	bool invalid = false;

	if (!inited) {
		fuzz_engines_init(&eng);
		inited = true;
	}
	if (size < 1 || size > MAXIN)
		return 0;
	cipher = data[0] & 3;
	if (cipher == 3)
		cipher = 0;
	c = eng.content[cipher][((data[0] >> 2) & 3) % eng.n[cipher]];
	data++;
	size--;

	(void)content_cipher_to_plain_size(c, size, &invalid);
	if (size >= CONTENT_HEADER_LEN) {
		rc = content_header_parse(data, id);
		if (rc == 0)
			check_blocks(c, data + CONTENT_HEADER_LEN,
				     size - CONTENT_HEADER_LEN,
				     (data[-1] >> 4) & 3, id);
		else if (rc != -EBADMSG)
			abort();
	}
	/* the same bytes as a sealed single message */
	rc = content_open_msg(c, msg, data, size);
	if (rc != 0 && rc != -EBADMSG)
		abort();
	return 0;
}
