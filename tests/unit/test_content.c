/* SPDX-License-Identifier: MIT */
/*
 * Content: every file of the six forward vector variants decrypts, with
 * every registered implementation of its cipher, to plain/ (holes.bin has
 * holes, trunc.bin was shrunk); size arithmetic of spec §3.8 at the edges and
 * near 2^63; header checks; tampering with header, file ID, block number and
 * bytes; the hole rule; single messages with AAD BE64(0); and blocks sealed
 * by one implementation open with every other.
 */
#include "crypto/aead.h"
#include "crypto/content.h"
#include "crypto/names.h"
#include "harness.h"
#include "vecfs.h"
#include "vecutil.h"

#include <errno.h>
#include <limits.h>

/* A content engine over the first implementation of cipher c with a fixed
 * key; NULL if no implementation is registered. */
static struct content *engine(enum aead_cipher c, struct aead **a,
			      const struct aead_impl *impl)
{
	uint8_t key[64];
	struct content *ct = NULL;

	for (size_t i = 0; !impl && i < aead_impl_count(); i++)
		if (aead_impl_cipher(aead_impl_at(i)) == c)
			impl = aead_impl_at(i);
	if (!impl)
		return NULL;
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	if (aead_new(a, impl, key, aead_cipher_key_len(c)))
		return NULL;
	if (content_new(&ct, *a)) {
		aead_free(*a);
		return NULL;
	}
	return ct;
}

static void engine_free(struct content *c, struct aead *a)
{
	content_free(c);
	aead_free(a);
}

TEST(size_table)
{
	static const uint64_t t[][3] = {
		/* plain, GCM/SIV, XChaCha (spec §3.8) */
		{ 0, 0, 0 },
		{ 1, 51, 59 },
		{ 4096, 4146, 4154 },
		{ 4097, 4179, 4195 },
		{ 5000, 5082, 5098 },
		{ 10001, 10115, 10139 },
	};

	for (int ci = 0; ci < AEAD_CIPHER_COUNT; ci++) {
		struct aead *a = NULL;
		struct content *c = engine((enum aead_cipher)ci, &a, NULL);
		int col = ci == AEAD_XCHACHA20_POLY1305 ? 2 : 1;

		ASSERT(c != NULL);
		ASSERT_INT_EQ(content_cipher_bs(c), col == 2 ? 4136 : 4128);
		ASSERT_INT_EQ(content_overhead(c), col == 2 ? 40 : 32);
		ASSERT_INT_EQ(content_msg_overhead(c), col == 2 ? 40 : 32);
		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			bool inv = true;

			ASSERT_INT_EQ(content_plain_to_cipher_size(c, t[i][0]),
				      t[i][col]);
			ASSERT_INT_EQ(content_cipher_to_plain_size(c, t[i][col],
								   &inv),
				      t[i][0]);
			ASSERT(!inv);
		}
		engine_free(c, a);
	}
}

TEST(size_edges_and_invalid_tails)
{
	for (int ci = 0; ci < AEAD_CIPHER_COUNT; ci++) {
		struct aead *a = NULL;
		struct content *c = engine((enum aead_cipher)ci, &a, NULL);
		uint64_t oh, cbs;
		bool inv;

		ASSERT(c != NULL);
		oh = content_overhead(c);
		cbs = content_cipher_bs(c);
		/* plain offsets 0, 1, 4095, 4096, 4097: round trip */
		static const uint64_t ps[] = { 1, 4095, 4096, 4097, 8191, 8192,
					       8193, 1u << 20 };
		for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
			uint64_t cs = content_plain_to_cipher_size(c, ps[i]);

			ASSERT_INT_EQ(cs, 18 + ps[i] +
						  oh * ((ps[i] + 4095) / 4096));
			ASSERT_INT_EQ(content_cipher_to_plain_size(c, cs, &inv),
				      ps[i]);
			ASSERT(!inv);
		}
		/* header-only and short files show as empty */
		ASSERT_INT_EQ(content_cipher_to_plain_size(c, 18, &inv), 0);
		ASSERT(!inv);
		for (uint64_t s = 1; s < 18; s++) {
			ASSERT_INT_EQ(content_cipher_to_plain_size(c, s, &inv),
				      0);
			ASSERT(inv);
		}
		ASSERT_INT_EQ(content_cipher_to_plain_size(c, 0, &inv), 0);
		ASSERT(!inv);
		ASSERT_INT_EQ(content_cipher_to_plain_size(c, 0, NULL), 0);
		/* a tail of 1..OH bytes shows as one invalid byte */
		for (uint64_t tail = 1; tail <= oh; tail++) {
			ASSERT_INT_EQ(content_cipher_to_plain_size(c, 18 + tail,
								   &inv), 1);
			ASSERT(inv);
			ASSERT_INT_EQ(content_cipher_to_plain_size(
					      c, 18 + 2 * cbs + tail, &inv),
				      8193);
			ASSERT(inv);
		}
		/* spec §3.8 probes: header + 20 -> 1 (invalid);
		 * header + 40 -> 8 with GCM (valid size, EIO on read) */
		ASSERT_INT_EQ(content_cipher_to_plain_size(c, 38, &inv), 1);
		ASSERT(inv);
		if (oh == 32) {
			ASSERT_INT_EQ(content_cipher_to_plain_size(c, 58, &inv),
				      8);
			ASSERT(!inv);
		}
		ASSERT_INT_EQ(content_cipher_to_plain_size(c, 18 + oh + 1,
							   &inv), 1);
		ASSERT(!inv);
		/* near 2^63: both directions round-trip without overflow */
		for (uint64_t p = (1ull << 63) - 3 * 4096;
		     p <= (1ull << 63) + 4096; p += 1361) {
			uint64_t cs = content_plain_to_cipher_size(c, p);

			ASSERT(cs > p && cs < UINT64_MAX);
			ASSERT_INT_EQ(cs - p - 18, oh * ((p + 4095) / 4096));
			ASSERT(content_cipher_to_plain_size(c, cs, &inv) == p);
			ASSERT(!inv);
		}
		/* sizes no file can have saturate, never wrap */
		ASSERT(content_plain_to_cipher_size(c, UINT64_MAX) ==
		       UINT64_MAX);
		ASSERT(content_cipher_to_plain_size(c, UINT64_MAX, NULL) <
		       UINT64_MAX);
		/* block offsets */
		ASSERT_INT_EQ(content_block_of(0), 0);
		ASSERT_INT_EQ(content_block_of(1), 0);
		ASSERT_INT_EQ(content_block_of(4095), 0);
		ASSERT_INT_EQ(content_block_of(4096), 1);
		ASSERT_INT_EQ(content_block_of(4097), 1);
		ASSERT(content_block_of(UINT64_MAX) == UINT64_MAX / 4096);
		ASSERT_INT_EQ(content_block_cipher_off(c, 0), 18);
		ASSERT_INT_EQ(content_block_cipher_off(c, 1), 18 + cbs);
		ASSERT(content_block_cipher_off(c, (1ull << 51)) ==
		       18 + cbs * (1ull << 51));
		engine_free(c, a);
	}
}

TEST(header)
{
	struct aead *a = NULL;
	struct content *c = engine(AEAD_AES_GCM_256, &a, NULL);
	uint8_t hdr[18], id[16], id2[16], hdr2[18];

	ASSERT(c != NULL);
	content_header_new(c, hdr, id);
	ASSERT(hdr[0] == 0 && hdr[1] == 2);
	ASSERT_MEM_EQ(hdr + 2, id, 16);
	ASSERT_INT_EQ(content_header_parse(hdr, id2), 0);
	ASSERT_MEM_EQ(id, id2, 16);
	content_header_new(c, hdr2, id2);
	ASSERT(memcmp(id, id2, 16) != 0); /* random */
	hdr[1] = 3;
	ASSERT_INT_EQ(content_header_parse(hdr, id2), -EBADMSG);
	hdr[1] = 2;
	hdr[0] = 1;
	ASSERT_INT_EQ(content_header_parse(hdr, id2), -EBADMSG);
	memset(hdr, 0, sizeof(hdr));
	ASSERT_INT_EQ(content_header_parse(hdr, id2), -EBADMSG);
	hdr[1] = 2; /* version 2, all-zero file ID */
	ASSERT_INT_EQ(content_header_parse(hdr, id2), -EBADMSG);
	hdr[17] = 1;
	ASSERT_INT_EQ(content_header_parse(hdr, id2), 0);
	engine_free(c, a);
}

struct file_counts {
	size_t files, bytes, holes, fail;
	const struct aead_impl *impl;
};

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			printf("# %s:%d: %s (%s, %s)\n", __FILE__,        \
			       __LINE__, #cond, e->cpath,                 \
			       aead_impl_name(fc->impl));                 \
			fc->fail++;                                       \
			goto out;                                         \
		}                                                         \
	} while (0)

static bool zero_block(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int check_file(struct vec_fs *fs, const struct vec_entry *e, void *arg)
{
	struct file_counts *fc = arg;
	struct content *c = fs->content;
	uint8_t *ct = NULL, *pt = NULL, *out = NULL, *re = NULL, id[16];
	size_t clen, plen, olen = 0, cbs = content_cipher_bs(c);
	uint64_t bad = 99;
	bool inv = true;

	if (!S_ISREG(e->cst.st_mode))
		return 0;
	ct = vec_read_file(e->cpath, &clen);
	pt = vec_read_file(e->ppath, &plen);
	CHECK(ct && pt);
	fc->files++;
	CHECK(content_cipher_to_plain_size(c, clen, &inv) == plen && !inv);
	CHECK(content_plain_to_cipher_size(c, plen) == clen);
	if (clen == 0)
		goto out;
	CHECK(clen > 18);
	CHECK(content_header_parse(ct, id) == 0);
	out = malloc(plen + 4096);
	CHECK(out);
	CHECK(content_decrypt_blocks(c, out, &olen, ct + 18, clen - 18, 0, id,
				     &bad) == 0);
	CHECK(olen == plen);
	CHECK(memcmp(out, pt, plen) == 0);
	fc->bytes += plen;
	for (size_t off = 18; off + cbs <= clen; off += cbs)
		fc->holes += zero_block(ct + off, cbs);

	/* block by block from the middle, as a read at an offset does */
	for (size_t b = 0; b * cbs < clen - 18; b++) {
		size_t n = clen - 18 - b * cbs;

		if (n > cbs)
			n = cbs;
		CHECK(content_block_cipher_off(c, b) == 18 + b * cbs);
		CHECK(content_decrypt_blocks(c, out, &olen, ct + 18 + b * cbs,
					     n, b, id, &bad) == 0);
		CHECK(olen == (plen - b * 4096 < 4096 ? plen - b * 4096 :
							4096));
		CHECK(memcmp(out, pt + b * 4096, olen) == 0);
		/* at the wrong position it fails, unless it is a hole */
		if (!zero_block(ct + 18 + b * cbs, n)) {
			CHECK(content_decrypt_blocks(c, out, &olen,
						     ct + 18 + b * cbs, n,
						     b + 1, id, &bad) ==
			      -EBADMSG);
			CHECK(bad == b + 1);
		}
	}
	/* wrong file ID: the first non-hole block is bad */
	id[5] ^= 1;
	CHECK(content_decrypt_blocks(c, out, &olen, ct + 18, clen - 18, 0, id,
				     &bad) == -EBADMSG);
	CHECK(zero_block(ct + 18, cbs) ? bad > 0 : bad == 0);
	id[5] ^= 1;

	/* our encryption of the same plaintext decrypts to the same */
	re = malloc(clen);
	CHECK(re);
	CHECK(content_encrypt_blocks(c, re, pt, plen, 0, id) == 0);
	CHECK(memcmp(re, ct + 18, clen - 18) != 0);
	CHECK(content_decrypt_blocks(c, out, &olen, re, clen - 18, 0, id,
				     &bad) == 0);
	CHECK(olen == plen && memcmp(out, pt, plen) == 0);
out:
	free(ct);
	free(pt);
	free(out);
	free(re);
	return 0;
}

TEST(vectors_every_file_every_impl)
{
	size_t impls = 0, missing = 0;

	if (!vec_available())
		SKIP("vectors not extracted");
	for (size_t i = 0; i < vec_nvariants; i++) {
		size_t before = impls;

		for (size_t k = 0; k < aead_impl_count(); k++) {
			struct file_counts fc = { 0 };
			struct vec_fs fs;
			int rc;

			fc.impl = aead_impl_at(k);
			rc = vec_fs_open(&fs, vec_variants[i], fc.impl);
			if (rc == -ENOENT)
				continue; /* other cipher */
			ASSERT_INT_EQ(rc, 0);
			printf("# %s with %s\n", vec_variants[i],
			       aead_impl_name(fc.impl));
			impls++;
			rc = vec_fs_walk(&fs, check_file, &fc);
			vec_fs_close(&fs);
			ASSERT_INT_EQ(rc, 0);
			ASSERT_INT_EQ(fc.fail, 0);
			/* 13 regular files; holes.bin has two holes */
			ASSERT_INT_EQ(fc.files, 13);
			ASSERT_INT_EQ(fc.holes, 2);
			ASSERT(fc.bytes > 20000);
		}
		if (impls == before) {
			printf("# %s: no implementation of its cipher\n",
			       vec_variants[i]);
			missing++;
		}
	}
	ASSERT(impls >= vec_nvariants);
	ASSERT_INT_EQ(missing, 0);
}

/* The vector file with a given plaintext name in the root, its cipher
 * bytes and length. */
static uint8_t *vector_file(struct vec_fs *fs, const char *name, size_t *len)
{
	char path[PATH_MAX], cname[NAMES_MAX_CNAME], stored[NAMES_MAX_CNAME];
	char rel[NAMES_MAX_CNAME + 16];
	uint8_t *iv, *ct;
	size_t ivlen;

	if (vec_path(path, sizeof(path), fs->variant, "cipher/gocryptfs.diriv"))
		return NULL;
	iv = vec_read_file(path, &ivlen);
	if (!iv || ivlen != 16 ||
	    names_encrypt(fs->names, iv, name, cname, sizeof(cname)) ||
	    names_store_name(fs->names, cname, stored, sizeof(stored)) < 0) {
		free(iv);
		return NULL;
	}
	free(iv);
	snprintf(rel, sizeof(rel), "cipher/%s", stored);
	if (vec_path(path, sizeof(path), fs->variant, rel))
		return NULL;
	ct = vec_read_file(path, len);
	return ct;
}

TEST(tamper_every_byte)
{
	size_t skipped = 0;

	if (!vec_available())
		SKIP("vectors not extracted");
	for (size_t v = 0; v < 3; v++) { /* gcm, aessiv, xchacha */
		struct vec_fs fs;
		uint8_t *ct, id[16], out[8192];
		size_t len, olen;
		uint64_t bad;
		int rc = vec_fs_open(&fs, vec_variants[v], NULL);

		if (rc == -ENOENT) {
			skipped++;
			continue;
		}
		ASSERT_INT_EQ(rc, 0);
		ct = vector_file(&fs, "hello.txt", &len);
		ASSERT(ct != NULL);
		ASSERT(len > 18);
		for (size_t i = 0; i < len; i++) {
			for (int bit = 0; bit < 8; bit += 7) {
				int hr, dr = -EBADMSG;

				ct[i] ^= (uint8_t)(1 << bit);
				hr = content_header_parse(ct, id);
				if (hr == 0)
					dr = content_decrypt_blocks(
						fs.content, out, &olen, ct + 18,
						len - 18, 0, id, &bad);
				ct[i] ^= (uint8_t)(1 << bit);
				ASSERT(hr == -EBADMSG || dr == -EBADMSG);
				if (hr == 0)
					ASSERT(bad == 0);
			}
		}
		ASSERT_INT_EQ(content_header_parse(ct, id), 0);
		ASSERT_INT_EQ(content_decrypt_blocks(fs.content, out, &olen,
						     ct + 18, len - 18, 0, id,
						     &bad), 0);
		ASSERT_MEM_EQ(out, "hello world\n", 12);
		free(ct);

		/* 5000.bin: a bad second block leaves the first valid */
		ct = vector_file(&fs, "5000.bin", &len);
		ASSERT(ct != NULL);
		ASSERT_INT_EQ(content_header_parse(ct, id), 0);
		ct[18 + content_cipher_bs(fs.content) + 40] ^= 0x10;
		ASSERT_INT_EQ(content_decrypt_blocks(fs.content, out, &olen,
						     ct + 18, len - 18, 0, id,
						     &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, 1);
		for (size_t i = 0; i < 4096; i++)
			ASSERT_INT_EQ(out[i], (uint8_t)(i % 251));
		/* the failed block's output is zeroed */
		ASSERT(zero_block(out + 4096, 5000 - 4096));
		/* reading from block 1 on reports the absolute number */
		ASSERT_INT_EQ(content_decrypt_blocks(
				      fs.content, out, &olen,
				      ct + 18 + content_cipher_bs(fs.content),
				      len - 18 - content_cipher_bs(fs.content),
				      1, id, &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, 1);
		free(ct);
		vec_fs_close(&fs);
	}
	/* every cipher must have an implementation */
	ASSERT_INT_EQ(skipped, 0);
}

TEST(holes_and_partial_zero_blocks)
{
	for (int ci = 0; ci < AEAD_CIPHER_COUNT; ci++) {
		struct aead *a = NULL;
		struct content *c = engine((enum aead_cipher)ci, &a, NULL);
		static uint8_t ct[3 * 4136], pt[3 * 4096], out[3 * 4096];
		uint8_t hdr[18], id[16];
		size_t cbs, olen;
		uint64_t bad = 99;

		ASSERT(c != NULL);
		cbs = content_cipher_bs(c);
		content_header_new(c, hdr, id);
		for (size_t i = 0; i < sizeof(pt); i++)
			pt[i] = (uint8_t)(i * 13 + 1);
		/* 3 blocks, the middle one a hole */
		ASSERT_INT_EQ(content_encrypt_blocks(c, ct, pt, 3 * 4096, 0,
						     id), 0);
		memset(ct + cbs, 0, cbs);
		ASSERT_INT_EQ(content_decrypt_blocks(c, out, &olen, ct, 3 * cbs,
						     0, id, &bad), 0);
		ASSERT_INT_EQ(olen, 3 * 4096);
		ASSERT_MEM_EQ(out, pt, 4096);
		ASSERT(zero_block(out + 4096, 4096));
		ASSERT_MEM_EQ(out + 8192, pt + 8192, 4096);
		/* a partial zero block at the end is an error (§3.4 rule 4) */
		memset(ct + 2 * cbs, 0, 100);
		ASSERT_INT_EQ(content_decrypt_blocks(c, out, &olen, ct,
						     2 * cbs + 100, 0, id,
						     &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, 2);
		ASSERT_MEM_EQ(out, pt, 4096);
		/* a tail too short for nonce and tag: invalid, bad block 1 */
		ASSERT_INT_EQ(content_encrypt_blocks(c, ct, pt, 4097, 7, id),
			      0);
		for (size_t tail = 1; tail <= content_overhead(c); tail += 7) {
			bad = 99;
			ASSERT_INT_EQ(content_decrypt_blocks(c, out, &olen, ct,
							     cbs + tail, 7, id,
							     &bad), -EBADMSG);
			ASSERT_INT_EQ(bad, 8);
			ASSERT_MEM_EQ(out, pt, 4096);
		}
		ASSERT_INT_EQ(content_decrypt_blocks(c, out, &olen, ct,
						     cbs + content_overhead(c) +
							     1,
						     7, id, &bad), 0);
		ASSERT_INT_EQ(olen, 4097);
		ASSERT_MEM_EQ(out, pt, 4097);
		/* empty input */
		ASSERT_INT_EQ(content_decrypt_blocks(c, out, &olen, ct, 0, 0,
						     id, &bad), 0);
		ASSERT_INT_EQ(olen, 0);
		ASSERT_INT_EQ(content_encrypt_blocks(c, ct, pt, 0, 0, id), 0);
		engine_free(c, a);
	}
}

TEST(messages)
{
	for (int ci = 0; ci < AEAD_CIPHER_COUNT; ci++) {
		struct aead *a = NULL;
		struct content *c = engine((enum aead_cipher)ci, &a, NULL);
		uint8_t ct[200], out[200], ct2[200];
		size_t oh;

		ASSERT(c != NULL);
		oh = content_msg_overhead(c);
		ASSERT_INT_EQ(content_seal_msg(c, ct, (const uint8_t *)"bar", 3),
			      0);
		ASSERT_INT_EQ(content_open_msg(c, out, ct, 3 + oh), 0);
		ASSERT_MEM_EQ(out, "bar", 3);
		/* random nonce */
		ASSERT_INT_EQ(content_seal_msg(c, ct2, (const uint8_t *)"bar",
					       3), 0);
		ASSERT(memcmp(ct, ct2, 3 + oh) != 0);
		/* AAD is BE64(0): the message is not a content block 0 with
		 * an all-zero file ID... but the AAD bytes differ in length,
		 * so opening it as a block must fail */
		{
			static const uint8_t zid[16];
			size_t olen;
			uint64_t bad;

			ASSERT_INT_EQ(content_decrypt_blocks(c, out, &olen, ct,
							     3 + oh, 0, zid,
							     &bad), -EBADMSG);
		}
		ct[oh] ^= 1;
		ASSERT_INT_EQ(content_open_msg(c, out, ct, 3 + oh), -EBADMSG);
		ASSERT(zero_block(out, 3));
		ASSERT_INT_EQ(content_open_msg(c, out, ct, oh - 1), -EBADMSG);
		ASSERT_INT_EQ(content_seal_msg(c, ct, (const uint8_t *)"", 0), 0);
		ASSERT_INT_EQ(content_open_msg(c, out, ct, oh), 0);
		engine_free(c, a);
	}
}

TEST(implementations_interoperate)
{
	static uint8_t pt[10000], ct[10000 + 3 * 40], out[10000];
	size_t pairs = 0;

	for (size_t i = 0; i < sizeof(pt); i++)
		pt[i] = (uint8_t)(i ^ (i >> 8));
	for (size_t i = 0; i < aead_impl_count(); i++) {
		for (size_t j = 0; j < aead_impl_count(); j++) {
			const struct aead_impl *ii = aead_impl_at(i),
					       *jj = aead_impl_at(j);
			struct aead *ai = NULL, *aj = NULL;
			struct content *ci, *cj;
			uint8_t hdr[18], id[16];
			size_t olen;
			uint64_t bad;

			if (aead_impl_cipher(ii) != aead_impl_cipher(jj))
				continue;
			ci = engine(aead_impl_cipher(ii), &ai, ii);
			cj = engine(aead_impl_cipher(jj), &aj, jj);
			ASSERT(ci && cj);
			content_header_new(ci, hdr, id);
			ASSERT_INT_EQ(content_encrypt_blocks(ci, ct, pt,
							     sizeof(pt), 5, id),
				      0);
			ASSERT_INT_EQ(content_decrypt_blocks(
					      cj, out, &olen, ct,
					      content_plain_to_cipher_size(
						      cj, sizeof(pt)) - 18,
					      5, id, &bad), 0);
			ASSERT_INT_EQ(olen, sizeof(pt));
			ASSERT_MEM_EQ(out, pt, sizeof(pt));
			engine_free(ci, ai);
			engine_free(cj, aj);
			pairs++;
		}
	}
	ASSERT(pairs >= 3);
}

RUN_TESTS(T(size_table), T(size_edges_and_invalid_tails), T(header),
	  T(vectors_every_file_every_impl), T(tamper_every_byte),
	  T(holes_and_partial_zero_blocks), T(messages),
	  T(implementations_interoperate))
