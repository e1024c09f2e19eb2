/* SPDX-License-Identifier: MIT */
/*
 * Names: every name, long name, symlink target and xattr of the six forward
 * vector variants made by gocryptfs 2.3 decrypts to plain/ and re-encrypts
 * to the stored bytes; the §4.2/§4.3 checks reject ".", "..", '/', NUL,
 * bad padding and non-canonical base64; length table and hashing threshold;
 * listing filter; xattr and symlink edge cases.
 */
#include "common/b64.h"
#include "crypto/content.h"
#include "crypto/eme.h"
#include "crypto/kdf.h"
#include "crypto/names.h"
#include "harness.h"
#include "vecfs.h"
#include "vecutil.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/xattr.h>
#include <unistd.h>

struct counts {
	size_t entries, longs, dirs, links, xattrs, fail;
};

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			printf("# %s:%d: %s (%s)\n", __FILE__, __LINE__,  \
			       #cond, e->cpath);                          \
			c->fail++;                                        \
			return 0;                                         \
		}                                                         \
	} while (0)

static int check_xattrs(struct vec_fs *fs, const struct vec_entry *e,
			struct counts *c)
{
	char clist[4096], plist[4096], stored[512], name[512];
	uint8_t cval[512], pval[512], dval[512];
	ssize_t cl = llistxattr(e->cpath, clist, sizeof(clist));
	ssize_t pl = llistxattr(e->ppath, plist, sizeof(plist));
	size_t ours = 0, plain_user = 0;

	CHECK(cl >= 0 && pl >= 0);
	for (ssize_t i = 0; i < pl; i += (ssize_t)strlen(plist + i) + 1)
		if (!strncmp(plist + i, "user.", 5))
			plain_user++;
	for (ssize_t i = 0; i < cl; i += (ssize_t)strlen(clist + i) + 1) {
		const char *sn = clist + i;
		ssize_t vl, pvl;
		int rc = names_decrypt_xattr(fs->names, sn, name, sizeof(name));

		CHECK(rc == 0);
		ours++;
		c->xattrs++;
		/* re-encryption gives the stored name */
		CHECK(names_encrypt_xattr(fs->names, name, stored,
					  sizeof(stored)) == 0);
		CHECK(strcmp(stored, sn) == 0);
		vl = lgetxattr(e->cpath, sn, cval, sizeof(cval));
		pvl = lgetxattr(e->ppath, name, pval, sizeof(pval));
		CHECK(vl >= 0 && pvl >= 0);
		if (vl == 0) {
			CHECK(pvl == 0);
			continue;
		}
		CHECK((size_t)vl == (size_t)pvl +
					    content_msg_overhead(fs->content));
		CHECK(content_open_msg(fs->content, dval, cval, (size_t)vl) ==
		      0);
		CHECK(memcmp(dval, pval, (size_t)pvl) == 0);
		/* a flipped byte fails and zeroes the output */
		cval[vl - 1] ^= 0x40;
		CHECK(content_open_msg(fs->content, dval, cval, (size_t)vl) ==
		      -EBADMSG);
	}
	CHECK(ours == plain_user);
	return 0;
}

static int check_entry(struct vec_fs *fs, const struct vec_entry *e,
		       void *arg)
{
	struct counts *c = arg;
	char cname[NAMES_MAX_CNAME], back[NAMES_MAX_PLAIN + 1];

	c->entries++;
	c->longs += e->is_long;
	/* encrypting the plaintext name with the same IV gives the cname */
	CHECK(names_encrypt(fs->names, e->iv, e->name, cname,
			    sizeof(cname)) == 0);
	CHECK(strcmp(cname, e->cname) == 0);
	CHECK(names_decrypt(fs->names, e->iv, cname, strlen(cname), back,
			    sizeof(back)) == 0);
	CHECK(strcmp(back, e->name) == 0);
	if (e->is_long)
		CHECK(strlen(e->cname) > fs->np.longnamemax);
	else if (!fs->np.plaintext)
		CHECK(strlen(e->cname) <= fs->np.longnamemax);

	if (S_ISDIR(e->cst.st_mode))
		c->dirs++;
	if (S_ISLNK(e->cst.st_mode)) {
		char ct[PATH_MAX], pt[PATH_MAX], dec[PATH_MAX], enc[PATH_MAX];
		ssize_t cl = readlink(e->cpath, ct, sizeof(ct) - 1);
		ssize_t pl = readlink(e->ppath, pt, sizeof(pt) - 1);

		CHECK(cl > 0 && pl > 0);
		ct[cl] = pt[pl] = '\0';
		c->links++;
		CHECK(names_decrypt_symlink(fs->names, ct, (size_t)cl, dec,
					    sizeof(dec)) == 0);
		CHECK(strcmp(dec, pt) == 0);
		CHECK(names_symlink_plain_len(fs->names, ct, (size_t)cl) == pl);
		/* our own encryption round-trips (random nonce: differs) */
		CHECK(names_encrypt_symlink(fs->names, pt, (size_t)pl, enc,
					    sizeof(enc)) == 0);
		CHECK(strlen(enc) == (size_t)cl);
		CHECK(fs->np.plaintext || strcmp(enc, ct) != 0);
		CHECK(names_decrypt_symlink(fs->names, enc, strlen(enc), dec,
					    sizeof(dec)) == 0);
		CHECK(strcmp(dec, pt) == 0);
		if (!fs->np.plaintext) {
			/* a changed character no longer authenticates */
			ct[cl / 2] = ct[cl / 2] == 'A' ? 'B' : 'A';
			CHECK(names_decrypt_symlink(fs->names, ct, (size_t)cl,
						    dec, sizeof(dec)) ==
			      -EBADMSG);
		}
	}
	return check_xattrs(fs, e, c);
}

TEST(vectors_every_variant)
{
	size_t skipped = 0;

	if (!vec_available())
		SKIP("vectors not extracted");
	for (size_t i = 0; i < vec_nvariants; i++) {
		struct vec_fs fs;
		struct counts c = { 0 };
		int rc;

		printf("# variant %s\n", vec_variants[i]);
		rc = vec_fs_open(&fs, vec_variants[i], NULL);
		if (rc == -ENOENT) {
			printf("# no implementation of its cipher\n");
			skipped++;
			continue;
		}
		ASSERT_INT_EQ(rc, 0);
		rc = vec_fs_walk(&fs, check_entry, &c);
		vec_fs_close(&fs);
		ASSERT_INT_EQ(rc, 0);
		ASSERT_INT_EQ(c.fail, 0);
		/* the tree has 17 entries, 3 dirs, 2 symlinks, 3 xattrs */
		ASSERT_INT_EQ(c.entries, 17);
		ASSERT_INT_EQ(c.dirs, 2);
		ASSERT_INT_EQ(c.links, 2);
		ASSERT_INT_EQ(c.xattrs, 3);
		if (fs.np.plaintext)
			ASSERT_INT_EQ(c.longs, 0);
		else if (fs.np.longnamemax == 100)
			ASSERT(c.longs > 3);
		else
			ASSERT_INT_EQ(c.longs, 3);
	}
	/* every cipher must have an implementation */
	ASSERT_INT_EQ(skipped, 0);
}

TEST(spec_examples)
{
	struct vec_fs fs;
	char out[NAMES_MAX_CNAME + 32], stored[NAMES_MAX_CNAME], n176[177];
	uint8_t iv[16];
	char path[PATH_MAX];
	uint8_t *d;
	size_t len;

	if (!vec_available())
		SKIP("vectors not extracted");
	ASSERT_INT_EQ(vec_fs_open(&fs, "gcm", NULL), 0);
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "user.foo", out,
					  sizeof(out)), 0);
	ASSERT_STR_EQ(out, "user.gocryptfs.tSnecyNCu9jian-d6jDuPg");
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "user.empty", out,
					  sizeof(out)), 0);
	ASSERT_STR_EQ(out, "user.gocryptfs.tgVRp7W39MsgtxdP-Qm3Lg");
	/* 'n' x 176 in the root is hashed to this name (§4.5) */
	ASSERT_INT_EQ(vec_path(path, sizeof(path), "gcm",
			       "cipher/gocryptfs.diriv"), 0);
	d = vec_read_file(path, &len);
	ASSERT(d && len == 16);
	memcpy(iv, d, 16);
	free(d);
	memset(n176, 'n', 176);
	n176[176] = 0;
	ASSERT_INT_EQ(names_encrypt(fs.names, iv, n176, out, sizeof(out)), 0);
	ASSERT_INT_EQ(strlen(out), 256);
	ASSERT_INT_EQ(names_store_name(fs.names, out, stored, sizeof(stored)),
		      1);
	ASSERT_STR_EQ(stored,
		      "gocryptfs.longname.MSukhFHCKLsTr3R9YwpB9-ZF7EmsdWfSkcBpu5xplfE");
	n176[175] = 0;
	ASSERT_INT_EQ(names_encrypt(fs.names, iv, n176, out, sizeof(out)), 0);
	ASSERT_INT_EQ(strlen(out), 235);
	ASSERT_INT_EQ(names_store_name(fs.names, out, stored, sizeof(stored)),
		      0);
	ASSERT_STR_EQ(stored, out);
	vec_fs_close(&fs);

	/* plaintext names: xattr names still encrypted, padded B64URL */
	ASSERT_INT_EQ(vec_fs_open(&fs, "plaintextnames", NULL), 0);
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "user.foo", out,
					  sizeof(out)), 0);
	ASSERT_STR_EQ(out, "user.gocryptfs.h_hUmXTto8VJvdsLdkevrg==");
	vec_fs_close(&fs);
}

/* Build a stored name from arbitrary padded bytes: EME with our own key
 * object, then names-b64. */
static void forge(const struct vec_fs *fs, struct eme *e, const uint8_t *iv,
		  const uint8_t *pt, size_t len, char *out)
{
	uint8_t buf[2048];

	memcpy(buf, pt, len);
	if (eme_encrypt(e, buf, buf, len, iv))
		abort();
	b64_encode(out, buf, len, fs->np.raw64 ? B64_URL_RAW : B64_URL);
}

static int try_decrypt(const struct vec_fs *fs, const uint8_t *iv,
		       const char *s)
{
	char name[NAMES_MAX_PLAIN + 1];

	return names_decrypt(fs->names, iv, s, strlen(s), name, sizeof(name));
}

TEST(decrypt_rejects_invalid_plaintext)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ ".", 1 }, { "..", 2 }, { "/", 1 }, { "a/b", 3 },
		{ "a\0b", 3 }, { "\0", 1 }, { "..\0", 3 }, { "", 0 },
	};
	const uint8_t iv[16] = { 0x42, 1, 2, 3 };
	uint8_t buf[272];
	char s[400];
	struct vec_fs fs;
	struct eme *e = NULL;

	if (!vec_available())
		SKIP("vectors not extracted");
	ASSERT_INT_EQ(vec_fs_open(&fs, "gcm", NULL), 0);
	ASSERT_INT_EQ(eme_new(&e, fs.eme_key), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t k = 16 - bad[i].len % 16;

		memcpy(buf, bad[i].s, bad[i].len);
		memset(buf + bad[i].len, (int)k, k);
		forge(&fs, e, iv, buf, bad[i].len + k, s);
		ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	}
	/* control: a good name forged the same way decrypts */
	memcpy(buf, "ok", 2);
	memset(buf + 2, 14, 14);
	forge(&fs, e, iv, buf, 16, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), 0);
	/* 256 plaintext bytes (272 padded) are too long */
	memset(buf, 'x', 256);
	memset(buf + 256, 16, 16);
	forge(&fs, e, iv, buf, 272, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	/* 255 bytes are fine */
	memset(buf + 255, 1, 1);
	forge(&fs, e, iv, buf, 256, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), 0);
	eme_free(e);
	vec_fs_close(&fs);
}

TEST(decrypt_rejects_bad_padding)
{
	const uint8_t iv[16] = { 7 };
	uint8_t buf[32];
	char s[64];
	struct vec_fs fs;
	struct eme *e = NULL;

	if (!vec_available())
		SKIP("vectors not extracted");
	ASSERT_INT_EQ(vec_fs_open(&fs, "gcm", NULL), 0);
	ASSERT_INT_EQ(eme_new(&e, fs.eme_key), 0);
	memset(buf, 'a', sizeof(buf));
	buf[15] = 0; /* k = 0 */
	forge(&fs, e, iv, buf, 16, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	buf[15] = 17; /* k > 16 */
	forge(&fs, e, iv, buf, 16, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	buf[15] = 3; /* only one byte of value 3 */
	forge(&fs, e, iv, buf, 16, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	buf[13] = buf[14] = 3; /* correct: "aaaaaaaaaaaaa" */
	forge(&fs, e, iv, buf, 16, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), 0);
	memset(buf + 16, 16, 16); /* a full pad block after 16 bytes: ok */
	memset(buf, 'a', 16);
	forge(&fs, e, iv, buf, 32, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), 0);
	buf[20] = 15; /* one wrong byte inside the pad block */
	forge(&fs, e, iv, buf, 32, s);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	/* wrong IV: decrypts to garbage, which fails the padding check
	 * with overwhelming probability */
	{
		const uint8_t iv2[16] = { 8 };

		memcpy(buf, "hello", 5);
		memset(buf + 5, 11, 11);
		forge(&fs, e, iv, buf, 16, s);
		ASSERT_INT_EQ(try_decrypt(&fs, iv, s), 0);
		ASSERT_INT_EQ(try_decrypt(&fs, iv2, s), -EBADMSG);
	}
	eme_free(e);
	vec_fs_close(&fs);
}

TEST(decrypt_rejects_bad_base64)
{
	const uint8_t iv[16] = { 1 };
	char good[NAMES_MAX_CNAME], s[NAMES_MAX_CNAME + 8];
	struct vec_fs fs;
	size_t len;

	if (!vec_available())
		SKIP("vectors not extracted");
	ASSERT_INT_EQ(vec_fs_open(&fs, "gcm", NULL), 0);
	ASSERT_INT_EQ(names_encrypt(fs.names, iv, "hello.txt", good,
				    sizeof(good)), 0);
	len = strlen(good);
	ASSERT_INT_EQ(len, 22);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, good), 0);
	/* CR or LF anywhere */
	for (size_t pos = 0; pos <= len; pos += 11) {
		for (int cr = 0; cr < 2; cr++) {
			memcpy(s, good, pos);
			s[pos] = cr ? '\r' : '\n';
			strcpy(s + pos + 1, good + pos);
			ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
		}
	}
	/* characters outside the URL alphabet */
	static const char badc[] = { '+', '/', '.', '=', ' ', '*' };
	for (size_t i = 0; i < sizeof(badc); i++) {
		strcpy(s, good);
		s[5] = badc[i];
		ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	}
	/* padding on a Raw64 filesystem */
	snprintf(s, sizeof(s), "%s==", good);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	/* non-canonical trailing bits: 22 chars = 16 bytes + 4 spare bits */
	strcpy(s, good);
	s[21] = s[21] == 'A' ? 'B' : (char)(s[21] ^ 1);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	/* truncated: 21 chars = 15 bytes, not a multiple of 16 */
	strcpy(s, good);
	s[21] = 0;
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	/* length % 4 == 1 */
	strcpy(s, good);
	strcat(s, "AAA");
	ASSERT_INT_EQ(try_decrypt(&fs, iv, s), -EBADMSG);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, ""), -EBADMSG);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, "gocryptfs.diriv"), -EBADMSG);
	ASSERT_INT_EQ(try_decrypt(&fs, iv, "gocryptfs.conf"), -EBADMSG);
	/* a long-name entry is not a cname */
	ASSERT_INT_EQ(try_decrypt(&fs, iv,
		"gocryptfs.longname.MSukhFHCKLsTr3R9YwpB9-ZF7EmsdWfSkcBpu5xplfE"),
		-EBADMSG);
	vec_fs_close(&fs);

	/* padded B64URL (no Raw64): the padding is required */
	{
		struct names *n = NULL;
		struct names_params p = { .raw64 = false, .diriv = true,
					  .longnamemax = 255 };
		uint8_t key[32] = { 3 };
		char name[NAMES_MAX_PLAIN + 1];

		ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
		ASSERT_INT_EQ(names_encrypt(n, iv, "hello.txt", good,
					    sizeof(good)), 0);
		ASSERT_INT_EQ(strlen(good), 24);
		ASSERT(good[22] == '=' && good[23] == '=');
		ASSERT_INT_EQ(names_decrypt(n, iv, good, 24, name,
					    sizeof(name)), 0);
		ASSERT_STR_EQ(name, "hello.txt");
		ASSERT_INT_EQ(names_decrypt(n, iv, good, 22, name,
					    sizeof(name)), -EBADMSG);
		ASSERT_INT_EQ(names_decrypt(n, iv, good, 23, name,
					    sizeof(name)), -EBADMSG);
		names_free(n);
	}
}

TEST(encrypt_checks_and_length_table)
{
	struct names *n = NULL, *pad = NULL;
	struct names_params p = { .raw64 = true, .diriv = true,
				  .longnamemax = 255 };
	uint8_t key[32] = { 5 }, iv[16] = { 6 };
	char name[300], c[NAMES_MAX_CNAME], back[NAMES_MAX_PLAIN + 1];

	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
	p.raw64 = false;
	ASSERT_INT_EQ(names_new(&pad, key, &p, NULL), 0);
	ASSERT_INT_EQ(names_encrypt(n, iv, "", c, sizeof(c)), -EINVAL);
	ASSERT_INT_EQ(names_encrypt(n, iv, ".", c, sizeof(c)), -EINVAL);
	ASSERT_INT_EQ(names_encrypt(n, iv, "..", c, sizeof(c)), -EINVAL);
	ASSERT_INT_EQ(names_encrypt(n, iv, "a/b", c, sizeof(c)), -EINVAL);
	ASSERT_INT_EQ(names_encrypt(n, iv, "...", c, sizeof(c)), 0);
	memset(name, 'x', 256);
	name[256] = 0;
	ASSERT_INT_EQ(names_encrypt(n, iv, name, c, sizeof(c)), -ENAMETOOLONG);
	ASSERT_INT_EQ(names_encrypt(n, iv, "abc", c, 10), -ENAMETOOLONG);
	/* spec §4.3 length table */
	for (size_t len = 1; len <= 255; len++) {
		size_t padded = (len / 16 + 1) * 16;

		name[len] = 0;
		memset(name, 'a' + (int)(len % 26), len);
		ASSERT_INT_EQ(names_encrypt(n, iv, name, c, sizeof(c)), 0);
		ASSERT_INT_EQ(strlen(c), (padded * 8 + 5) / 6);
		ASSERT_INT_EQ(names_decrypt(n, iv, c, strlen(c), back,
					    sizeof(back)), 0);
		ASSERT_STR_EQ(back, name);
		ASSERT_INT_EQ(names_encrypt(pad, iv, name, c, sizeof(c)), 0);
		ASSERT_INT_EQ(strlen(c), (padded + 2) / 3 * 4);
		ASSERT(strlen(c) < NAMES_MAX_CNAME);
		if (len == 175)
			ASSERT_INT_EQ(strlen(c), 236);
	}
	memset(name, 'q', 175);
	name[175] = 0;
	ASSERT_INT_EQ(names_encrypt(n, iv, name, c, sizeof(c)), 0);
	ASSERT_INT_EQ(strlen(c), 235);
	name[191] = 0;
	memset(name, 'q', 191);
	ASSERT_INT_EQ(names_encrypt(n, iv, name, c, sizeof(c)), 0);
	ASSERT_INT_EQ(strlen(c), 256);
	name[255] = 0;
	memset(name, 'q', 255);
	ASSERT_INT_EQ(names_encrypt(n, iv, name, c, sizeof(c)), 0);
	ASSERT_INT_EQ(strlen(c), 342);
	ASSERT_INT_EQ(names_encrypt(pad, iv, name, c, sizeof(c)), 0);
	ASSERT_INT_EQ(strlen(c), 344);
	names_free(pad);
	names_free(n);
}

TEST(long_name_threshold)
{
	struct names *n = NULL;
	struct names_params p = { .raw64 = true, .diriv = true,
				  .longnamemax = 62 };
	uint8_t key[32] = { 5 };
	char cname[NAMES_MAX_CNAME], stored[NAMES_MAX_CNAME];
	uint8_t h[32];
	char want[100];

	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
	memset(cname, 'A', 62);
	cname[62] = 0;
	ASSERT_INT_EQ(names_store_name(n, cname, stored, sizeof(stored)), 0);
	ASSERT_STR_EQ(stored, cname);
	cname[62] = 'A';
	cname[63] = 0;
	ASSERT_INT_EQ(names_store_name(n, cname, stored, sizeof(stored)), 1);
	ASSERT_INT_EQ(strlen(stored), 62);
	ASSERT(names_is_long(stored));
	ASSERT(!names_is_sidecar(stored));
	/* the hash is SHA-256 of the base64 text */
	ASSERT_INT_EQ(kdf_sha256(h, (const uint8_t *)cname, strlen(cname)), 0);
	strcpy(want, NAMES_LONG_PREFIX);
	b64_encode(want + strlen(want), h, 32, B64_URL_RAW);
	ASSERT_STR_EQ(stored, want);
	ASSERT_INT_EQ(names_store_name(n, cname, stored, 40), -ENAMETOOLONG);
	names_free(n);
	/* out-of-range thresholds are refused */
	p.longnamemax = 61;
	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), -EINVAL);
	p.longnamemax = 256;
	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), -EINVAL);
	/* padded base64 hash ends in '=' */
	p.longnamemax = 255;
	p.raw64 = false;
	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
	memset(cname, 'A', 300);
	cname[300] = 0;
	ASSERT_INT_EQ(names_store_name(n, cname, stored, sizeof(stored)), 1);
	ASSERT_INT_EQ(strlen(stored), 19 + 44);
	ASSERT(stored[62] == '=');
	names_free(n);
}

TEST(listing_filter)
{
	struct names *n = NULL, *det = NULL, *pt = NULL;
	struct names_params p = { .raw64 = true, .diriv = true,
				  .longnamemax = 255 };
	uint8_t key[32] = { 5 };
	const char *sc = "gocryptfs.longname.MSukhFHCKLsTr3R9YwpB9-ZF7Ems.name";
	const char *ln = "gocryptfs.longname.MSukhFHCKLsTr3R9YwpB9-ZF7Ems";

	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
	p.diriv = false;
	ASSERT_INT_EQ(names_new(&det, key, &p, NULL), 0);
	p = (struct names_params){ .plaintext = true };
	ASSERT_INT_EQ(names_new(&pt, key, &p, NULL), 0);

	ASSERT(names_is_long(ln));
	ASSERT(!names_is_long(sc));
	ASSERT(names_is_sidecar(sc));
	ASSERT(!names_is_sidecar(ln));
	ASSERT(!names_is_long("gocryptfs.longname."));
	ASSERT(!names_is_sidecar("gocryptfs.longname..name"));
	ASSERT(!names_is_long("gocryptfs.longnam"));
	ASSERT(!names_is_long("xgocryptfs.longname.abc"));

	ASSERT(names_is_internal(n, "gocryptfs.conf", true));
	ASSERT(!names_is_internal(n, "gocryptfs.conf", false));
	ASSERT(names_is_internal(n, "gocryptfs.diriv", true));
	ASSERT(names_is_internal(n, "gocryptfs.diriv", false));
	ASSERT(names_is_internal(n, sc, false));
	ASSERT(!names_is_internal(n, ln, false));
	ASSERT(!names_is_internal(n, "abc", true));

	ASSERT(names_is_internal(det, "gocryptfs.conf", true));
	ASSERT(!names_is_internal(det, "gocryptfs.diriv", false));
	ASSERT(names_is_internal(det, sc, true));

	ASSERT(names_is_internal(pt, "gocryptfs.conf", true));
	ASSERT(!names_is_internal(pt, "gocryptfs.conf", false));
	ASSERT(!names_is_internal(pt, "gocryptfs.diriv", true));
	ASSERT(!names_is_internal(pt, sc, false));
	names_free(pt);
	names_free(det);
	names_free(n);
}

TEST(deterministic_and_plaintext_modes)
{
	struct names *det = NULL, *pt = NULL;
	struct names_params p = { .raw64 = true, .diriv = false,
				  .longnamemax = 255 };
	uint8_t key[32] = { 5 }, iv1[16] = { 1 }, iv2[16] = { 2 };
	char a[NAMES_MAX_CNAME], b[NAMES_MAX_CNAME], out[300];

	ASSERT_INT_EQ(names_new(&det, key, &p, NULL), 0);
	/* without DirIV every directory uses the zero IV (§4.7) */
	ASSERT_INT_EQ(names_encrypt(det, iv1, "same", a, sizeof(a)), 0);
	ASSERT_INT_EQ(names_encrypt(det, iv2, "same", b, sizeof(b)), 0);
	ASSERT_STR_EQ(a, b);
	ASSERT_INT_EQ(names_decrypt(det, iv2, a, strlen(a), out, sizeof(out)),
		      0);
	ASSERT_STR_EQ(out, "same");

	p = (struct names_params){ .plaintext = true };
	ASSERT_INT_EQ(names_new(&pt, key, &p, NULL), 0);
	ASSERT_INT_EQ(names_encrypt(pt, iv1, "café.txt", a, sizeof(a)), 0);
	ASSERT_STR_EQ(a, "café.txt");
	ASSERT_INT_EQ(names_encrypt(pt, iv1, "..", a, sizeof(a)), -EINVAL);
	ASSERT_INT_EQ(names_decrypt(pt, iv1, "x", 1, out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "x");
	ASSERT_INT_EQ(names_decrypt(pt, iv1, "..", 2, out, sizeof(out)),
		      -EBADMSG);
	ASSERT_INT_EQ(names_decrypt(pt, iv1, "a\0b", 3, out, sizeof(out)),
		      -EBADMSG);
	ASSERT_INT_EQ(names_store_name(pt, "x", b, sizeof(b)), 0);
	ASSERT_STR_EQ(b, "x");
	ASSERT_INT_EQ(names_encrypt_symlink(pt, "/a/b", 4, out, sizeof(out)),
		      0);
	ASSERT_STR_EQ(out, "/a/b");
	ASSERT_INT_EQ(names_decrypt_symlink(pt, "../x", 4, out, sizeof(out)),
		      0);
	ASSERT_STR_EQ(out, "../x");
	ASSERT_INT_EQ(names_symlink_plain_len(pt, NULL, 17), 17);
	names_free(pt);
	names_free(det);
}

TEST(xattr_names)
{
	struct vec_fs fs;
	char out[512], back[512];
	uint8_t buf[64];

	if (!vec_available())
		SKIP("vectors not extracted");
	ASSERT_INT_EQ(vec_fs_open(&fs, "gcm", NULL), 0);
	/* ACLs pass through both ways */
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "system.posix_acl_access",
					  out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "system.posix_acl_access");
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names, "system.posix_acl_default",
					  back, sizeof(back)), 0);
	ASSERT_STR_EQ(back, "system.posix_acl_default");
	/* other backing names are not ours */
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names, "user.foo", back,
					  sizeof(back)), 1);
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names, "security.selinux", back,
					  sizeof(back)), 1);
	/* every namespace is encrypted */
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "trusted.x", out,
					  sizeof(out)), 0);
	ASSERT(strncmp(out, NAMES_XATTR_PREFIX, 15) == 0);
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names, out, back, sizeof(back)),
		      0);
	ASSERT_STR_EQ(back, "trusted.x");
	/* an encrypted ACL name (old versions) is ignored */
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "system.posix_acl_accesz",
					  out, sizeof(out)), 0);
	{
		struct eme *e = NULL;
		const uint8_t tw[16] = "xattr_name_iv_xx";
		const char *acl = "system.posix_acl_access";
		size_t l = strlen(acl), k = 16 - l % 16;

		memcpy(buf, acl, l);
		memset(buf + l, (int)k, k);
		ASSERT_INT_EQ(eme_new(&e, fs.eme_key), 0);
		ASSERT_INT_EQ(eme_encrypt(e, buf, buf, l + k, tw), 0);
		strcpy(out, NAMES_XATTR_PREFIX);
		b64_encode(out + 15, buf, l + k, B64_URL_RAW);
		ASSERT_INT_EQ(names_decrypt_xattr(fs.names, out, back,
						  sizeof(back)), 1);
		/* NUL inside a decrypted xattr name is corrupt */
		memcpy(buf, "user.a\0b", 8);
		memset(buf + 8, 8, 8);
		ASSERT_INT_EQ(eme_encrypt(e, buf, buf, 16, tw), 0);
		strcpy(out, NAMES_XATTR_PREFIX);
		b64_encode(out + 15, buf, 16, B64_URL_RAW);
		ASSERT_INT_EQ(names_decrypt_xattr(fs.names, out, back,
						  sizeof(back)), -EBADMSG);
		eme_free(e);
	}
	/* corrupt encrypted names */
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names, "user.gocryptfs.", back,
					  sizeof(back)), -EBADMSG);
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names, "user.gocryptfs.abc!",
					  back, sizeof(back)), -EBADMSG);
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names,
					  "user.gocryptfs.tSnecyNCu9jian-d6jDuPh",
					  back, sizeof(back)), -EBADMSG);
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names,
					  "user.gocryptfs.tSnecyNCu9jian-d6jDuPg\n",
					  back, sizeof(back)), -EBADMSG);
	ASSERT_INT_EQ(names_decrypt_xattr(fs.names,
					  "user.gocryptfs.tSnecyNCu9jian-d6jDuPg",
					  back, sizeof(back)), 0);
	ASSERT_STR_EQ(back, "user.foo");
	ASSERT_INT_EQ(names_encrypt_xattr(fs.names, "", out, sizeof(out)),
		      -EINVAL);
	vec_fs_close(&fs);
}

TEST(symlink_edge_cases)
{
	struct vec_fs fs;
	char out[8192], back[8192], target[4097];
	size_t skipped = 0;

	if (!vec_available())
		SKIP("vectors not extracted");
	for (size_t v = 0; v < 3; v++) { /* gcm, aessiv, xchacha */
		int rc = vec_fs_open(&fs, vec_variants[v], NULL);

		if (rc == -ENOENT) {
			skipped++;
			continue;
		}
		ASSERT_INT_EQ(rc, 0);
		/* empty stays empty */
		ASSERT_INT_EQ(names_encrypt_symlink(fs.names, "", 0, out,
						    sizeof(out)), 0);
		ASSERT_STR_EQ(out, "");
		ASSERT_INT_EQ(names_decrypt_symlink(fs.names, "", 0, back,
						    sizeof(back)), 0);
		ASSERT_STR_EQ(back, "");
		ASSERT_INT_EQ(names_symlink_plain_len(fs.names, "", 0), 0);
		/* 4096-byte target (not limited to a block) */
		memset(target, 'p', 4096);
		target[4096] = 0;
		ASSERT_INT_EQ(names_encrypt_symlink(fs.names, target, 4096,
						    out, sizeof(out)), 0);
		ASSERT_INT_EQ(names_symlink_plain_len(fs.names, out, strlen(out)),
			      4096);
		ASSERT_INT_EQ(names_decrypt_symlink(fs.names, out, strlen(out),
						    back, sizeof(back)), 0);
		ASSERT_STR_EQ(back, target);
		/* output too small */
		ASSERT_INT_EQ(names_encrypt_symlink(fs.names, target, 4096,
						    out, 100), -ENAMETOOLONG);
		ASSERT_INT_EQ(names_decrypt_symlink(fs.names, out, strlen(out),
						    back, 100), -EBADMSG);
		/* every byte position tampered (one char changed) fails */
		ASSERT_INT_EQ(names_encrypt_symlink(fs.names, "one.txt", 7,
						    out, sizeof(out)), 0);
		for (size_t i = 0; i < strlen(out); i++) {
			char save = out[i];

			out[i] = save == 'x' ? 'y' : 'x';
			ASSERT(names_decrypt_symlink(fs.names, out, strlen(out),
						     back, sizeof(back)) ==
			       -EBADMSG);
			out[i] = save;
		}
		ASSERT_INT_EQ(names_decrypt_symlink(fs.names, out, strlen(out),
						    back, sizeof(back)), 0);
		ASSERT_STR_EQ(back, "one.txt");
		/* too short to hold nonce and tag */
		ASSERT_INT_EQ(names_decrypt_symlink(fs.names, "AAAA", 4, back,
						    sizeof(back)), -EBADMSG);
		ASSERT(names_symlink_plain_len(fs.names, "AAAA", 4) < 0);
		ASSERT(names_symlink_plain_len(fs.names, "AAAAA", 5) < 0);
		/* exact sizes in both base64 forms, whatever the padding */
		for (int raw = 0; raw < 2; raw++) {
			struct names *pn = NULL;
			struct names_params p = fs.np;

			p.raw64 = raw;
			ASSERT_INT_EQ(names_new(&pn, fs.eme_key, &p,
						fs.content), 0);
			ASSERT(names_symlink_len_from_size(pn) == raw);
			for (size_t l = 1; l <= 40; l++) {
				memset(target, 'q', l);
				target[l] = 0;
				ASSERT_INT_EQ(names_encrypt_symlink(pn, target,
								    l, out,
								    sizeof(out)),
					      0);
				ASSERT_INT_EQ(names_symlink_plain_len(pn, out,
								      strlen(out)),
					      (long)l);
			}
			if (!raw)
				ASSERT_INT_EQ(names_symlink_plain_len(pn, NULL,
								      52),
					      -EINVAL);
			names_free(pn);
		}
		vec_fs_close(&fs);
	}
	/* every cipher must have an implementation */
	ASSERT_INT_EQ(skipped, 0);
}

struct thr_arg {
	struct names *n;
	const char *want;
	int bad;
};

static void *thr_main(void *p)
{
	struct thr_arg *a = p;
	const uint8_t iv[16] = { 9 };
	char c[NAMES_MAX_CNAME], back[NAMES_MAX_PLAIN + 1];

	for (int i = 0; i < 3000; i++) {
		if (names_encrypt(a->n, iv, "concurrent-name", c, sizeof(c)) ||
		    strcmp(c, a->want) ||
		    names_decrypt(a->n, iv, c, strlen(c), back,
				  sizeof(back)) ||
		    strcmp(back, "concurrent-name"))
			a->bad++;
	}
	return NULL;
}

TEST(threads)
{
	struct names *n = NULL;
	struct names_params p = { .raw64 = true, .diriv = true,
				  .longnamemax = 255 };
	uint8_t key[32] = { 5 };
	const uint8_t iv[16] = { 9 };
	char want[NAMES_MAX_CNAME];
	struct thr_arg args[4];
	pthread_t th[4];

	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
	ASSERT_INT_EQ(names_encrypt(n, iv, "concurrent-name", want,
				    sizeof(want)), 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thr_arg){ n, want, 0 };
		ASSERT_INT_EQ(pthread_create(&th[i], NULL, thr_main, &args[i]),
			      0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ASSERT_INT_EQ(args[i].bad, 0);
	}
	names_free(n);
}

TEST(valid_plain)
{
	char n255[256], n256[257];

	memset(n255, 'a', 255);
	memset(n256, 'a', 256);
	ASSERT(names_valid_plain("a", 1));
	ASSERT(names_valid_plain("...", 3));
	ASSERT(names_valid_plain(".a", 2));
	ASSERT(names_valid_plain(n255, 255));
	ASSERT(!names_valid_plain(n256, 256));
	ASSERT(!names_valid_plain("", 0));
	ASSERT(!names_valid_plain(".", 1));
	ASSERT(!names_valid_plain("..", 2));
	ASSERT(!names_valid_plain("a/", 2));
	ASSERT(!names_valid_plain("a\0", 2));
}

struct bad_find {
	const char *want;
	int seen;
};

static int bad_find(const char *enc, void *arg)
{
	struct bad_find *f = arg;

	f->seen++;
	return strcmp(enc, f->want) == 0;
}

/* The path IV built a component at a time (reverse mode's deep walks)
 * equals the IV of the whole path, from an empty start and from a
 * non-empty one, for every purpose, at every step. */
TEST(pathiv_by_components)
{
	static const char *const parts[] = { "a", "bb", "x y", "0123456789",
					     "-_", "long" };
	static const char *const purposes[] = { NAMES_PATHIV_DIRIV,
						NAMES_PATHIV_FILEID,
						NAMES_PATHIV_BLOCK0 };
	char path[256];

	for (int start = 0; start < 2; start++) {
		const char *first = start ? "top/dir" : "";
		struct names_pathiv_ctx *c =
			names_pathiv_begin(first, strlen(first));

		ASSERT(c != NULL);
		snprintf(path, sizeof(path), "%s", first);
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			size_t l = strlen(path);

			snprintf(path + l, sizeof(path) - l, "%s%s",
				 l ? "/" : "", parts[i]);
			ASSERT_INT_EQ(names_pathiv_add(c, parts[i]), 0);
			for (size_t k = 0; k < 3; k++) {
				uint8_t want[NAMES_DIRIV_LEN];
				uint8_t got[NAMES_DIRIV_LEN];

				ASSERT_INT_EQ(names_pathiv(want, path,
							   strlen(path),
							   purposes[k]), 0);
				ASSERT_INT_EQ(names_pathiv_get(c, got,
							       purposes[k]),
					      0);
				ASSERT_MEM_EQ(got, want, sizeof(want));
			}
		}
		names_pathiv_end(c);
	}
	names_pathiv_end(NULL);
}

/* -badname display names (spec §4.6) and their way back. */
TEST(badname)
{
	struct names *n = NULL;
	struct names_params p = { .raw64 = true, .diriv = true,
				  .longnamemax = 255 };
	uint8_t key[32] = { 7 }, iv[16] = { 8 };
	char c[NAMES_MAX_CNAME], s[2 * NAMES_MAX_CNAME], out[300];
	struct bad_find f;
	unsigned nb;

	ASSERT_INT_EQ(names_new(&n, key, &p, NULL), 0);
	ASSERT_INT_EQ(names_encrypt(n, iv, "hello.txt", c, sizeof(c)), 0);
	ASSERT_INT_EQ(strlen(c), 22);
	/* a sync tool's suffix: the prefix decrypts */
	snprintf(s, sizeof(s), "%s.bak", c);
	ASSERT_INT_EQ(names_badname_display(n, iv, s, out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "hello.txt.bak GOCRYPTFS_BAD_NAME");
	f.want = s;
	f.seen = 0;
	ASSERT_INT_EQ(names_badname_stored(n, iv, out, bad_find, &f), 1);
	/* the prefix spelled with other unused bits: 2.3 read it alike */
	snprintf(s, sizeof(s), "%sXYZ", c);
	b64_set_unused_bits(s, 22, B64_URL_RAW, 9, &nb);
	ASSERT_INT_EQ(nb, 4);
	ASSERT(strncmp(s, c, 22) != 0);
	ASSERT_INT_EQ(names_badname_display(n, iv, s, out, sizeof(out)), 0);
	ASSERT_STR_EQ(out, "hello.txtXYZ GOCRYPTFS_BAD_NAME");
	f.want = s;
	ASSERT_INT_EQ(names_badname_stored(n, iv, out, bad_find, &f), 1);
	/* shorter than 22 characters, or no prefix decrypts: as stored */
	ASSERT_INT_EQ(names_badname_display(n, iv, "garbage name!!", out,
					    sizeof(out)), 0);
	ASSERT_STR_EQ(out, "garbage name!! GOCRYPTFS_BAD_NAME");
	f.want = "garbage name!!";
	f.seen = 0;
	ASSERT_INT_EQ(names_badname_stored(n, iv, out, bad_find, &f), 1);
	ASSERT_INT_EQ(f.seen, 1);
	c[21] = 0;
	ASSERT_INT_EQ(names_badname_display(n, iv, c, out, sizeof(out)), 0);
	ASSERT(strncmp(out, c, 21) == 0);
	/* a result longer than 255 bytes is not shown */
	memset(s, 'G', 237);
	s[237] = 0;
	ASSERT_INT_EQ(names_badname_display(n, iv, s, out, sizeof(out)),
		      -ENAMETOOLONG);
	s[236] = 0;
	ASSERT_INT_EQ(names_badname_display(n, iv, s, out, sizeof(out)), 0);
	ASSERT_INT_EQ(strlen(out), 255);
	/* names without the suffix lead nowhere */
	f.seen = 0;
	ASSERT_INT_EQ(names_badname_stored(n, iv, "hello.txt", bad_find, &f),
		      0);
	ASSERT_INT_EQ(f.seen, 0);
	names_free(n);
}

RUN_TESTS(T(vectors_every_variant), T(spec_examples),
	  T(decrypt_rejects_invalid_plaintext), T(decrypt_rejects_bad_padding),
	  T(decrypt_rejects_bad_base64), T(encrypt_checks_and_length_table),
	  T(long_name_threshold), T(listing_filter),
	  T(deterministic_and_plaintext_modes), T(xattr_names),
	  T(symlink_edge_cases), T(threads), T(valid_plain), T(badname),
	  T(pathiv_by_components))
