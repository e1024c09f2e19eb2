/* SPDX-License-Identifier: MIT */
/*
 * Content ciphers, for every registered implementation: decryption and
 * byte-exact re-encryption of every content block of the gocryptfs 2.3
 * vectors, known answers (HChaCha20, XChaCha20-Poly1305, RFC 5297 AES-SIV,
 * GCM with a 128-bit IV), tamper loops, the hole and zero-nonce rules,
 * agreement between implementations of one cipher, and the parallel batch
 * path against the inline one.
 */
#include "crypto/aead.h"
#include "crypto/aead_impl.h" /* white box: the S2V/CTR core */
#include "crypto/hchacha20.h"
#include "harness.h"
#include "vecutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/rand.h>

#define BS 4096
#define HDR 18

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		abort();
	return p;
}

static struct aead *new_random(const struct aead_impl *im, uint8_t *key)
{
	size_t kl = aead_cipher_key_len(aead_impl_cipher(im));
	struct aead *a = NULL;

	if (RAND_bytes(key, (int)kl) != 1 || aead_new(&a, im, key, kl))
		return NULL;
	return a;
}

/* ---- gocryptfs vectors -------------------------------------------------- */

struct vfile {
	uint8_t *data;
	size_t len;
	bool matched;
};

struct vset {
	struct vfile f[64];
	size_t n;
};

static void vset_free(struct vset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->f[i].data);
	s->n = 0;
}

/* gocryptfs' own files: config (and backups), diriv, long-name sidecars */
static bool is_meta(const char *name, size_t nl)
{
	return strncmp(name, "gocryptfs.conf", 14) == 0 ||
	       strcmp(name, "gocryptfs.diriv") == 0 ||
	       (nl > 5 && strcmp(name + nl - 5, ".name") == 0);
}

/* Regular files under dir, recursively; skip_meta drops gocryptfs' own. */
static int walk(const char *dir, struct vset *s, bool skip_meta)
{
	char p[4096];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		size_t nl = strlen(de->d_name);

		if (de->d_name[0] == '.' &&
		    (nl == 1 || (nl == 2 && de->d_name[1] == '.')))
			continue;
		if (skip_meta && is_meta(de->d_name, nl))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st))
			rc = -errno;
		else if (S_ISDIR(st.st_mode))
			rc = walk(p, s, skip_meta);
		else if (S_ISREG(st.st_mode) && s->n < 64) {
			s->f[s->n].data = vec_read_file(p, &s->f[s->n].len);
			s->f[s->n].matched = false;
			if (!s->f[s->n].data)
				rc = -EIO;
			s->n++;
		}
	}
	closedir(d);
	return rc;
}

static int variant_cipher(const char *variant, enum aead_cipher *c)
{
	char path[4096], *p;
	uint8_t *txt;
	size_t len;
	int rc = -ENOENT;

	if (vec_path(path, sizeof(path), variant, "vectors.txt"))
		return -ENAMETOOLONG;
	txt = vec_read_file(path, &len);
	if (!txt)
		return -ENOENT;
	p = strstr((char *)txt, "content algorithm: ");
	if (p) {
		p += strlen("content algorithm: ");
		rc = 0;
		if (strncmp(p, "gcm,", 4) == 0)
			*c = AEAD_AES_GCM_256;
		else if (strncmp(p, "siv,", 4) == 0)
			*c = AEAD_AES_SIV_512;
		else if (strncmp(p, "xchacha,", 8) == 0)
			*c = AEAD_XCHACHA20_POLY1305;
		else
			rc = -EINVAL;
	}
	free(txt);
	return rc;
}

/* Open every block of one ciphertext file, compare with the plain files,
 * and re-seal every non-hole block with its stored nonce. */
static int check_file(struct aead *a, const struct vfile *cf,
		      struct vset *plain)
{
	size_t oh = aead_overhead(a), nl = aead_nonce_len(a), cbs = BS + oh;
	size_t ctlen = cf->len - HDR, nb = (ctlen + cbs - 1) / cbs, ptlen;
	const uint8_t *fid = cf->data + 2, *ct = cf->data + HDR;
	uint8_t *pt, *re;
	size_t bad = 99, i;
	int rc = -EBADMSG;

	ptlen = ctlen - nb * oh;
	pt = xmalloc(ptlen);
	re = xmalloc(cbs);
	if (cf->data[0] != 0 || cf->data[1] != 2)
		goto out;
	if (aead_open_blocks(a, pt, ct, ctlen, BS, 0, fid, &bad))
		goto out;
	for (i = 0; i < nb; i++) {
		size_t clen = i + 1 < nb ? cbs : ctlen - i * cbs;
		const uint8_t *blk = ct + i * cbs;
		size_t z = 0;

		while (z < clen && blk[z] == 0)
			z++;
		if (z == clen)
			continue; /* a hole */
		if (aead_seal_blocks(a, re, pt + i * BS, clen - oh, BS, i, fid,
				     blk) ||
		    memcmp(re, blk, clen) != 0)
			goto out;
		(void)nl;
	}
	rc = -ENOENT;
	for (i = 0; i < plain->n; i++)
		if (plain->f[i].len == ptlen &&
		    memcmp(plain->f[i].data, pt, ptlen) == 0) {
			plain->f[i].matched = true;
			rc = 0;
		}
out:
	free(pt);
	free(re);
	return rc;
}

TEST(vectors_all_implementations)
{
	char dir[4096];
	uint8_t key[AEAD_MAX_KEY_LEN];
	size_t files = 0;

	if (!vec_available())
		SKIP("no vectors");
	for (size_t v = 0; v < vec_nvariants; v++) {
		const char *var = vec_variants[v];
		struct vset plain = { .n = 0 }, ciph = { .n = 0 };
		enum aead_cipher c;
		size_t kl;

		ASSERT_INT_EQ(variant_cipher(var, &c), 0);
		kl = vec_hex(var, "content key", key, sizeof(key));
		ASSERT_INT_EQ(kl, aead_cipher_key_len(c));
		ASSERT_INT_EQ(vec_path(dir, sizeof(dir), var, "plain"), 0);
		ASSERT_INT_EQ(walk(dir, &plain, false), 0);
		ASSERT_INT_EQ(vec_path(dir, sizeof(dir), var, "cipher"), 0);
		ASSERT_INT_EQ(walk(dir, &ciph, true), 0);
		for (size_t k = 0; k < aead_impl_count(); k++) {
			const struct aead_impl *im = aead_impl_at(k);
			struct aead *a = NULL;

			if (aead_impl_cipher(im) != c)
				continue;
			ASSERT_INT_EQ(aead_new(&a, im, key, kl), 0);
			for (size_t i = 0; i < plain.n; i++)
				plain.f[i].matched = false;
			for (size_t i = 0; i < ciph.n; i++) {
				if (ciph.f[i].len <= HDR)
					continue;
				files++;
				if (check_file(a, &ciph.f[i], &plain)) {
					aead_free(a);
					FAILF("%s: %s: file %zu fails", var,
					      aead_impl_name(im), i);
				}
			}
			aead_free(a);
			for (size_t i = 0; i < plain.n; i++)
				if (plain.f[i].len && !plain.f[i].matched)
					FAILF("%s: %s: plain %zu unmatched",
					      var, aead_impl_name(im), i);
		}
		vset_free(&plain);
		vset_free(&ciph);
	}
	printf("# %zu ciphertext files checked\n", files);
	ASSERT(files > 0);
}

/* ---- known answers ------------------------------------------------------ */

TEST(kat_hchacha20)
{
	uint8_t key[32], n[16], out[32], want[32];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	th_unhex(n, 16, "000000090000004a0000000031415927");
	th_unhex(want, 32, "82413b4227b27bfed30e42508a877d73"
			   "a0f9e4d58a74a853c12ec41326d3ecdc");
	hchacha20(out, key, n);
	ASSERT_MEM_EQ(out, want, 32);
}

/* RFC 5297 A.1 (deterministic) and A.2 (nonce-based), AES-SIV-256, through
 * the key-size generic S2V/CTR core of the OpenSSL backend. */
TEST(kat_rfc5297_siv)
{
	uint8_t key[32], ad1[40], ad2[10], nonce[16], pt[47], out[80], want[80];
	const uint8_t *ad[3] = { ad1, ad2, nonce };
	size_t adlen[3] = { 24, 10, 16 };

	th_unhex(key, 32, "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0"
			  "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
	th_unhex(ad1, 24, "101112131415161718191a1b1c1d1e1f2021222324252627");
	th_unhex(pt, 14, "112233445566778899aabbccddee");
	th_unhex(want, 30, "85632d07c6e8f37f950acd320a2ecc93"
			   "40c02b9690c4dc04daef7f6afe5c");
	ASSERT_INT_EQ(aead_siv_ossl_test(out, key, 32, ad, adlen, 1, pt, 14),
		      0);
	ASSERT_MEM_EQ(out, want, 30);

	th_unhex(key, 32, "7f7e7d7c7b7a79787776757473727170"
			  "404142434445464748494a4b4c4d4e4f");
	th_unhex(ad1, 40, "00112233445566778899aabbccddeeff"
			  "deaddadadeaddadaffeeddccbbaa9988"
			  "7766554433221100");
	th_unhex(ad2, 10, "102030405060708090a0");
	th_unhex(nonce, 16, "09f911029d74e35bd84156c5635688c0");
	th_unhex(pt, 47, "7468697320697320736f6d6520706c61"
			 "696e7465787420746f20656e63727970"
			 "74207573696e67205349562d414553");
	th_unhex(want, 63, "7bdb6e3b432667eb06f4d14bff2fbd0f"
			   "cb900f2fddbe404326601965c889bf17"
			   "dba77ceb094fa663b7a3f748ba8af829"
			   "ea64ad544a272e9c485b62a3fd5c0d");
	adlen[0] = 40;
	ASSERT_INT_EQ(aead_siv_ossl_test(out, key, 32, ad, adlen, 3, pt, 47),
		      0);
	ASSERT_MEM_EQ(out, want, 63);
}

/* draft-irtf-cfrg-xchacha-03 A.3.1 */
TEST(kat_xchacha20_poly1305)
{
	static const char pt_s[] =
		"Ladies and Gentlemen of the class of '99: If I could offer "
		"you only one tip for the future, sunscreen would be it.";
	static const char ct_hex[] =
		"bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396c"
		"bb731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213"
		"b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565"
		"d3fff921f9664c97637da9768812f615c68b13b52e"
		"c0875924c1c7987947deafd8780acf49";
	size_t ptlen = sizeof(pt_s) - 1;
	uint8_t key[32], nonce[24], aad[12], want[200], out[200], back[200];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
	for (int i = 0; i < 24; i++)
		nonce[i] = (uint8_t)(0x40 + i);
	th_unhex(aad, 12, "50515253c0c1c2c3c4c5c6c7");
	ASSERT_INT_EQ(th_unhex(want, sizeof(want), ct_hex), ptlen + 16);
	for (size_t k = 0; k < aead_impl_count(); k++) {
		const struct aead_impl *im = aead_impl_at(k);
		struct aead *a = NULL;

		if (aead_impl_cipher(im) != AEAD_XCHACHA20_POLY1305)
			continue;
		ASSERT_INT_EQ(aead_new(&a, im, key, 32), 0);
		ASSERT_INT_EQ(aead_seal(a, out, nonce, (const uint8_t *)pt_s,
					ptlen, aad, 12), 0);
		ASSERT_MEM_EQ(out, nonce, 24);
		ASSERT_MEM_EQ(out + 24, want, ptlen + 16);
		ASSERT_INT_EQ(aead_open(a, back, out, ptlen + 40, aad, 12), 0);
		ASSERT_MEM_EQ(back, pt_s, ptlen);
		aead_free(a);
	}
}

/* GCM with a 128-bit IV (J0 from GHASH), computed independently with
 * Python cryptography: AESGCM(key 00..1f).encrypt(IV 00..0f,
 * pt[i] = 3i, 24 zero AAD bytes). */
#define GCM_IV128_WANT                                                  \
	"676fa67f35eb583d85e4c5087183069e64805d985bb291060c750384daae9697" \
	"081cef9d112fa2bb9a5248d765b16fffc7e3dcc3108be224081608aa559cf83b" \
	"b8b09770aeea817a12ced06cfe6964a4"

TEST(kat_gcm_iv128)
{
	uint8_t key[32], iv[16], aad[24] = { 0 }, pt[64], out[96], want[80];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 16; i++)
		iv[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		pt[i] = (uint8_t)(i * 3);
	if (th_unhex(want, sizeof(want), GCM_IV128_WANT) != 80)
		SKIP("no vector");
	for (size_t k = 0; k < aead_impl_count(); k++) {
		const struct aead_impl *im = aead_impl_at(k);
		struct aead *a = NULL;

		if (aead_impl_cipher(im) != AEAD_AES_GCM_256)
			continue;
		ASSERT_INT_EQ(aead_new(&a, im, key, 32), 0);
		ASSERT_INT_EQ(aead_seal(a, out, iv, pt, 64, aad, 24), 0);
		ASSERT_MEM_EQ(out + 16, want, 80);
		aead_free(a);
	}
}

/* ---- tamper, holes, zero nonces ----------------------------------------- */

TEST(tamper_every_byte)
{
	uint8_t key[AEAD_MAX_KEY_LEN], fid[16], pt[100], ct[200], out[100];
	uint8_t fid2[16];

	ASSERT(RAND_bytes(fid, 16) == 1);
	ASSERT(RAND_bytes(pt, sizeof(pt)) == 1);
	memcpy(fid2, fid, 16);
	fid2[7] ^= 1;
	for (size_t k = 0; k < aead_impl_count(); k++) {
		const struct aead_impl *im = aead_impl_at(k);
		struct aead *a = new_random(im, key);
		size_t oh, ctlen, bad = 99;
		int rc;

		ASSERT(a);
		oh = aead_overhead(a);
		ctlen = sizeof(pt) + oh;
		ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, sizeof(pt), BS, 5,
					       fid, NULL), 0);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, ctlen, BS, 5, fid,
					       &bad), 0);
		ASSERT_MEM_EQ(out, pt, sizeof(pt));
		for (size_t i = 0; i < ctlen; i++) {
			for (int bit = 0; bit < 8; bit += 7) {
				ct[i] ^= (uint8_t)(1 << bit);
				memset(out, 0xee, sizeof(out));
				bad = 99;
				rc = aead_open_blocks(a, out, ct, ctlen, BS, 5,
						      fid, &bad);
				if (rc != -EBADMSG)
					FAILF("%s: flip %zu/%d accepted",
					      aead_impl_name(im), i, bit);
				ASSERT_INT_EQ(bad, 0);
				for (size_t j = 0; j < sizeof(out); j++)
					ASSERT_INT_EQ(out[j], 0);
				ct[i] ^= (uint8_t)(1 << bit);
			}
		}
		/* wrong block number, wrong file ID, truncated */
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, ctlen, BS, 6, fid,
					       &bad), -EBADMSG);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, ctlen, BS, 5, fid2,
					       &bad), -EBADMSG);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, ctlen - 1, BS, 5,
					       fid, &bad), -EBADMSG);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, oh, BS, 5, fid,
					       &bad), -EBADMSG);
		/* single messages: wrong AAD, flipped byte */
		ASSERT_INT_EQ(aead_seal(a, ct, NULL, pt, 10, fid, 16), 0);
		ASSERT_INT_EQ(aead_open(a, out, ct, 10 + oh, fid, 16), 0);
		ASSERT_MEM_EQ(out, pt, 10);
		ASSERT_INT_EQ(aead_open(a, out, ct, 10 + oh, fid2, 16),
			      -EBADMSG);
		ASSERT_INT_EQ(aead_open(a, out, ct, oh - 1, fid, 16), -EBADMSG);
		for (size_t i = 0; i < 10 + oh; i++) {
			ct[i] ^= 0x20;
			memset(out, 0xee, 10);
			ASSERT_INT_EQ(aead_open(a, out, ct, 10 + oh, fid, 16),
				      -EBADMSG);
			for (size_t j = 0; j < 10; j++)
				ASSERT_INT_EQ(out[j], 0);
			ct[i] ^= 0x20;
		}
		/* an empty message */
		ASSERT_INT_EQ(aead_seal(a, ct, NULL, pt, 0, NULL, 0), 0);
		ASSERT_INT_EQ(aead_open(a, out, ct, oh, NULL, 0), 0);
		aead_free(a);
	}
}

TEST(holes_and_zero_nonces)
{
	uint8_t key[AEAD_MAX_KEY_LEN], fid[16] = { 9 }, *ct, *out, *pt;

	ct = xmalloc(3 * (BS + 64));
	out = xmalloc(3 * BS);
	pt = xmalloc(3 * BS);
	ASSERT(RAND_bytes(pt, 3 * BS) == 1);
	for (size_t k = 0; k < aead_impl_count(); k++) {
		const struct aead_impl *im = aead_impl_at(k);
		struct aead *a = new_random(im, key);
		size_t cbs, bad = 99;

		ASSERT(a);
		cbs = BS + aead_overhead(a);
		ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, 3 * BS, BS, 0, fid,
					       NULL), 0);
		/* block 1 becomes a hole: zeros, the others still open */
		memset(ct + cbs, 0, cbs);
		memset(out, 0xee, 3 * BS);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, 3 * cbs, BS, 0, fid,
					       &bad), 0);
		ASSERT_MEM_EQ(out, pt, BS);
		for (size_t j = 0; j < BS; j++)
			ASSERT_INT_EQ(out[BS + j], 0);
		ASSERT_MEM_EQ(out + 2 * BS, pt + 2 * BS, BS);
		/* a last block cut short fails, and so does one of zeros */
		memset(out, 0xee, 3 * BS);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, 2 * cbs + 100, BS, 0,
					       fid, &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, 2);
		ASSERT_MEM_EQ(out, pt, BS);
		memset(ct + 2 * cbs, 0, 100);
		memset(out, 0xee, 3 * BS);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, 2 * cbs + 100, BS, 0,
					       fid, &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, 2);
		for (size_t j = 0; j < 100 - aead_overhead(a); j++)
			ASSERT_INT_EQ(out[2 * BS + j], 0);
		/* a zero nonce in front of an otherwise valid block */
		ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, BS, BS, 0, fid, NULL),
			      0);
		memset(ct, 0, aead_nonce_len(a));
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct, cbs, BS, 0, fid,
					       &bad), -EBADMSG);
		/* a block sealed with an all-zero nonce authenticates, yet
		 * is refused (spec §3.4 rule 4), in batches and messages */
		memset(key, 0, AEAD_MAX_NONCE_LEN);
		ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, 100, BS, 0, fid, key),
			      0);
		ASSERT_INT_EQ(aead_open_blocks(a, out, ct,
					       100 + aead_overhead(a), BS, 0,
					       fid, &bad), -EBADMSG);
		ASSERT_INT_EQ(aead_seal(a, ct, key, pt, 100, fid, 16), 0);
		ASSERT_INT_EQ(aead_open(a, out, ct, 100 + aead_overhead(a),
					fid, 16), -EBADMSG);
		ct[0] = 1; /* the same bytes with a non-zero nonce fail too */
		ASSERT_INT_EQ(aead_open(a, out, ct, 100 + aead_overhead(a),
					fid, 16), -EBADMSG);
		aead_free(a);
	}
	free(ct);
	free(out);
	free(pt);
}

/* A bad block inside a run of good ones: the backend's batch call stops at
 * it, and the batch resumes after it. Inline (5 blocks) and on the worker
 * pool (40 blocks), with a hole after the bad block. */
TEST(bad_block_inside_run)
{
	static const size_t counts[] = { 5, 40 };
	uint8_t key[AEAD_MAX_KEY_LEN], fid[16] = { 3 }, *ct, *out, *pt;

	ct = xmalloc(40 * (BS + 64));
	out = xmalloc(40 * BS);
	pt = xmalloc(40 * BS);
	ASSERT(RAND_bytes(pt, 40 * BS) == 1);
	aead_set_threads(2);
	for (size_t k = 0; k < aead_impl_count(); k++) {
		const struct aead_impl *im = aead_impl_at(k);
		struct aead *a = new_random(im, key);

		ASSERT(a);
		for (size_t c = 0; c < 2; c++) {
			size_t n = counts[c], cbs = BS + aead_overhead(a);
			size_t bad = 99, len = n * BS - 7;

			ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, len, BS, 70,
						       fid, NULL), 0);
			ct[2 * cbs + 100] ^= 4;	     /* block 2 tampered */
			memset(ct + 3 * cbs, 0, cbs); /* block 3 a hole */
			memset(out, 0xee, n * BS);
			ASSERT_INT_EQ(aead_open_blocks(a, out, ct,
						       len + n * (cbs - BS),
						       BS, 70, fid, &bad),
				      -EBADMSG);
			ASSERT_INT_EQ(bad, 2);
			ASSERT_MEM_EQ(out, pt, 2 * BS);
			for (size_t j = 2 * BS; j < 4 * BS; j++)
				ASSERT_INT_EQ(out[j], 0);
			ASSERT_MEM_EQ(out + 4 * BS, pt + 4 * BS,
				      len - 4 * BS);
		}
		aead_free(a);
	}
	aead_set_threads(0);
	free(ct);
	free(out);
	free(pt);
}

/* ---- cross-implementation and parallel agreement ------------------------ */

TEST(implementations_agree)
{
	uint8_t key[AEAD_MAX_KEY_LEN], fid[16], nonces[8 * 24], pt[3 * BS + 7];
	uint8_t *ref = xmalloc(sizeof(pt) + 4 * 64);
	uint8_t *ct = xmalloc(sizeof(pt) + 4 * 64);

	ASSERT(RAND_bytes(key, sizeof(key)) == 1);
	ASSERT(RAND_bytes(fid, sizeof(fid)) == 1);
	ASSERT(RAND_bytes(nonces, sizeof(nonces)) == 1);
	ASSERT(RAND_bytes(pt, sizeof(pt)) == 1);
	for (int c = 0; c < AEAD_CIPHER_COUNT; c++) {
		size_t kl = aead_cipher_key_len((enum aead_cipher)c), seen = 0;

		for (size_t k = 0; k < aead_impl_count(); k++) {
			const struct aead_impl *im = aead_impl_at(k);
			struct aead *a = NULL;
			size_t ctlen;

			if ((int)aead_impl_cipher(im) != c)
				continue;
			ASSERT_INT_EQ(aead_new(&a, im, key, kl), 0);
			ctlen = sizeof(pt) + 4 * aead_overhead(a);
			ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, sizeof(pt),
						       BS, 77, fid, nonces),
				      0);
			if (seen++ == 0)
				memcpy(ref, ct, ctlen);
			else if (memcmp(ref, ct, ctlen) != 0)
				FAILF("%s differs", aead_impl_name(im));
			ASSERT_INT_EQ(aead_seal(a, ct, nonces, pt, 1000, fid,
						5), 0);
			aead_free(a);
		}
		printf("# %s: %zu implementations\n",
		       aead_cipher_name((enum aead_cipher)c), seen);
	}
	free(ref);
	free(ct);
}

static size_t g_nl;

static int cmp_nonce(const void *x, const void *y)
{
	return memcmp(x, y, g_nl);
}

/* 1 if the nb blocks' nonces are pairwise distinct and non-zero. */
static int distinct_nonces(const uint8_t *ct, size_t nb, size_t cbs,
			   size_t nl)
{
	uint8_t *all = xmalloc(nb * nl), zero[AEAD_MAX_NONCE_LEN] = { 0 };
	int ok = 1;

	for (size_t i = 0; i < nb; i++)
		memcpy(all + i * nl, ct + i * cbs, nl);
	g_nl = nl;
	qsort(all, nb, nl, cmp_nonce);
	for (size_t i = 0; i < nb; i++)
		if (!memcmp(all + i * nl, zero, nl) ||
		    (i && !memcmp(all + i * nl, all + (i - 1) * nl, nl)))
			ok = 0;
	free(all);
	return ok;
}

TEST(parallel_matches_inline)
{
	const size_t nb = 256, ptlen = nb * BS - 1000;
	uint8_t key[AEAD_MAX_KEY_LEN], fid[16], *nonces, *pt, *c1, *c2, *out;

	nonces = xmalloc(nb * 24);
	pt = xmalloc(nb * BS);
	c1 = xmalloc(nb * (BS + 40));
	c2 = xmalloc(nb * (BS + 40));
	out = xmalloc(nb * BS);
	ASSERT(RAND_bytes(fid, 16) == 1);
	ASSERT(RAND_bytes(nonces, (int)nb * 24) == 1);
	ASSERT(RAND_bytes(pt, (int)(nb * BS)) == 1);
	for (size_t k = 0; k < aead_impl_count(); k++) {
		const struct aead_impl *im = aead_impl_at(k);
		struct aead *a = new_random(im, key);
		size_t ctlen, cbs, bad = 99;

		ASSERT(a);
		cbs = BS + aead_overhead(a);
		ctlen = ptlen + nb * aead_overhead(a);
		aead_set_threads(1);
		ASSERT_INT_EQ(aead_seal_blocks(a, c1, pt, ptlen, BS, 3, fid,
					       nonces), 0);
		aead_set_threads(4); /* the pool even on one CPU */
		ASSERT_INT_EQ(aead_get_threads(), 4);
		ASSERT_INT_EQ(aead_seal_blocks(a, c2, pt, ptlen, BS, 3, fid,
					       nonces), 0);
		ASSERT_MEM_EQ(c1, c2, ctlen);
		memset(out, 0xee, nb * BS);
		ASSERT_INT_EQ(aead_open_blocks(a, out, c2, ctlen, BS, 3, fid,
					       &bad), 0);
		ASSERT_MEM_EQ(out, pt, ptlen);
		/* random nonces through the pool: all distinct, still opens */
		ASSERT_INT_EQ(aead_seal_blocks(a, c2, pt, ptlen, BS, 3, fid,
					       NULL), 0);
		ASSERT_INT_EQ(distinct_nonces(c2, nb, cbs, aead_nonce_len(a)),
			      1);
		ASSERT_INT_EQ(aead_open_blocks(a, out, c2, ctlen, BS, 3, fid,
					       &bad), 0);
		ASSERT_MEM_EQ(out, pt, ptlen);
		/* two bad blocks: the first is reported, both zeroed */
		c2[200 * cbs + 50] ^= 1;
		c2[230 * cbs + 50] ^= 1;
		ASSERT_INT_EQ(aead_open_blocks(a, out, c2, ctlen, BS, 3, fid,
					       &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, 200);
		for (size_t j = 0; j < BS; j++) {
			ASSERT_INT_EQ(out[200 * BS + j], 0);
			ASSERT_INT_EQ(out[230 * BS + j], 0);
		}
		ASSERT_MEM_EQ(out, pt, 200 * BS);
		ASSERT_MEM_EQ(out + 201 * BS, pt + 201 * BS, 29 * BS);
		ASSERT_MEM_EQ(out + 231 * BS, pt + 231 * BS, ptlen - 231 * BS);
		aead_free(a);
	}
	free(nonces);
	free(pt);
	free(c1);
	free(c2);
	free(out);
}

/* Many threads on one instance, each with its own context. */
struct thr_arg {
	struct aead *a;
	int rc;
};

static void *thr(void *arg)
{
	struct thr_arg *t = arg;
	uint8_t fid[16] = { 3 }, pt[5 * BS], ct[5 * (BS + 40)], out[5 * BS];

	memset(pt, 0x33, sizeof(pt));
	for (int i = 0; i < 50 && !t->rc; i++) {
		size_t bad;

		if (aead_seal_blocks(t->a, ct, pt, sizeof(pt), BS, (uint64_t)i,
				     fid, NULL) ||
		    aead_open_blocks(t->a, out, ct,
				     sizeof(pt) + 5 * aead_overhead(t->a), BS,
				     (uint64_t)i, fid, &bad) ||
		    memcmp(out, pt, sizeof(pt)))
			t->rc = -1;
	}
	return NULL;
}

TEST(threads_share_instance)
{
	uint8_t key[AEAD_MAX_KEY_LEN];

	for (size_t k = 0; k < aead_impl_count(); k++) {
		struct aead *a = new_random(aead_impl_at(k), key);
		struct thr_arg args[4];
		pthread_t tid[4];

		ASSERT(a);
		for (int i = 0; i < 4; i++) {
			args[i] = (struct thr_arg){ a, 0 };
			ASSERT_INT_EQ(pthread_create(&tid[i], NULL, thr,
						     &args[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			pthread_join(tid[i], NULL);
			ASSERT_INT_EQ(args[i].rc, 0);
		}
		aead_free(a);
	}
}

/* A forked child must not reuse nonces the parent had already buffered. */
TEST(fork_fresh_nonces)
{
	uint8_t key[AEAD_MAX_KEY_LEN], n1[16], n2[16];
	struct aead *a;
	int p[2], st;
	pid_t pid;

	if (getenv("VEILFS_UNDER_QEMU"))
		SKIP("qemu-user cannot fork a process with threads");
	a = new_random(aead_impl_at(0), key);
	ASSERT(a);
	aead_random_nonce(a, n1, 16); /* fills this thread's buffer */
	ASSERT(pipe(p) == 0);
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		/* also: the child gets a fresh worker pool */
		static uint8_t pt[64 * BS], ct[64 * (BS + 32)], out[64 * BS];
		static const uint8_t fid[16] = { 1 };
		size_t bad;
		int bad_rc;

		aead_random_nonce(a, n2, 16);
		bad_rc = aead_seal_blocks(a, ct, pt, sizeof(pt), BS, 0, fid,
					  NULL) ||
			 aead_open_blocks(a, out, ct, sizeof(ct), BS, 0, fid,
					  &bad);
		_exit(!bad_rc && write(p[1], n2, 16) == 16 ? 0 : 1);
	}
	close(p[1]);
	ASSERT(waitpid(pid, &st, 0) == pid);
	ASSERT(read(p[0], n2, 16) == 16);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	aead_random_nonce(a, n1, 16);
	ASSERT(memcmp(n1, n2, 16) != 0);
	close(p[0]);
	aead_free(a);
}

TEST(registry_and_auto)
{
	char fig[256];

	ASSERT(aead_impl_find("AES-GCM-256-OpenSSL") != NULL);
	ASSERT(aead_impl_find("nope") == NULL);
	for (size_t k = 0; k < aead_impl_count(); k++)
		ASSERT(aead_impl_find(aead_impl_name(aead_impl_at(k))) ==
		       aead_impl_at(k));
	for (int c = 0; c < AEAD_CIPHER_COUNT; c++) {
		enum aead_cipher ci = (enum aead_cipher)c;
		const struct aead_impl *im =
			aead_impl_auto(ci, 30, fig, sizeof(fig));

		ASSERT(im != NULL);
		ASSERT_INT_EQ(aead_impl_cipher(im), c);
		printf("# auto %s: %s (%s)\n", aead_cipher_name(ci),
		       aead_impl_name(im), fig);
		ASSERT(aead_impl_auto(ci, 30, NULL, 0) == im);
	}
}

/* Every backend refuses a message one byte longer than its algorithm (or
 * library call) takes, before it touches it: the buffers are PROT_NONE, so
 * any access would crash the test. (GCM's counter wrapped at 2^36 - 32
 * bytes in the VAES code; OpenSSL's int lengths wrapped.) */
TEST(backends_refuse_what_their_algorithm_cannot_take)
{
	uint8_t key[64] = { 1 }, nonce[24] = { 1 }, aad[24] = { 0 };

	for (size_t i = 0; i < aead_impl_count_all(); i++) {
		const struct aead_impl *im = aead_impl_at_all(i);
		size_t len = im->msg_max + 1, map = len + 4096;
		void *ctx = NULL;
		uint8_t *big;

		if (!aead_impl_supported(im, NULL) || im->msg_max >= 1ull << 40)
			continue; /* unsupported here; or no limit in reach */
		ASSERT(im->msg_max >= (size_t)1 << 30);
		big = mmap(NULL, map, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
							 MAP_NORESERVE, -1, 0);
		ASSERT(big != MAP_FAILED);
		ASSERT_INT_EQ(im->ctx_new(&ctx, key), 0);
		ASSERT_INT_EQ(im->seal(ctx, big, nonce, big, len, aad, 24),
			      -EIO);
		ASSERT_INT_EQ(im->open(ctx, big, nonce, big,
				       len + im->tag_len, aad, 24),
			      -EBADMSG);
		im->ctx_free(ctx);
		munmap(big, map);
	}
}

/* aead_open of a body over 1 GiB fails with zeroed output (long stage:
 * 1 GiB of output is written). */
TEST(open_too_long_zeroes_output)
{
	struct aead *a = NULL;
	uint8_t key[32] = { 2 }, *in, *out;
	size_t oh, outlen, inlen;

	if (!getenv("VEILFS_LONG"))
		SKIP("long stage (VEILFS_LONG=1): writes 1 GiB");
	ASSERT_INT_EQ(aead_new(&a, aead_impl_at(0), key, 32), 0);
	oh = aead_overhead(a);
	outlen = ((size_t)1 << 30) + 1;
	inlen = outlen + oh;
	in = mmap(NULL, inlen, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	out = mmap(NULL, outlen, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT(in != MAP_FAILED && out != MAP_FAILED);
	memset(out, 0xaa, 4096);
	memset(out + outlen / 2, 0xaa, 4096);
	memset(out + outlen - 4096, 0xaa, 4096);
	ASSERT_INT_EQ(aead_open(a, out, in, inlen, NULL, 0), -EBADMSG);
	for (size_t off = 0; off < outlen; off += outlen / 2 - 4096) {
		size_t k = off + 4096 <= outlen ? off : outlen - 4096;

		for (size_t j = 0; j < 4096; j++)
			ASSERT(out[k + j] == 0);
	}
	munmap(in, inlen);
	munmap(out, outlen);
	aead_free(a);
}

/* ---- the self-test of our own backends ---------------------------------- */

/* Fakes: OpenSSL's AES-GCM with one defect each, posing as our own code
 * with OpenSSL's as the reference. */
static int bad_seal_full_block(void *ctx, uint8_t *body, const uint8_t *nonce,
			       const uint8_t *pt, size_t ptlen,
			       const uint8_t *aad, size_t aadlen)
{
	int rc = aead_gcm_ossl.seal(ctx, body, nonce, pt, ptlen, aad, aadlen);

	if (ptlen == 4096)
		body[4000] ^= 1; /* wrong in one byte of whole blocks only */
	return rc;
}

static int bad_open_accepts(void *ctx, uint8_t *pt, const uint8_t *nonce,
			    const uint8_t *body, size_t bodylen,
			    const uint8_t *aad, size_t aadlen)
{
	aead_gcm_ossl.open(ctx, pt, nonce, body, bodylen, aad, aadlen);
	return 0; /* never says a message was tampered with */
}

static int bad_seal_run_last(void *ctx, const struct aead_run *r)
{
	int rc = aead_gcm_ossl.seal_run(ctx, r);

	r->cipher_out[(r->n - 1) * r->cbs + 20] ^= 0x80; /* the short block */
	return rc;
}

TEST(own_backends_pass_their_self_test)
{
	size_t own = 0;

	for (size_t k = 0; k < aead_impl_count_all(); k++) {
		const struct aead_impl *im = aead_impl_at_all(k);

		if (!im->reference)
			continue;
		own++;
		/* on a CPU without the instructions the contexts cannot be
		 * made; with them, the backend must agree and be listed */
		if (im->supported && !im->supported()) {
			ASSERT_INT_EQ(aead_impl_selftest(im), -ENOTSUP);
			continue;
		}
		ASSERT_INT_EQ(aead_impl_selftest(im), 0);
		ASSERT(aead_impl_supported(im, NULL));
	}
	ASSERT_INT_EQ(own, 3); /* VAES (AVX-512, AVX2), XChaCha AVX-512 */
	/* the library backends have none and need none */
	ASSERT_INT_EQ(aead_impl_selftest(&aead_gcm_ossl), -EINVAL);
}

TEST(self_test_refuses_a_wrong_backend)
{
	struct aead_impl fake = aead_gcm_ossl;
	const char *needs = NULL;
	struct aead *a = NULL;
	uint8_t key[32] = { 3 };

	fake.name = "AES-GCM-256-fake";
	fake.reference = &aead_gcm_ossl;
	/* the fake as it is: OpenSSL agrees with itself */
	ASSERT_INT_EQ(aead_impl_selftest(&fake), 0);
	ASSERT(aead_impl_supported(&fake, NULL));

	fake.seal = bad_seal_full_block;
	ASSERT_INT_EQ(aead_impl_selftest(&fake), -EIO);
	ASSERT(!aead_impl_supported(&fake, &needs));
	ASSERT(needs && strcmp(needs, "a passing self-test") == 0);
	ASSERT_INT_EQ(aead_new(&a, &fake, key, 32), -ENOTSUP);
	ASSERT(a == NULL);

	fake.seal = aead_gcm_ossl.seal;
	fake.open = bad_open_accepts;
	ASSERT_INT_EQ(aead_impl_selftest(&fake), -EIO);

	fake.open = aead_gcm_ossl.open;
	fake.seal_run = bad_seal_run_last;
	ASSERT_INT_EQ(aead_impl_selftest(&fake), -EIO);

	/* a reference of another cipher is no reference */
	fake.seal_run = aead_gcm_ossl.seal_run;
	fake.reference = &aead_xchacha_ossl;
	ASSERT_INT_EQ(aead_impl_selftest(&fake), -EINVAL);
}

RUN_TESTS(T(vectors_all_implementations), T(kat_hchacha20), T(kat_rfc5297_siv),
	  T(kat_xchacha20_poly1305), T(kat_gcm_iv128), T(tamper_every_byte),
	  T(holes_and_zero_nonces), T(bad_block_inside_run),
	  T(implementations_agree),
	  T(parallel_matches_inline), T(threads_share_instance),
	  T(fork_fresh_nonces), T(registry_and_auto),
	  T(backends_refuse_what_their_algorithm_cannot_take),
	  T(open_too_long_zeroes_output),
	  T(own_backends_pass_their_self_test),
	  T(self_test_refuses_a_wrong_backend))
