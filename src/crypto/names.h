/* SPDX-License-Identifier: MIT */
/*
 * File-name transform of the gocryptfs v2 format (spec §4): EME-AES-256 with
 * the per-directory IV, PKCS#7 pad16, names-b64, long-name hashing, and the
 * xattr-name and symlink-target encodings. Pure computation, no I/O: the
 * filesystem reads gocryptfs.diriv and .name files and passes bytes in.
 *
 * With plaintext names every name passes through unchanged (validity checks
 * still apply); symlink targets too.
 */
#ifndef CRYPTO_NAMES_H
#define CRYPTO_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NAMES_DIRIV_LEN 16
#define NAMES_DIRIV_FILE "gocryptfs.diriv"
#define NAMES_CONF_FILE "gocryptfs.conf"
#define NAMES_LONG_PREFIX "gocryptfs.longname."
#define NAMES_LONG_SUFFIX ".name"
#define NAMES_MAX_PLAIN 255
/* Longest encrypted (unhashed) name: 256 bytes in padded base64, + NUL. */
#define NAMES_MAX_CNAME 345
/* Largest accepted .name sidecar (spec §4.5). */
#define NAMES_MAX_SIDECAR 344
#define NAMES_XATTR_PREFIX "user.gocryptfs."
/* What -badname appends to the names it shows (spec §4.6). */
#define NAMES_BADNAME_SUFFIX " GOCRYPTFS_BAD_NAME"

struct content;
struct names;

struct names_params {
	bool plaintext;	       /* PlaintextNames */
	bool raw64;	       /* Raw64: unpadded base64url, else padded */
	bool diriv;	       /* DirIV: per-directory IVs, else all-zero IV */
	unsigned longnamemax;  /* hash when len(cname) > this; 62..255 */
};

/* eme_key: 32 bytes, copied into locked memory. content is borrowed (for
 * symlink targets) and must outlive the object. Caller frees. */
int names_new(struct names **out, const uint8_t eme_key[static 32],
	      const struct names_params *p, struct content *content);
void names_free(struct names *n);
const struct names_params *names_params(const struct names *n);

/* Plaintext name validity (spec §4.2): non-empty, <= 255 bytes, no '/',
 * not "." or "..". */
bool names_valid_plain(const char *name, size_t len);

/* Encrypt one plaintext name component with directory IV iv (ignored for
 * plaintext names) into cname (NUL-terminated, cap >= NAMES_MAX_CNAME).
 * Returns 0, -EINVAL (invalid name) or -ENAMETOOLONG (> 255 bytes). */
int names_encrypt(const struct names *n, const uint8_t iv[static 16],
		  const char *name, char *cname, size_t cap);
/* Decrypt an encrypted (unhashed) name component, with every check of spec
 * §4.3 and §4.2. Returns 0 with a NUL-terminated name (cap >= 256), or
 * -EBADMSG for anything corrupt. */
int names_decrypt(const struct names *n, const uint8_t iv[static 16],
		  const char *cname, size_t len, char *name, size_t cap);

/* Length of what names_encrypt makes of a len-byte name. */
size_t names_encrypted_len(const struct names *n, size_t len);

/* If cname is longer than the threshold, write its stored form
 * "gocryptfs.longname.<b64 sha256>" to stored and return 1; otherwise copy
 * cname to stored and return 0. cap >= NAMES_MAX_CNAME. */
int names_store_name(const struct names *n, const char *cname, char *stored,
		     size_t cap);
/* The long form "gocryptfs.longname.<b64 sha256>" of cname, whatever its
 * length. Returns 0 or -ENAMETOOLONG / -EIO. */
int names_long_name(const struct names *n, const char *cname, char *stored,
		    size_t cap);
/* "gocryptfs.longname.X" (not the sidecar). */
bool names_is_long(const char *stored);
/* "gocryptfs.longname.X.name". */
bool names_is_sidecar(const char *stored);
/* Entries hidden from listings in a directory (root: is_root). */
bool names_is_internal(const struct names *n, const char *stored,
		       bool is_root);

/* -badname (spec §4.6): the name shown for an encrypted name enc (a stored
 * name, or the content of a long name's .name file) that does not decrypt,
 * as gocryptfs 2.3 shows it: the longest prefix of at least 16 bytes'
 * worth of names-b64 that decrypts and unpads (with 2.3's base64, which
 * ignored unused trailing bits), then the rest of enc, then
 * NAMES_BADNAME_SUFFIX; enc and the suffix if no prefix decrypts. out gets
 * the NUL-terminated name (cap > NAMES_MAX_PLAIN). Returns 0, or (not
 * shown) -EBADMSG for a result with '/' or NUL, -ENAMETOOLONG for one
 * longer than 255 bytes, -EINVAL for an empty enc or plaintext names. */
int names_badname_display(const struct names *n, const uint8_t iv[static 16],
			  const char *enc, char *out, size_t cap);
/* The encrypted names whose -badname display could be display: calls
 * fn(enc, arg) for each (display without the suffix itself, then each
 * prefix encrypted, in every spelling 2.3 read the same, with the rest),
 * until fn returns nonzero, which is returned; 0 when it never did. The
 * caller checks which one exists and shows as display. */
typedef int names_badname_fn(const char *stored, void *arg);
int names_badname_stored(const struct names *n, const uint8_t iv[static 16],
			 const char *display, names_badname_fn *fn,
			 void *arg);

/* Symlink target (spec §4.9): out gets names-b64(seal(target)), or the
 * target itself for plaintext names. Returns 0 or -ENAMETOOLONG / -EIO. */
int names_encrypt_symlink(const struct names *n, const char *target,
			  size_t len, char *out, size_t cap);
/* The same with a given nonce (reverse mode, spec §5.5). */
int names_encrypt_symlink_nonce(const struct names *n, const char *target,
				size_t len, const uint8_t *nonce, char *out,
				size_t cap);
/* Length of the stored form of a len-byte target (for st_size). */
size_t names_symlink_cipher_len(const struct names *n, size_t len);
/* Returns 0 with NUL-terminated target, or -EBADMSG. */
int names_decrypt_symlink(const struct names *n, const char *stored,
			  size_t len, char *out, size_t cap);
/* Plaintext length of an encrypted symlink target (stored, stored_len
 * chars) for st_size without decrypting; -EBADMSG if impossible. stored may
 * be NULL when names_symlink_len_from_size() is true (plaintext names or
 * Raw64: the length alone decides); with padded base64 the padding
 * does, and NULL gives -EINVAL. */
bool names_symlink_len_from_size(const struct names *n);
long names_symlink_plain_len(const struct names *n, const char *stored,
			     size_t stored_len);

/* xattr names (spec §4.10): "user.gocryptfs." || names-b64(EME(tweak
 * "xattr_name_iv_xx", pad16(name))). ACL names pass through unchanged. */
int names_encrypt_xattr(const struct names *n, const char *name, char *out,
			size_t cap);
/* Returns 0 with the plaintext name, 1 if the backing name is not ours
 * (hide it), or -EBADMSG for a corrupt encrypted name. */
int names_decrypt_xattr(const struct names *n, const char *stored, char *out,
			size_t cap);
/* Decrypt a stored (non-empty) xattr value of len bytes into out (len
 * bytes), also in the base64 form old versions wrote (spec §4.10). Returns
 * 0 with *outlen set, -EBADMSG (out zeroed) or -ENOMEM. */
int names_decrypt_xattr_value(const struct names *n, uint8_t *out,
			      size_t *outlen, const uint8_t *raw, size_t len)
	__attribute__((warn_unused_result));

/* Reverse mode (spec §5.2): pathiv(P, PURPOSE) = SHA-256(P || 0x00 ||
 * PURPOSE)[0:16], P the relative cipher path in the view ("" for the root,
 * no leading or trailing slash). Returns 0 or -EIO. */
#define NAMES_PATHIV_DIRIV "DIRIV"
#define NAMES_PATHIV_FILEID "FILEID"
#define NAMES_PATHIV_BLOCK0 "BLOCK0IV"
#define NAMES_PATHIV_SYMLINK "SYMLINKIV"
int names_pathiv(uint8_t out[static NAMES_DIRIV_LEN], const char *path,
		 size_t len, const char *purpose);

/* The same for a path built a component at a time (reverse mode's walk
 * down a deep chain): begin with a path, add components ("/" and the
 * name; no "/" while the path is empty), get the IV of the path so far.
 * Each step costs the component's length, not the path's. */
struct names_pathiv_ctx;
struct names_pathiv_ctx *names_pathiv_begin(const char *path, size_t len);
int names_pathiv_add(struct names_pathiv_ctx *c, const char *name);
int names_pathiv_get(struct names_pathiv_ctx *c,
		     uint8_t out[static NAMES_DIRIV_LEN], const char *purpose);
void names_pathiv_end(struct names_pathiv_ctx *c);

#endif
