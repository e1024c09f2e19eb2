/* SPDX-License-Identifier: MIT */
/*
 * The content-cipher interface. A *cipher* is one of the three gocryptfs
 * content algorithms (spec §3.5-3.7); an *implementation* is one library's
 * code for it (OpenSSL libcrypto, libgcrypt, or our own AES-GCM on VAES,
 * which needs a CPU with AVX-512). Every implementation of a
 * cipher produces identical bytes. Callers above src/crypto see only this
 * header and never learn which library runs.
 *
 * A struct aead is one keyed instance. It is safe to use from many threads
 * at once: each thread gets its own library context, keyed once on first use
 * and reused for every later call (never re-keyed per block, never shared).
 * Random nonces come from a per-thread buffer refilled from the CSPRNG.
 *
 * Message layout (what gocryptfs stores, spec §3.5-3.7), nonce first:
 *   AES-GCM-256:        nonce(16) || C || tag(16)
 *   AES-SIV-512:        nonce(16) || SIV(16) || C
 *   XChaCha20-Poly1305: nonce(24) || C || tag(16)
 * so sealed length = plaintext length + aead_overhead().
 */
#ifndef CRYPTO_AEAD_H
#define CRYPTO_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum aead_cipher {
	AEAD_AES_GCM_256 = 0,
	AEAD_AES_SIV_512 = 1,
	AEAD_XCHACHA20_POLY1305 = 2,
};
#define AEAD_CIPHER_COUNT 3

#define AEAD_TAG_LEN 16
#define AEAD_MAX_NONCE_LEN 24
#define AEAD_MAX_KEY_LEN 64
#define AEAD_BLOCK_AAD_LEN 24 /* BE64(block number) || file ID */

struct aead_impl; /* one library's implementation of one cipher */
struct aead;	  /* a keyed instance */

/* "AES-GCM-256", "AES-SIV-512", "XChaCha20-Poly1305" (the -info names). */
const char *aead_cipher_name(enum aead_cipher c);
/* Content key length: 32, 64, 32. */
size_t aead_cipher_key_len(enum aead_cipher c);
/* Nonce length: 16, 16, 24. */
size_t aead_cipher_nonce_len(enum aead_cipher c);

/* Registry of the implementations this CPU can run, in a fixed order (an
 * implementation that needs instructions the CPU lacks is left out). */
size_t aead_impl_count(void);
const struct aead_impl *aead_impl_at(size_t i);
/* The same including those left out (for -speed to list them as n/a). */
size_t aead_impl_count_all(void);
const struct aead_impl *aead_impl_at_all(size_t i);
/* Look up by full name, e.g. "AES-GCM-256-libgcrypt"; NULL if unknown. */
const struct aead_impl *aead_impl_find(const char *name);
const char *aead_impl_name(const struct aead_impl *impl);
enum aead_cipher aead_impl_cipher(const struct aead_impl *impl);
/* false when this CPU cannot run impl (aead_new fails with -ENOTSUP); then
 * *needs, if needs is non-NULL, names what is missing ("VAES/AVX-512"). */
bool aead_impl_supported(const struct aead_impl *impl, const char **needs);
/* The implementation auto mode uses for cipher c: measured by a short
 * benchmark (at most budget_ms milliseconds in total) the first time it is
 * asked, then remembered for the process. budget_ms 0 means a default of
 * 50 ms. If figures is non-NULL, a human-readable summary of what was
 * measured is written to it (NUL-terminated, at most figlen bytes). */
const struct aead_impl *aead_impl_auto(enum aead_cipher c, unsigned budget_ms,
				       char *figures, size_t figlen);

/* Key an instance of impl with key (aead_cipher_key_len bytes; copied into
 * locked memory). Returns 0 or -EINVAL / -ENOMEM / -EIO, or -ENOTSUP when
 * the CPU cannot run impl. Caller frees. */
int aead_new(struct aead **out, const struct aead_impl *impl,
	     const uint8_t *key, size_t key_len);
/* Wipe keys and every thread's context; NULL is a no-op. No thread may use
 * the instance during or after the call. */
void aead_free(struct aead *a);

const struct aead_impl *aead_get_impl(const struct aead *a);
size_t aead_nonce_len(const struct aead *a);
/* Bytes added to each message: nonce + tag. */
size_t aead_overhead(const struct aead *a);

/* Fill n bytes with fresh random nonce material from this thread's buffer.
 * Aborts if the CSPRNG fails (nothing safe can continue). */
void aead_random_nonce(struct aead *a, uint8_t *out, size_t n);

/* Seal one message: out (ptlen + overhead bytes) = nonce || body.
 * nonce NULL draws a random one; a given nonce is for reverse mode's
 * derived nonces (spec §5), tests and vectors.
 * Returns 0 or -EIO. */
int aead_seal(struct aead *a, uint8_t *out, const uint8_t *nonce,
	      const uint8_t *pt, size_t ptlen, const uint8_t *aad,
	      size_t aadlen);
/* Open one message of inlen bytes (nonce first) into out (inlen - overhead
 * bytes). Returns 0, or -EBADMSG on any authentication or format failure,
 * with out zeroed. */
int aead_open(struct aead *a, uint8_t *out, const uint8_t *in, size_t inlen,
	      const uint8_t *aad, size_t aadlen)
	__attribute__((warn_unused_result));

/*
 * Batch calls over consecutive content blocks of one file (spec §3.2-3.4).
 * Plaintext is cut into blocks of block_size bytes (the last may be
 * shorter, never empty); block i gets AAD = BE64(first_block + i) || file_id
 * and a fresh random nonce (or nonces + i*nonce_len when nonces is given).
 * Ciphertext blocks are block_size + overhead bytes, the last one shorter.
 * Large batches are spread over a persistent worker pool on all cores.
 */
int aead_seal_blocks(struct aead *a, uint8_t *out, const uint8_t *pt,
		     size_t ptlen, size_t block_size, uint64_t first_block,
		     const uint8_t file_id[16], const uint8_t *nonces);
/* Open ctlen bytes of consecutive ciphertext blocks into out. A block that
 * is all zero bytes and full-size is a hole and opens to zeros (spec §3.4
 * rule 2). On failure returns -EBADMSG, stores the index (relative to
 * first_block) of the first bad block in *bad (if bad is non-NULL) and
 * zeroes that block's output; other blocks' output is still valid. */
int aead_open_blocks(struct aead *a, uint8_t *out, const uint8_t *ct,
		     size_t ctlen, size_t block_size, uint64_t first_block,
		     const uint8_t file_id[16], size_t *bad)
	__attribute__((warn_unused_result));

/* Single-thread throughput in MB/s of sealing 4096-byte blocks with a
 * 24-byte AAD and random nonces, on the calling thread, measured for at
 * least ms milliseconds of thread CPU time (cut short after 2*ms of wall
 * time on a loaded machine). aead_impl_bench does it on a
 * fresh instance with a random key. Returns 0 or a negative errno. */
int aead_bench(struct aead *a, unsigned ms, double *mbs);
int aead_impl_bench(const struct aead_impl *impl, unsigned ms, double *mbs);

/* Parallel path control: threads used for large batches (default: online
 * CPUs); 1 disables the pool. Effective before the pool first starts. */
void aead_set_threads(unsigned n);
unsigned aead_get_threads(void);

#endif
