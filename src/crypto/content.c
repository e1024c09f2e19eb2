/* SPDX-License-Identifier: MIT */
/*
 * File content transform (spec §3): header, block encryption through the
 * batch calls of aead.h, the hole rule, and size/offset arithmetic. Holds no
 * key itself: the struct aead it borrows does. Thread-safe as far as the
 * aead instance is (it is).
 */
#include "crypto/content.h"

#include "crypto/aead.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct content {
	struct aead *aead; /* borrowed */
	size_t overhead;   /* nonce + tag: 32 or 40 */
	size_t cbs;	   /* CONTENT_PLAIN_BS + overhead */
};

/* AAD of single messages (spec §3.2): BE64(0), no file ID. */
static const uint8_t msg_aad[8];

int content_new(struct content **out, struct aead *aead)
{
	struct content *c;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->aead = aead;
	c->overhead = aead_overhead(aead);
	c->cbs = CONTENT_PLAIN_BS + c->overhead;
	*out = c;
	return 0;
}

void content_free(struct content *c)
{
	free(c);
}

size_t content_cipher_bs(const struct content *c)
{
	return c->cbs;
}

size_t content_overhead(const struct content *c)
{
	return c->overhead;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

void content_header_new(const struct content *c,
			uint8_t hdr[static CONTENT_HEADER_LEN],
			uint8_t file_id[static CONTENT_FILE_ID_LEN])
{
	/* An all-zero file ID marks a corrupt header (spec §3.1); redraw in
	 * the (2^-128) case the CSPRNG returns one. */
	do
		aead_random_nonce(c->aead, file_id, CONTENT_FILE_ID_LEN);
	while (all_zero(file_id, CONTENT_FILE_ID_LEN));
	content_header_make(hdr, file_id);
}

void content_header_make(uint8_t hdr[static CONTENT_HEADER_LEN],
			 const uint8_t file_id[static CONTENT_FILE_ID_LEN])
{
	hdr[0] = CONTENT_HEADER_VERSION >> 8;
	hdr[1] = CONTENT_HEADER_VERSION & 0xff;
	memcpy(hdr + 2, file_id, CONTENT_FILE_ID_LEN);
}

int content_header_parse(const uint8_t hdr[static CONTENT_HEADER_LEN],
			 uint8_t file_id[static CONTENT_FILE_ID_LEN])
{
	unsigned version = (unsigned)hdr[0] << 8 | hdr[1];

	if (version != CONTENT_HEADER_VERSION ||
	    all_zero(hdr + 2, CONTENT_FILE_ID_LEN))
		return -EBADMSG;
	memcpy(file_id, hdr + 2, CONTENT_FILE_ID_LEN);
	return 0;
}

/* Spec §3.8: cipher(p) = 18 + p + OH * ceil(p / 4096); saturates at
 * UINT64_MAX for sizes no file can have. */
uint64_t content_plain_to_cipher_size(const struct content *c, uint64_t plain)
{
	uint64_t blocks, oh;

	if (plain == 0)
		return 0;
	blocks = plain / CONTENT_PLAIN_BS + (plain % CONTENT_PLAIN_BS != 0);
	if (plain > UINT64_MAX - CONTENT_HEADER_LEN ||
	    blocks > (UINT64_MAX - CONTENT_HEADER_LEN - plain) / c->overhead)
		return UINT64_MAX;
	oh = blocks * c->overhead;
	return CONTENT_HEADER_LEN + plain + oh;
}

/* Spec §3.8, reverse direction. Computed per block so nothing overflows:
 * a tail of 1..OH bytes cannot hold a byte of plaintext and counts as one
 * (invalid) byte, as gocryptfs shows it. */
uint64_t content_cipher_to_plain_size(const struct content *c, uint64_t cipher,
				      bool *invalid)
{
	uint64_t body, full, tail, plain;
	bool bad = false;

	if (cipher <= CONTENT_HEADER_LEN) {
		/* 0: empty; 18: header only (interrupted write), shown as
		 * empty; 1..17: corrupt, also shown as empty. */
		if (invalid)
			*invalid = cipher != 0 && cipher != CONTENT_HEADER_LEN;
		return 0;
	}
	body = cipher - CONTENT_HEADER_LEN;
	full = body / c->cbs;
	tail = body % c->cbs;
	plain = full * CONTENT_PLAIN_BS;
	if (tail > c->overhead) {
		plain += tail - c->overhead;
	} else if (tail > 0) {
		plain += 1;
		bad = true;
	}
	if (invalid)
		*invalid = bad;
	return plain;
}

uint64_t content_block_cipher_off(const struct content *c, uint64_t block)
{
	return CONTENT_HEADER_LEN + block * c->cbs;
}

int content_encrypt_blocks(struct content *c, uint8_t *out, const uint8_t *pt,
			   size_t ptlen, uint64_t first_block,
			   const uint8_t file_id[static CONTENT_FILE_ID_LEN])
{
	if (ptlen == 0)
		return 0;
	return aead_seal_blocks(c->aead, out, pt, ptlen, CONTENT_PLAIN_BS,
				first_block, file_id, NULL) ? -EIO : 0;
}

/* spec §5.4: the low half of the block-0 IV, read big-endian, plus the
 * block number (mod 2^64). */
void content_block_nonce(uint8_t nonce[static CONTENT_IV_NONCE_LEN],
			 const uint8_t block0_iv[static CONTENT_IV_NONCE_LEN],
			 uint64_t block)
{
	uint64_t lo = 0;

	for (int i = 8; i < 16; i++)
		lo = lo << 8 | block0_iv[i];
	lo += block;
	memcpy(nonce, block0_iv, 8);
	for (int i = 15; i >= 8; i--, lo >>= 8)
		nonce[i] = (uint8_t)lo;
}

/* Nonces of one aead_seal_blocks call in content_encrypt_blocks_iv: 256
 * blocks (1 MiB of plaintext, the largest FUSE read) for 4 KiB of stack. */
#define IV_BATCH 256

int content_encrypt_blocks_iv(struct content *c, uint8_t *out,
			      const uint8_t *pt, size_t ptlen,
			      uint64_t first_block,
			      const uint8_t file_id[static CONTENT_FILE_ID_LEN],
			      const uint8_t block0_iv[static CONTENT_IV_NONCE_LEN])
{
	uint8_t nonces[IV_BATCH * CONTENT_IV_NONCE_LEN];
	size_t done = 0;

	if (aead_nonce_len(c->aead) != CONTENT_IV_NONCE_LEN)
		return -EINVAL;
	while (done < ptlen) {
		size_t len = ptlen - done, n;

		if (len > (size_t)IV_BATCH * CONTENT_PLAIN_BS)
			len = (size_t)IV_BATCH * CONTENT_PLAIN_BS;
		n = (len + CONTENT_PLAIN_BS - 1) / CONTENT_PLAIN_BS;
		for (size_t i = 0; i < n; i++)
			content_block_nonce(nonces + i * CONTENT_IV_NONCE_LEN,
					    block0_iv, first_block + i);
		if (aead_seal_blocks(c->aead, out, pt + done, len,
				     CONTENT_PLAIN_BS, first_block, file_id,
				     nonces))
			return -EIO;
		out += len + n * c->overhead;
		done += len;
		first_block += n;
	}
	return 0;
}

int content_decrypt_blocks(struct content *c, uint8_t *out, size_t *ptlen,
			   const uint8_t *ct, size_t ctlen, uint64_t first_block,
			   const uint8_t file_id[static CONTENT_FILE_ID_LEN],
			   uint64_t *bad_block)
{
	size_t full = ctlen / c->cbs, tail = ctlen % c->cbs, good, bad = 0;
	int rc;

	*ptlen = 0;
	if (ctlen == 0)
		return 0;
	/* A tail of 1..OH bytes holds no plaintext (spec §3.4 rule 3, §3.8):
	 * open the blocks before it, then report it as the bad block. */
	good = tail > c->overhead ? ctlen : full * c->cbs;
	if (good) {
		rc = aead_open_blocks(c->aead, out, ct, good,
				      CONTENT_PLAIN_BS, first_block, file_id,
				      &bad);
		if (rc) {
			if (bad_block)
				*bad_block = first_block + bad;
			*ptlen = full * CONTENT_PLAIN_BS +
				 (tail > c->overhead ? tail - c->overhead : 0);
			return -EBADMSG;
		}
	}
	if (good != ctlen) {
		if (bad_block)
			*bad_block = first_block + full;
		*ptlen = full * CONTENT_PLAIN_BS;
		return -EBADMSG;
	}
	*ptlen = full * CONTENT_PLAIN_BS +
		 (tail ? tail - c->overhead : 0);
	return 0;
}

size_t content_msg_overhead(const struct content *c)
{
	return c->overhead;
}

size_t content_nonce_len(const struct content *c)
{
	return aead_nonce_len(c->aead);
}

int content_seal_msg(struct content *c, uint8_t *out, const uint8_t *pt,
		     size_t len)
{
	return content_seal_msg_nonce(c, out, pt, len, NULL);
}

int content_seal_msg_nonce(struct content *c, uint8_t *out,
			   const uint8_t *pt, size_t len,
			   const uint8_t *nonce)
{
	return aead_seal(c->aead, out, nonce, pt, len, msg_aad,
			 sizeof(msg_aad)) ? -EIO : 0;
}

int content_open_msg(struct content *c, uint8_t *out, const uint8_t *in,
		     size_t inlen)
{
	if (inlen < c->overhead)
		return -EBADMSG;
	return aead_open(c->aead, out, in, inlen, msg_aad, sizeof(msg_aad)) ?
		       -EBADMSG : 0;
}
