/* SPDX-License-Identifier: MIT */
/*
 * src/fsck's pure parts: quoting of names in output lines (nothing can
 * break or forge a line), block lists, the plausibility test for names
 * decrypted under a guessed IV, the (dev, ino) set, paths of deep node
 * chains, and check_blocks on real ciphertext files: every bad block
 * found, holes (whole zero blocks) accepted, a partial zero tail and a
 * fragment too short to hold data reported.
 */
#include "fsck/internal.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "crypto/aead.h"
#include "crypto/content.h"

TEST(quote_escapes)
{
	char b[128];

	fo_quote(b, sizeof(b), "plain.txt");
	ASSERT_STR_EQ(b, "\"plain.txt\"");
	fo_quote(b, sizeof(b), "a\nb\"c\\d\x7f");
	ASSERT_STR_EQ(b, "\"a\\x0ab\\x22c\\x5cd\\x7f\"");
	fo_quote(b, sizeof(b), "caf\xc3\xa9 \xe6\x97\xa5");
	ASSERT_STR_EQ(b, "\"caf\xc3\xa9 \xe6\x97\xa5\"");
	/* invalid UTF-8: overlong, lone continuation, surrogate */
	fo_quote(b, sizeof(b), "\xc0\xaf|\x80|\xed\xa0\x80");
	ASSERT_STR_EQ(b, "\"\\xc0\\xaf|\\x80|\\xed\\xa0\\x80\"");
	fo_quote(b, 16, "0123456789abcdefghij");
	ASSERT(strlen(b) < 16);
	ASSERT_STR_EQ(b + strlen(b) - 4, "...\"");
	ASSERT(!strncmp(b, "\"0123", 5));
}

TEST(block_lists)
{
	static const uint64_t b[] = { 0, 1, 2, 5, 7, 8, 100 };
	char s[64];

	fo_blocks(s, sizeof(s), b, 7);
	ASSERT_STR_EQ(s, "0-2, 5, 7-8, 100");
	fo_blocks(s, sizeof(s), b + 3, 1);
	ASSERT_STR_EQ(s, "5");
	fo_blocks(s, 12, b, 7);
	ASSERT(strlen(s) < 12);
	ASSERT(strstr(s, "...") != NULL);
}

TEST(plausible_names)
{
	ASSERT(fo_plausible("report.pdf", 10));
	ASSERT(fo_plausible("\xc3\xa9t\xc3\xa9", 5));
	ASSERT(!fo_plausible("a\tb", 3));
	ASSERT(!fo_plausible("\xff\xfe", 2));
	ASSERT(!fo_plausible("\xe6\x97", 2)); /* cut sequence */
}

TEST(idset_many)
{
	struct idset s = { 0 };

	for (ino_t i = 1; i <= 5000; i++)
		ASSERT_INT_EQ(idset_add(&s, 3, i * 7919), 1);
	for (ino_t i = 1; i <= 5000; i++) {
		ASSERT_INT_EQ(idset_add(&s, 3, i * 7919), 0);
		ASSERT(idset_has(&s, 3, i * 7919));
		ASSERT(!idset_has(&s, 4, i * 7919));
	}
	ASSERT(!idset_has(&s, 3, 1));
	ASSERT_INT_EQ(idset_add(&s, 0, 0), 1); /* dev 0, ino 0 are values */
	ASSERT(idset_has(&s, 0, 0));
	idset_fini(&s);
}

TEST(paths_of_deep_chains)
{
	struct fnode *root = fnode_new(NULL, "", "", 1, 1), *n = root;
	char *c, *p;

	ASSERT(root);
	c = fnode_path(root, NULL, false);
	p = fnode_path(root, NULL, true);
	ASSERT_STR_EQ(c, ".");
	ASSERT_STR_EQ(p, "/");
	free(c);
	free(p);
	for (int i = 0; i < 30000; i++) {
		struct fnode *k = fnode_new(n, "CCCC", i == 5 ? NULL : "d", 1,
					    (ino_t)i + 2);

		ASSERT(k);
		if (n != root)
			fnode_put(n); /* the child holds its parent */
		n = k;
	}
	c = fnode_path(n, "leaf", false);
	p = fnode_path(n, "f", true);
	ASSERT(c && p);
	ASSERT_INT_EQ(strlen(c), 30000 * 5 + 4);
	ASSERT(!strncmp(c, "CCCC/CCCC/", 10));
	ASSERT_STR_EQ(c + strlen(c) - 10, "/CCCC/leaf");
	ASSERT(!strncmp(p, "/d/d/d/d/d/?/d/", 15));
	ASSERT(!strcmp(p + strlen(p) - 4, "/d/f"));
	free(c);
	free(p);
	fnode_put(n); /* frees the whole chain, without recursion */
	fnode_put(root);
}

/* ---- check_blocks on a real file ------------------------------------ */

struct env {
	struct aead *a;
	struct content *c;
	struct fsck_opts o;
	struct fctx x;
	char path[64];
	int fd;
	uint8_t id[CONTENT_FILE_ID_LEN];
};

static int env_init(struct env *e)
{
	static const uint8_t key[32] = { 7 };
	const struct aead_impl *impl = NULL;

	memset(e, 0, sizeof(*e));
	for (size_t i = 0; i < aead_impl_count(); i++)
		if (aead_impl_cipher(aead_impl_at(i)) == AEAD_AES_GCM_256)
			impl = aead_impl_at(i);
	if (!impl || aead_new(&e->a, impl, key, sizeof(key)) ||
	    content_new(&e->c, e->a))
		return -1;
	e->x.o = &e->o;
	e->x.c = e->c;
	e->x.cbs = content_cipher_bs(e->c);
	e->x.oh = content_overhead(e->c);
	snprintf(e->path, sizeof(e->path), "/tmp/veilfs-test-fsck.XXXXXX");
	e->fd = mkstemp(e->path);
	return e->fd < 0 ? -1 : 0;
}

static void env_fini(struct env *e)
{
	if (e->fd >= 0) {
		close(e->fd);
		unlink(e->path);
	}
	content_free(e->c);
	aead_free(e->a);
}

/* A file of plen plaintext bytes: header + encrypted blocks. */
static uint64_t write_file(struct env *e, size_t plen)
{
	uint8_t hdr[CONTENT_HEADER_LEN], *pt = calloc(1, plen + 1);
	uint64_t clen = content_plain_to_cipher_size(e->c, plen);
	uint8_t *ct = malloc(clen + 1);

	for (size_t i = 0; i < plen; i++)
		pt[i] = (uint8_t)(i * 31 + 1);
	content_header_new(e->c, hdr, e->id);
	if (ftruncate(e->fd, 0) ||
	    content_encrypt_blocks(e->c, ct, pt, plen, 0, e->id) ||
	    pwrite(e->fd, hdr, sizeof(hdr), 0) != sizeof(hdr) ||
	    pwrite(e->fd, ct, clen - CONTENT_HEADER_LEN, CONTENT_HEADER_LEN) !=
		    (ssize_t)(clen - CONTENT_HEADER_LEN))
		clen = 0;
	free(pt);
	free(ct);
	return clen;
}

static size_t check(struct env *e, uint64_t size, uint64_t *out, size_t cap)
{
	size_t chunk = (1u << 20) / e->x.cbs + 1, nbad = 0, capbad = 0;
	uint8_t *ct = malloc(chunk * e->x.cbs), *pt = malloc(chunk * 4096);
	uint64_t *bad = NULL;
	int rc = check_blocks(&e->x, e->fd, size, e->id, 0,
			      check_nblocks(&e->x, size), ct, pt, &bad, &nbad,
			      &capbad);

	free(ct);
	free(pt);
	if (rc)
		nbad = (size_t)-1;
	for (size_t i = 0; i < nbad && i < cap; i++)
		out[i] = bad[i];
	free(bad);
	return nbad;
}

static void flip_at(int fd, off_t off)
{
	uint8_t b;

	if (pread(fd, &b, 1, off) == 1) {
		b ^= 0x10;
		if (pwrite(fd, &b, 1, off) != 1)
			abort();
	}
}

TEST(check_finds_every_bad_block)
{
	struct env e;
	uint64_t bad[600], size;
	size_t cbs;

	if (env_init(&e))
		SKIP("no AES-GCM engine or temp file");
	cbs = e.x.cbs;
	/* 300 blocks: past one 1 MiB chunk (254 blocks), with holes */
	size = write_file(&e, 300 * 4096 - 5);
	ASSERT(size);
	ASSERT_INT_EQ(check(&e, size, bad, 600), 0);
	flip_at(e.fd, 18 + 0 * cbs + 20);
	flip_at(e.fd, 18 + 253 * cbs + 20);
	flip_at(e.fd, 18 + 254 * cbs + 20);
	flip_at(e.fd, 18 + 299 * cbs + 20);
	ASSERT_INT_EQ(check(&e, size, bad, 600), 4);
	ASSERT_INT_EQ(bad[0], 0);
	ASSERT_INT_EQ(bad[1], 253);
	ASSERT_INT_EQ(bad[2], 254);
	ASSERT_INT_EQ(bad[3], 299);
	/* whole zero blocks are holes, also where written out */
	{
		uint8_t *z = calloc(1, cbs * 10);

		ASSERT(pwrite(e.fd, z, cbs * 10, 18 + 100 * cbs) ==
		       (ssize_t)(cbs * 10));
		free(z);
	}
	ASSERT_INT_EQ(check(&e, size, bad, 600), 4);
	env_fini(&e);
}

TEST(check_tails)
{
	struct env e;
	uint64_t bad[8], size;
	uint8_t z[100] = { 0 };

	if (env_init(&e))
		SKIP("no AES-GCM engine or temp file");
	size = write_file(&e, 2 * 4096 + 100);
	ASSERT(size);
	/* a fragment of 10 bytes after two full blocks */
	ASSERT_INT_EQ(check(&e, 18 + 2 * e.x.cbs + 10, bad, 8), 1);
	ASSERT_INT_EQ(bad[0], 2);
	/* a partial last block of zeros is damage, not a hole */
	ASSERT(pwrite(e.fd, z, sizeof(z), 18 + 2 * e.x.cbs) == sizeof(z));
	ASSERT_INT_EQ(check(&e, size, bad, 8), 1);
	ASSERT_INT_EQ(bad[0], 2);
	/* the file grown by holes: blocks of zeros past the data */
	size = write_file(&e, 4096);
	ASSERT(ftruncate(e.fd, (off_t)(18 + 5 * e.x.cbs)) == 0);
	ASSERT_INT_EQ(check(&e, 18 + 5 * e.x.cbs, bad, 8), 0);
	env_fini(&e);
}

RUN_TESTS(T(quote_escapes), T(block_lists), T(plausible_names),
	  T(idset_many), T(paths_of_deep_chains),
	  T(check_finds_every_bad_block), T(check_tails))
