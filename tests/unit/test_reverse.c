/* SPDX-License-Identifier: MIT */
/*
 * The crypto of reverse mode (spec §5) against the gocryptfs 2.3 vectors:
 * pathiv known answers (the virtual gocryptfs.diriv files of reverse/),
 * and the whole view of reverse/ and reverse-plaintextnames/ regenerated
 * from plain/ with our modules alone (names, long names and their .name
 * files, headers with derived file IDs, every block sealed with nonces
 * counted from the block-0 IV, symlink targets with the doubled-path
 * nonce). Then the block-nonce arithmetic (the low half wraps, the high
 * half never changes), batches longer than one call of the aead API, and
 * the refusal of ciphers whose nonces are not 16 bytes.
 */
#include "crypto/aead.h"
#include "crypto/content.h"
#include "crypto/names.h"
#include "harness.h"
#include "vecfs.h"
#include "vecutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONF ".gocryptfs.reverse.conf"

static int fail_count;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		if (!(cond)) {                                         \
			printf("# %s: ", #cond);                        \
			printf(__VA_ARGS__);                            \
			printf("\n");                                   \
			fail_count++;                                   \
		}                                                      \
	} while (0)

static bool same_file(const char *path, const uint8_t *want, size_t len)
{
	size_t got;
	uint8_t *d = vec_read_file(path, &got);
	bool ok = d && got == len && !memcmp(d, want, len);

	free(d);
	return ok;
}

/* The view of a regular file of plaintext pt with cipher path cp. */
static uint8_t *view_of(struct vec_fs *fs, const char *cp, const uint8_t *pt,
			size_t len, size_t *vlen)
{
	uint8_t id[16], b0[16], *v;

	*vlen = (size_t)content_plain_to_cipher_size(fs->content, len);
	v = malloc(*vlen + 1);
	if (!v || names_pathiv(id, cp, strlen(cp), NAMES_PATHIV_FILEID) ||
	    names_pathiv(b0, cp, strlen(cp), NAMES_PATHIV_BLOCK0))
		abort();
	if (!len)
		return v;
	content_header_make(v, id);
	if (content_encrypt_blocks_iv(fs->content, v + CONTENT_HEADER_LEN, pt,
				      len, 0, id, b0))
		abort();
	return v;
}

/* Regenerate the view of plain directory pdir (cipher path cpath) and
 * compare it with vdir. */
static void walk(struct vec_fs *fs, const char *pdir, const char *vdir,
		 const char *cpath, bool root)
{
	uint8_t iv[16] = { 0 };
	struct dirent *de;
	size_t nview = 0, nwant = 0;
	DIR *d;

	if (fs->np.diriv && !fs->np.plaintext) {
		char p[PATH_MAX];

		ASSERT_INT_EQ(names_pathiv(iv, cpath, strlen(cpath),
					   NAMES_PATHIV_DIRIV), 0);
		snprintf(p, sizeof(p), "%s/%s", vdir, NAMES_DIRIV_FILE);
		CHECK(same_file(p, iv, 16), "diriv of '%s'", cpath);
		nwant++;
	}
	d = opendir(pdir);
	ASSERT(d != NULL);
	while ((de = readdir(d))) {
		char cname[NAMES_MAX_CNAME], stored[NAMES_MAX_CNAME + 8];
		char pp[PATH_MAX], vp[PATH_MAX], cp[PATH_MAX];
		struct stat st;
		int rc;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(pp, sizeof(pp), "%s/%s", pdir, de->d_name);
		ASSERT(lstat(pp, &st) == 0);
		if (root && !strcmp(de->d_name, CONF)) {
			size_t len;
			uint8_t *c = vec_read_file(pp, &len);

			snprintf(vp, sizeof(vp), "%s/%s", vdir,
				 NAMES_CONF_FILE);
			CHECK(c && same_file(vp, c, len), "config");
			free(c);
			nwant++;
			continue;
		}
		ASSERT_INT_EQ(names_encrypt(fs->names, iv, de->d_name, cname,
					    sizeof(cname)), 0);
		rc = names_store_name(fs->names, cname, stored, sizeof(stored));
		ASSERT(rc >= 0);
		snprintf(cp, sizeof(cp), "%s%s%s", cpath, *cpath ? "/" : "",
			 stored);
		snprintf(vp, sizeof(vp), "%s/%s", vdir, stored);
		nwant++;
		if (rc == 1) {
			char side[PATH_MAX + 8];

			snprintf(side, sizeof(side), "%s%s", vp,
				 NAMES_LONG_SUFFIX);
			CHECK(same_file(side, (const uint8_t *)cname,
					strlen(cname)),
			      ".name of '%s'", cp);
			nwant++;
		}
		if (S_ISDIR(st.st_mode)) {
			walk(fs, pp, vp, cp, false);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX], got[8192], want[8192], x[PATH_MAX];
			uint8_t nonce[16];
			ssize_t n = readlink(pp, target, sizeof(target));
			ssize_t g = readlink(vp, got, sizeof(got) - 1);

			ASSERT(n > 0 && g > 0);
			got[g] = '\0';
			/* spec §5.5: READLINK's nonce path is doubled */
			ASSERT(snprintf(x, sizeof(x), "%s/%s", cp, stored) <
			       (int)sizeof(x));
			ASSERT_INT_EQ(names_pathiv(nonce, x, strlen(x),
						   NAMES_PATHIV_SYMLINK), 0);
			ASSERT_INT_EQ(names_encrypt_symlink_nonce(
					      fs->names, target, (size_t)n,
					      nonce, want, sizeof(want)),
				      0);
			CHECK(!strcmp(got, want), "symlink '%s'", cp);
			CHECK(names_symlink_cipher_len(fs->names, (size_t)n) ==
				      (size_t)g,
			      "symlink length of '%s'", cp);
		} else {
			size_t len, vlen;
			uint8_t *pt = vec_read_file(pp, &len), *v;

			ASSERT(pt != NULL);
			v = view_of(fs, cp, pt, len, &vlen);
			CHECK(same_file(vp, v, vlen), "file '%s'", cp);
			free(v);
			free(pt);
		}
	}
	closedir(d);
	/* nothing else in the view */
	d = opendir(vdir);
	ASSERT(d != NULL);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			nview++;
	closedir(d);
	CHECK(nview == nwant, "'%s': view has %zu entries, want %zu", cpath,
	      nview, nwant);
}

static void regenerate(const char *variant)
{
	char plain[PATH_MAX], view[PATH_MAX];
	struct vec_fs fs;

	if (!vec_available())
		SKIP("no vectors");
	ASSERT_INT_EQ(vec_fs_open(&fs, variant, NULL), 0);
	ASSERT(fs.cipher == AEAD_AES_SIV_512);
	vec_path(plain, sizeof(plain), variant, "plain");
	vec_path(view, sizeof(view), variant, "cipher");
	fail_count = 0;
	walk(&fs, plain, view, "", true);
	vec_fs_close(&fs);
	ASSERT_INT_EQ(fail_count, 0);
}

TEST(pathiv_known_answers)
{
	char p[PATH_MAX];
	uint8_t iv[16];
	size_t len;
	uint8_t *want;

	if (!vec_available())
		SKIP("no vectors");
	/* the root's virtual diriv is pathiv("", "DIRIV") */
	vec_path(p, sizeof(p), "reverse", "cipher/gocryptfs.diriv");
	want = vec_read_file(p, &len);
	ASSERT(want && len == 16);
	ASSERT_INT_EQ(names_pathiv(iv, "", 0, NAMES_PATHIV_DIRIV), 0);
	ASSERT_MEM_EQ(iv, want, 16);
	free(want);
	/* and sub/'s is that of its cipher path */
	vec_path(p, sizeof(p), "reverse",
		 "cipher/Ov_ocLSw_EmPEGm2yBVPKQ/gocryptfs.diriv");
	want = vec_read_file(p, &len);
	ASSERT(want && len == 16);
	ASSERT_INT_EQ(names_pathiv(iv, "Ov_ocLSw_EmPEGm2yBVPKQ", 22,
				   NAMES_PATHIV_DIRIV), 0);
	ASSERT_MEM_EQ(iv, want, 16);
	free(want);
	/* the purpose is part of the hash */
	ASSERT_INT_EQ(names_pathiv(iv, "", 0, NAMES_PATHIV_FILEID), 0);
	want = vec_read_file(p, &len);
	ASSERT(want && memcmp(iv, want, 16) != 0);
	free(want);
	ASSERT_INT_EQ(names_pathiv(iv, "", 0, "A-PURPOSE-TOO-LONG"), -EINVAL);
}

TEST(reverse_view_regenerates)
{
	regenerate("reverse");
}

TEST(reverse_plaintextnames_view_regenerates)
{
	regenerate("reverse-plaintextnames");
}

TEST(block_nonces)
{
	uint8_t b0[16], n[16];

	for (int i = 0; i < 16; i++)
		b0[i] = (uint8_t)(0xf0 + i);
	content_block_nonce(n, b0, 0);
	ASSERT_MEM_EQ(n, b0, 16);
	/* low half: 0xf8f9fafbfcfdfeff + 1 */
	content_block_nonce(n, b0, 1);
	ASSERT_MEM_EQ(n, b0, 8);
	ASSERT(n[15] == 0x00 && n[14] == 0xff && n[8] == 0xf8);
	/* wraps mod 2^64 without touching the high half */
	memset(b0 + 8, 0xff, 8);
	content_block_nonce(n, b0, 2);
	ASSERT_MEM_EQ(n, b0, 8);
	ASSERT(n[15] == 1 && n[8] == 0 && n[14] == 0);
}

static struct content *engine(enum aead_cipher c, struct aead **a)
{
	uint8_t key[64] = { 7 };
	struct content *ct = NULL;
	const struct aead_impl *impl = NULL;

	for (size_t i = 0; !impl && i < aead_impl_count(); i++)
		if (aead_impl_cipher(aead_impl_at(i)) == c)
			impl = aead_impl_at(i);
	if (!impl || aead_new(a, impl, key, aead_cipher_key_len(c)) ||
	    content_new(&ct, *a))
		abort();
	return ct;
}

TEST(long_batches_and_16_byte_nonces_only)
{
	size_t len = 300 * 4096 + 123, clen;
	uint8_t *pt = malloc(len), *all, *one, id[16] = { 1 }, b0[16] = { 2 };
	uint8_t nonce[16], pt2[4096];
	struct aead *a = NULL, *x = NULL;
	struct content *c = engine(AEAD_AES_SIV_512, &a);
	struct content *xc = engine(AEAD_XCHACHA20_POLY1305, &x);
	size_t got;

	clen = (size_t)content_plain_to_cipher_size(c, len) - 18;
	all = malloc(clen);
	one = malloc(4096 + 32);
	ASSERT(pt && all && one);
	for (size_t i = 0; i < len; i++)
		pt[i] = (uint8_t)(i * 31);
	/* more blocks than one call of the aead API takes */
	ASSERT_INT_EQ(content_encrypt_blocks_iv(c, all, pt, len, 5, id, b0),
		      0);
	for (size_t b = 0; b * 4096 < len; b++) {
		size_t n = len - b * 4096 < 4096 ? len - b * 4096 : 4096;

		ASSERT_INT_EQ(content_encrypt_blocks_iv(c, one, pt + b * 4096,
							n, 5 + b, id, b0),
			      0);
		ASSERT_MEM_EQ(all + b * 4128, one, n + 32);
		content_block_nonce(nonce, b0, 5 + b);
		ASSERT_MEM_EQ(one, nonce, 16);
		/* and it opens as any block does */
		ASSERT_INT_EQ(content_decrypt_blocks(c, pt2, &got, one, n + 32,
						     5 + b, id, NULL),
			      0);
		ASSERT(got == n && !memcmp(pt2, pt + b * 4096, n));
	}
	ASSERT_INT_EQ(content_encrypt_blocks_iv(xc, all, pt, 4096, 0, id, b0),
		      -EINVAL);
	ASSERT_INT_EQ(content_nonce_len(c), 16);
	content_free(c);
	content_free(xc);
	aead_free(a);
	aead_free(x);
	free(pt);
	free(all);
	free(one);
}

RUN_TESTS(T(pathiv_known_answers), T(reverse_view_regenerates),
	  T(reverse_plaintextnames_view_regenerates), T(block_nonces),
	  T(long_batches_and_16_byte_nonces_only))
