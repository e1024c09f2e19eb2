/* SPDX-License-Identifier: MIT */
/*
 * File-name transform (spec §4): pad16 + EME-AES-256 under the directory IV
 * + names-b64, the long-name hash, the listing filter, symlink targets (one
 * content message, names-b64 encoded) and xattr names (EME under a fixed
 * tweak). Every decryption applies all checks of §4.2/§4.3, so a stored name
 * decodes to at most one plaintext name and never to ".", "..", or a name
 * with '/' or NUL. Thread-safe: the EME instance keeps per-thread contexts.
 */
#include "crypto/names.h"

#include "common/b64.h"
#include "crypto/content.h"
#include "crypto/eme.h"
#include "crypto/kdf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct names {
	struct names_params p;
	enum b64_variant b64; /* names-b64 (spec §0) */
	struct eme *eme;
	struct content *content; /* borrowed, may be NULL */
};

/* Largest padded name: 255 bytes + 1 byte of padding, rounded to 16. */
#define PADDED_MAX 256
#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

/* spec §4.10: the fixed tweak of xattr names */
static const uint8_t xattr_tweak[16] = "xattr_name_iv_xx";
static const uint8_t zero_iv[16];

int names_new(struct names **out, const uint8_t eme_key[static 32],
	      const struct names_params *p, struct content *content)
{
	struct names *n;
	int rc;

	*out = NULL;
	if (!p->plaintext && (p->longnamemax < 62 || p->longnamemax > 255))
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->p = *p;
	n->b64 = p->raw64 ? B64_URL_RAW : B64_URL;
	n->content = content;
	/* xattr names are encrypted with plaintext names too (spec §4.8). */
	rc = eme_new(&n->eme, eme_key);
	if (rc) {
		free(n);
		return rc;
	}
	*out = n;
	return 0;
}

void names_free(struct names *n)
{
	if (!n)
		return;
	eme_free(n->eme);
	free(n);
}

const struct names_params *names_params(const struct names *n)
{
	return &n->p;
}

bool names_valid_plain(const char *name, size_t len)
{
	if (len == 0 || len > NAMES_MAX_PLAIN)
		return false;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return false;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	return true;
}

/* PKCS#7 to a multiple of 16 (spec §4.3): 1..16 bytes of value k. */
static size_t pad16(uint8_t *out, const void *in, size_t len)
{
	size_t k = 16 - len % 16;

	memcpy(out, in, len);
	memset(out + len, (int)k, k);
	return len + k;
}

/* Returns the unpadded length, or -EBADMSG. */
static long unpad16(const uint8_t *buf, size_t len)
{
	size_t k;

	if (len == 0 || len % 16)
		return -EBADMSG;
	k = buf[len - 1];
	if (k < 1 || k > 16 || k >= len)
		return -EBADMSG;
	for (size_t i = len - k; i < len; i++)
		if (buf[i] != k)
			return -EBADMSG;
	return (long)(len - k);
}

/* EME(pad16(in)) under tweak, names-b64 encoded into out. */
static int seal_name(const struct names *n, const uint8_t tweak[static 16],
		     const void *in, size_t len, char *out, size_t cap)
{
	uint8_t buf[PADDED_MAX];
	size_t plen;
	int rc;

	if (len > NAMES_MAX_PLAIN)
		return -ENAMETOOLONG;
	plen = pad16(buf, in, len);
	if (b64_encoded_len(plen, n->b64) + 1 > cap)
		return -ENAMETOOLONG;
	rc = eme_encrypt(n->eme, buf, buf, plen, tweak);
	if (rc)
		return rc == -EINVAL ? -EIO : rc;
	b64_encode(out, buf, plen, n->b64);
	return 0;
}

/* Reverse of seal_name with the checks of spec §4.3 steps 1-5: into out
 * (PADDED_MAX bytes), returns the plaintext length or -EBADMSG. */
static long open_name(const struct names *n, const uint8_t tweak[static 16],
		      const char *in, size_t len, uint8_t *out)
{
	size_t dlen;

	/* Go's decoder skips CR/LF, which made names malleable. */
	if (memchr(in, '\r', len) || memchr(in, '\n', len))
		return -EBADMSG;
	if (len > NAMES_MAX_CNAME - 1)
		return -EBADMSG;
	if (b64_decode(out, PADDED_MAX, &dlen, in, len, n->b64))
		return -EBADMSG;
	if (dlen == 0 || dlen % 16)
		return -EBADMSG;
	if (eme_decrypt(n->eme, out, out, dlen, tweak))
		return -EBADMSG;
	return unpad16(out, dlen);
}

int names_encrypt(const struct names *n, const uint8_t iv[static 16],
		  const char *name, char *cname, size_t cap)
{
	size_t len = strlen(name);

	if (len > NAMES_MAX_PLAIN)
		return -ENAMETOOLONG;
	if (!names_valid_plain(name, len))
		return -EINVAL;
	if (n->p.plaintext) {
		if (len + 1 > cap)
			return -ENAMETOOLONG;
		memcpy(cname, name, len + 1);
		return 0;
	}
	/* Deterministic names: every directory uses the zero IV (§4.7). */
	return seal_name(n, n->p.diriv ? iv : zero_iv, name, len, cname, cap);
}

int names_decrypt(const struct names *n, const uint8_t iv[static 16],
		  const char *cname, size_t len, char *name, size_t cap)
{
	uint8_t buf[PADDED_MAX];
	long plen;

	if (n->p.plaintext) {
		if (!names_valid_plain(cname, len) || len + 1 > cap)
			return -EBADMSG;
		memcpy(name, cname, len);
		name[len] = '\0';
		return 0;
	}
	plen = open_name(n, n->p.diriv ? iv : zero_iv, cname, len, buf);
	if (plen < 0)
		return (int)plen;
	/* spec §4.2, applied after decryption */
	if (!names_valid_plain((const char *)buf, (size_t)plen) ||
	    (size_t)plen + 1 > cap)
		return -EBADMSG;
	memcpy(name, buf, (size_t)plen);
	name[plen] = '\0';
	return 0;
}

size_t names_encrypted_len(const struct names *n, size_t len)
{
	if (n->p.plaintext)
		return len;
	/* pad16 always adds 1..16 bytes (spec §4.3) */
	return b64_encoded_len((len / 16 + 1) * 16, n->b64);
}

int names_store_name(const struct names *n, const char *cname, char *stored,
		     size_t cap)
{
	size_t len = strlen(cname);
	int rc;

	if (n->p.plaintext || len <= n->p.longnamemax) {
		if (len + 1 > cap)
			return -ENAMETOOLONG;
		memcpy(stored, cname, len + 1);
		return 0;
	}
	rc = names_long_name(n, cname, stored, cap);
	return rc ? rc : 1;
}

int names_long_name(const struct names *n, const char *cname, char *stored,
		    size_t cap)
{
	size_t len = strlen(cname), pfx = strlen(NAMES_LONG_PREFIX);
	uint8_t hash[32];
	int rc;

	/* spec §4.5: SHA-256 of the base64 text, names-b64 encoded */
	if (pfx + b64_encoded_len(sizeof(hash), n->b64) + 1 > cap)
		return -ENAMETOOLONG;
	rc = kdf_sha256(hash, (const uint8_t *)cname, len);
	if (rc)
		return rc;
	memcpy(stored, NAMES_LONG_PREFIX, pfx);
	b64_encode(stored + pfx, hash, sizeof(hash), n->b64);
	return 0;
}

static bool has_prefix(const char *s, const char *pfx)
{
	return strncmp(s, pfx, strlen(pfx)) == 0;
}

bool names_is_sidecar(const char *stored)
{
	size_t len = strlen(stored), pl = strlen(NAMES_LONG_PREFIX),
	       sl = strlen(NAMES_LONG_SUFFIX);

	return len > pl + sl && has_prefix(stored, NAMES_LONG_PREFIX) &&
	       strcmp(stored + len - sl, NAMES_LONG_SUFFIX) == 0;
}

bool names_is_long(const char *stored)
{
	return strlen(stored) > strlen(NAMES_LONG_PREFIX) &&
	       has_prefix(stored, NAMES_LONG_PREFIX) &&
	       !names_is_sidecar(stored);
}

bool names_is_internal(const struct names *n, const char *stored,
		       bool is_root)
{
	/* spec §4.6 and §4.8 */
	if (is_root && strcmp(stored, NAMES_CONF_FILE) == 0)
		return true;
	if (n->p.plaintext)
		return false;
	if (n->p.diriv && strcmp(stored, NAMES_DIRIV_FILE) == 0)
		return true;
	return names_is_sidecar(stored);
}

int names_encrypt_symlink(const struct names *n, const char *target,
			  size_t len, char *out, size_t cap)
{
	return names_encrypt_symlink_nonce(n, target, len, NULL, out, cap);
}

size_t names_symlink_cipher_len(const struct names *n, size_t len)
{
	if (n->p.plaintext || len == 0 || !n->content)
		return len;
	return b64_encoded_len(len + content_msg_overhead(n->content), n->b64);
}

int names_encrypt_symlink_nonce(const struct names *n, const char *target,
				size_t len, const uint8_t *nonce, char *out,
				size_t cap)
{
	uint8_t *buf = NULL;
	size_t blen;
	int rc;

	if (n->p.plaintext || len == 0) {
		/* stored unchanged; an empty target stays empty (§4.9) */
		if (len + 1 > cap)
			return -ENAMETOOLONG;
		memcpy(out, target, len);
		out[len] = '\0';
		return 0;
	}
	if (!n->content)
		return -EIO;
	blen = len + content_msg_overhead(n->content);
	if (b64_encoded_len(blen, n->b64) + 1 > cap)
		return -ENAMETOOLONG;
	buf = malloc(blen);
	if (!buf)
		return -ENOMEM;
	rc = content_seal_msg_nonce(n->content, buf, (const uint8_t *)target,
				    len, nonce);
	if (rc)
		goto out;
	b64_encode(out, buf, blen, n->b64);
out:
	free(buf);
	return rc ? -EIO : 0;
}

int names_pathiv(uint8_t out[static NAMES_DIRIV_LEN], const char *path,
		 size_t len, const char *purpose)
{
	uint8_t tail[1 + 16], h[32];
	size_t plen = strlen(purpose);
	int rc;

	/* spec §5.2: SHA-256(path || 0x00 || purpose)[0:16] */
	if (plen > sizeof(tail) - 1)
		return -EINVAL;
	tail[0] = 0;
	memcpy(tail + 1, purpose, plen);
	rc = kdf_sha256_2(h, (const uint8_t *)path, len, tail, plen + 1);
	if (!rc)
		memcpy(out, h, NAMES_DIRIV_LEN);
	return rc;
}

struct names_pathiv_ctx {
	struct kdf_sha256_ctx *h;
	bool empty;
};

struct names_pathiv_ctx *names_pathiv_begin(const char *path, size_t len)
{
	struct names_pathiv_ctx *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	c->h = kdf_sha256_begin();
	c->empty = len == 0;
	if (!c->h || kdf_sha256_add(c->h, path, len)) {
		names_pathiv_end(c);
		return NULL;
	}
	return c;
}

int names_pathiv_add(struct names_pathiv_ctx *c, const char *name)
{
	if (!c->empty && kdf_sha256_add(c->h, "/", 1))
		return -EIO;
	c->empty = false;
	return kdf_sha256_add(c->h, name, strlen(name));
}

int names_pathiv_get(struct names_pathiv_ctx *c,
		     uint8_t out[static NAMES_DIRIV_LEN], const char *purpose)
{
	uint8_t tail[1 + 16], h[32];
	size_t plen = strlen(purpose);

	/* spec §5.2, as names_pathiv */
	if (plen > sizeof(tail) - 1)
		return -EINVAL;
	tail[0] = 0;
	memcpy(tail + 1, purpose, plen);
	if (kdf_sha256_peek(c->h, h, tail, plen + 1))
		return -EIO;
	memcpy(out, h, NAMES_DIRIV_LEN);
	return 0;
}

void names_pathiv_end(struct names_pathiv_ctx *c)
{
	if (c) {
		kdf_sha256_end(c->h);
		free(c);
	}
}

int names_decrypt_symlink(const struct names *n, const char *stored,
			  size_t len, char *out, size_t cap)
{
	uint8_t *buf = NULL;
	size_t dlen, plen;
	int rc = -EBADMSG;

	if (n->p.plaintext || len == 0) {
		if (memchr(stored, '\0', len) || len + 1 > cap)
			return -EBADMSG;
		memcpy(out, stored, len);
		out[len] = '\0';
		return 0;
	}
	if (!n->content)
		return -EIO;
	if (memchr(stored, '\r', len) || memchr(stored, '\n', len))
		return -EBADMSG;
	buf = malloc(b64_decoded_max(len) + 1);
	if (!buf)
		return -ENOMEM;
	if (b64_decode(buf, b64_decoded_max(len) + 1, &dlen, stored, len,
		       n->b64))
		goto out;
	if (dlen < content_msg_overhead(n->content))
		goto out;
	plen = dlen - content_msg_overhead(n->content);
	if (plen + 1 > cap)
		goto out;
	if (content_open_msg(n->content, (uint8_t *)out, buf, dlen))
		goto out;
	/* a target with NUL cannot be returned by readlink */
	if (memchr(out, '\0', plen)) {
		memset(out, 0, plen);
		goto out;
	}
	out[plen] = '\0';
	rc = 0;
out:
	free(buf);
	return rc;
}

/* out = a || b || suffix, a name the kernel takes: at most 255 bytes, no
 * '/' or NUL (gocryptfs 2.3 checks the result, not the parts). */
static int badname_compose(char *out, size_t cap, const void *a, size_t alen,
			   const char *b)
{
	size_t blen = strlen(b), slen = strlen(NAMES_BADNAME_SUFFIX);

	if (memchr(a, '/', alen) || memchr(a, '\0', alen) || strchr(b, '/'))
		return -EBADMSG;
	if (alen + blen + slen > NAMES_MAX_PLAIN || alen + blen + slen >= cap)
		return -ENAMETOOLONG;
	memcpy(out, a, alen);
	memcpy(out + alen, b, blen);
	memcpy(out + alen + blen, NAMES_BADNAME_SUFFIX, slen + 1);
	return 0;
}

int names_badname_display(const struct names *n, const uint8_t iv[static 16],
			  const char *enc, char *out, size_t cap)
{
	const uint8_t *tweak = n->p.diriv ? iv : zero_iv;
	size_t len = strlen(enc), min = b64_encoded_len(16, n->b64);
	char pre[NAMES_MAX_CNAME];
	uint8_t buf[PADDED_MAX];
	unsigned nbits;
	long plen;

	if (n->p.plaintext || !len)
		return -EINVAL;
	if (len > NAMES_MAX_CNAME - 1)
		len = NAMES_MAX_CNAME - 1;
	/* As 2.3: the first prefix that decrypts and unpads wins, whatever
	 * bytes it holds; the composed name is checked. */
	for (size_t l = len; l >= min; l--) {
		memcpy(pre, enc, l);
		pre[l] = '\0';
		b64_set_unused_bits(pre, l, n->b64, 0, &nbits);
		plen = open_name(n, tweak, pre, l, buf);
		if (plen >= 0)
			return badname_compose(out, cap, buf, (size_t)plen,
					       enc + l);
	}
	return badname_compose(out, cap, enc, strlen(enc), "");
}

int names_badname_stored(const struct names *n, const uint8_t iv[static 16],
			 const char *display, names_badname_fn *fn, void *arg)
{
	const uint8_t *tweak = n->p.diriv ? iv : zero_iv;
	char d[NAMES_MAX_PLAIN + 1];
	char c[NAMES_MAX_CNAME + NAMES_MAX_PLAIN + 1];
	size_t dlen = strlen(display), slen = strlen(NAMES_BADNAME_SUFFIX);
	unsigned nbits;
	int rc;

	if (n->p.plaintext || dlen <= slen || dlen > NAMES_MAX_PLAIN ||
	    strcmp(display + dlen - slen, NAMES_BADNAME_SUFFIX))
		return 0;
	dlen -= slen;
	memcpy(d, display, dlen);
	d[dlen] = '\0';
	rc = fn(d, arg);
	for (size_t i = dlen; !rc && i > 0; i--) {
		size_t cl;

		if (seal_name(n, tweak, d, i, c, NAMES_MAX_CNAME))
			continue;
		cl = strlen(c);
		memcpy(c + cl, d + i, dlen - i + 1);
		/* Every spelling 2.3 decoded the same: the canonical one,
		 * then those with other unused bits in its last character. */
		b64_set_unused_bits(c, cl, n->b64, 0, &nbits);
		for (unsigned k = 0; !rc && k < (1u << nbits); k++) {
			b64_set_unused_bits(c, cl, n->b64, k, &nbits);
			rc = fn(c, arg);
		}
	}
	return rc;
}

bool names_symlink_len_from_size(const struct names *n)
{
	return n->p.plaintext || n->b64 == B64_URL_RAW;
}

long names_symlink_plain_len(const struct names *n, const char *stored,
			     size_t stored_len)
{
	size_t dlen, oh;

	if (n->p.plaintext || stored_len == 0)
		return (long)stored_len;
	if (!n->content)
		return -EIO;
	oh = content_msg_overhead(n->content);
	if (n->b64 == B64_URL_RAW) {
		if (stored_len % 4 == 1)
			return -EBADMSG;
		dlen = b64_decoded_max(stored_len);
	} else {
		/* Padded base64: each '=' at the end stands for one byte
		 * less in the last group of three. */
		if (!stored)
			return -EINVAL;
		if (stored_len % 4)
			return -EBADMSG;
		dlen = stored_len / 4 * 3;
		if (stored[stored_len - 1] == '=')
			dlen -= stored[stored_len - 2] == '=' ? 2 : 1;
	}
	if (dlen < oh)
		return -EBADMSG;
	return (long)(dlen - oh);
}

static bool is_acl(const char *name)
{
	return strcmp(name, ACL_ACCESS) == 0 || strcmp(name, ACL_DEFAULT) == 0;
}

int names_encrypt_xattr(const struct names *n, const char *name, char *out,
			size_t cap)
{
	size_t len = strlen(name), pfx = strlen(NAMES_XATTR_PREFIX);
	int rc;

	if (is_acl(name)) {
		/* ACLs pass through under their real names (§4.10) */
		if (len + 1 > cap)
			return -ERANGE;
		memcpy(out, name, len + 1);
		return 0;
	}
	if (len == 0)
		return -EINVAL;
	if (len > NAMES_MAX_PLAIN)
		return -ERANGE;
	if (cap < pfx)
		return -ERANGE;
	memcpy(out, NAMES_XATTR_PREFIX, pfx);
	rc = seal_name(n, xattr_tweak, name, len, out + pfx, cap - pfx);
	return rc == -ENAMETOOLONG ? -ERANGE : rc;
}

int names_decrypt_xattr(const struct names *n, const char *stored, char *out,
			size_t cap)
{
	size_t pfx = strlen(NAMES_XATTR_PREFIX);
	uint8_t buf[PADDED_MAX];
	long plen;

	if (is_acl(stored)) {
		if (strlen(stored) + 1 > cap)
			return -ERANGE;
		strcpy(out, stored);
		return 0;
	}
	if (!has_prefix(stored, NAMES_XATTR_PREFIX))
		return 1; /* not ours: hidden */
	plen = open_name(n, xattr_tweak, stored + pfx, strlen(stored + pfx),
			 buf);
	if (plen < 0)
		return (int)plen;
	if (plen == 0 || memchr(buf, '\0', (size_t)plen))
		return -EBADMSG;
	if ((size_t)plen + 1 > cap)
		return -ERANGE;
	memcpy(out, buf, (size_t)plen);
	out[plen] = '\0';
	/* Old versions encrypted ACL names; those are ignored (§4.10). */
	if (is_acl(out))
		return 1;
	return 0;
}

int names_decrypt_xattr_value(const struct names *n, uint8_t *out,
			      size_t *outlen, const uint8_t *raw, size_t len)
{
	size_t oh, blen;
	uint8_t *dec;
	int rc = -EBADMSG;

	*outlen = 0;
	if (!n->content)
		return -EIO;
	oh = content_msg_overhead(n->content);
	if (len > oh && !content_open_msg(n->content, out, raw, len)) {
		*outlen = len - oh;
		return 0;
	}
	/* Old gocryptfs stored values base64-encoded. */
	dec = malloc(b64_decoded_max(len) + 1);
	if (!dec)
		return -ENOMEM;
	if (!b64_decode(dec, b64_decoded_max(len) + 1, &blen,
			(const char *)raw, len, n->b64) &&
	    blen > oh && !content_open_msg(n->content, out, dec, blen)) {
		*outlen = blen - oh;
		rc = 0;
	}
	free(dec);
	return rc;
}
