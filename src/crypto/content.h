/* SPDX-License-Identifier: MIT */
/*
 * File content encryption of the gocryptfs v2 format (spec §3): file header,
 * 4 KiB blocks sealed with block number and file ID as AAD, the hole rule,
 * and size/offset arithmetic in both directions. No I/O happens here: the
 * filesystem reads and writes bytes, this module transforms them.
 *
 * Single messages (symlink targets, xattr values) are sealed here too, with
 * AAD = BE64(0) (spec §3.2).
 */
#ifndef CRYPTO_CONTENT_H
#define CRYPTO_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONTENT_PLAIN_BS 4096
#define CONTENT_HEADER_LEN 18
#define CONTENT_FILE_ID_LEN 16
#define CONTENT_HEADER_VERSION 2
/* Largest cipher block size of any cipher (XChaCha: 4096 + 24 + 16). */
#define CONTENT_MAX_CIPHER_BS 4136

struct aead;
struct content;

/* A content engine over aead (borrowed: must outlive the engine).
 * Returns 0 or -ENOMEM. Caller frees with content_free. */
int content_new(struct content **out, struct aead *aead);
void content_free(struct content *c);

/* Ciphertext block size (4128 or 4136) and per-block overhead (32 or 40). */
size_t content_cipher_bs(const struct content *c);
size_t content_overhead(const struct content *c);

/* Build a new header with a random file ID: hdr = BE16(2) || id. */
void content_header_new(const struct content *c,
			uint8_t hdr[static CONTENT_HEADER_LEN],
			uint8_t file_id[static CONTENT_FILE_ID_LEN]);
/* hdr = BE16(2) || file_id (reverse mode derives the ID, spec §5.4). */
void content_header_make(uint8_t hdr[static CONTENT_HEADER_LEN],
			 const uint8_t file_id[static CONTENT_FILE_ID_LEN]);
/* Parse a header (spec §3.1). Returns 0 and the file ID, or -EBADMSG for a
 * wrong version or an all-zero file ID. */
int content_header_parse(const uint8_t hdr[static CONTENT_HEADER_LEN],
			 uint8_t file_id[static CONTENT_FILE_ID_LEN]);

/* Size arithmetic (spec §3.8). cipher_to_plain never fails; *invalid (if
 * non-NULL) is set when the ciphertext size has an impossible tail. */
uint64_t content_plain_to_cipher_size(const struct content *c, uint64_t plain);
uint64_t content_cipher_to_plain_size(const struct content *c, uint64_t cipher,
				      bool *invalid);
/* Block number holding plaintext offset off, and where ciphertext block n
 * starts in the backing file (18 + n * CBS). */
static inline uint64_t content_block_of(uint64_t off)
{
	return off / CONTENT_PLAIN_BS;
}
uint64_t content_block_cipher_off(const struct content *c, uint64_t block);

/* Encrypt ptlen plaintext bytes that start at block first_block (block
 * aligned; the last block may be partial) into out, which must hold
 * content_plain_to_cipher_size(ptlen) - CONTENT_HEADER_LEN bytes, i.e. the
 * ciphertext blocks without header. Returns 0 or -EIO. */
int content_encrypt_blocks(struct content *c, uint8_t *out, const uint8_t *pt,
			   size_t ptlen, uint64_t first_block,
			   const uint8_t file_id[static CONTENT_FILE_ID_LEN]);
/* Decrypt ctlen bytes of ciphertext blocks starting at first_block into out
 * (*ptlen set to the plaintext length). Full-size all-zero blocks are holes
 * and decrypt to zeros. On authentication failure returns -EBADMSG with
 * *bad_block set to the absolute number of the first bad block; that block's
 * output is zeroed, the others are valid. */
int content_decrypt_blocks(struct content *c, uint8_t *out, size_t *ptlen,
			   const uint8_t *ct, size_t ctlen, uint64_t first_block,
			   const uint8_t file_id[static CONTENT_FILE_ID_LEN],
			   uint64_t *bad_block)
	__attribute__((warn_unused_result));

/*
 * Deterministic encryption of reverse mode (spec §5.4): block n is sealed
 * with nonce(n) = iv[0:8] || BE64(BE64^-1(iv[8:16]) + n), where iv is the
 * file's block-0 IV. Only for a cipher with 16-byte nonces (the view uses
 * AES-SIV, which stays safe with repeated nonces); -EINVAL otherwise. out
 * as for content_encrypt_blocks. Returns 0, -EINVAL or -EIO.
 */
#define CONTENT_IV_NONCE_LEN 16
void content_block_nonce(uint8_t nonce[static CONTENT_IV_NONCE_LEN],
			 const uint8_t block0_iv[static CONTENT_IV_NONCE_LEN],
			 uint64_t block);
int content_encrypt_blocks_iv(struct content *c, uint8_t *out,
			      const uint8_t *pt, size_t ptlen,
			      uint64_t first_block,
			      const uint8_t file_id[static CONTENT_FILE_ID_LEN],
			      const uint8_t block0_iv[static CONTENT_IV_NONCE_LEN]);

/* Single message with AAD BE64(0): symlink targets, xattr values. out must
 * hold len + content_msg_overhead() bytes. */
size_t content_msg_overhead(const struct content *c);
int content_seal_msg(struct content *c, uint8_t *out, const uint8_t *pt,
		     size_t len);
/* The same with a given nonce of content_nonce_len() bytes (reverse-mode
 * symlink targets, spec §5.5); NULL draws a random one. */
size_t content_nonce_len(const struct content *c);
int content_seal_msg_nonce(struct content *c, uint8_t *out,
			   const uint8_t *pt, size_t len,
			   const uint8_t *nonce);
/* Returns 0 (plaintext length inlen - overhead) or -EBADMSG, out zeroed. */
int content_open_msg(struct content *c, uint8_t *out, const uint8_t *in,
		     size_t inlen) __attribute__((warn_unused_result));

#endif
