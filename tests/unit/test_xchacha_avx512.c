/* SPDX-License-Identifier: MIT */
/*
 * XChaCha20-Poly1305-AVX512 (our own code) against published vectors and
 * OpenSSL: RFC 8439 Poly1305 (§2.5.2 and the appendix A.3 cases that hit
 * the carries and the final reduction) and OpenSSL's EVP_MAC Poly1305 over
 * every length 0..700 and larger ones (the 8-lane path) with random and
 * worst-case keys; the RFC 8439 §2.8.2 ChaCha20-Poly1305 vector; the
 * draft-irtf-cfrg-xchacha A.3 vector; agreement with the OpenSSL backend
 * (seal by one, open by the other) for every plaintext length 0..1100 and
 * larger ones up to 1 MiB, AAD 0..70 bytes, in place and misaligned;
 * tampering; runs with a bad block; the -ENOTSUP path.
 */
#include "crypto/aead.h"
#include "crypto/aead_impl.h" /* white box: the backends' vtables */
#include "crypto/hchacha20.h"
#include "crypto/speed.h"
#include "harness.h"
#include "stackscan.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#define MIB (1u << 20)

static const struct aead_impl *const im = &aead_xchacha_avx512;
static const struct aead_impl *const ref = &aead_xchacha_ossl;

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		abort();
	return p;
}

static void rnd(uint8_t *p, size_t n)
{
	if (n && RAND_bytes(p, (int)n) != 1)
		abort();
}

/* OpenSSL's Poly1305 */
static void poly_ossl(uint8_t tag[16], const uint8_t key[32],
		      const uint8_t *m, size_t n)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "POLY1305", NULL);
	EVP_MAC_CTX *c = mac ? EVP_MAC_CTX_new(mac) : NULL;
	size_t l;

	if (!c || EVP_MAC_init(c, key, 32, NULL) != 1 ||
	    EVP_MAC_update(c, m, n) != 1 ||
	    EVP_MAC_final(c, tag, &l, 16) != 1 || l != 16)
		abort();
	EVP_MAC_CTX_free(c);
	EVP_MAC_free(mac);
}

TEST(rfc8439_poly1305_vectors)
{
	/* §2.5.2, then appendix A.3 #5..#11: carries out of a limb, a
	 * result of exactly 2^130 - 5 and 2^130 - 6, and a 131-bit
	 * intermediate of the 5 * H + L reduction */
	static const struct {
		const char *key, *msg, *tag;
	} v[] = {
		{ "85d6be7857556d337f4452fe42d506a8"
		  "0103808afb0db2fd4abff6af4149f51b",
		  "43727970746f6772617068696320466f"
		  "72756d2052657365617263682047726f7570",
		  "a8061dc1305136c6c22b8baf0c0127a9" },
		{ "02000000000000000000000000000000"
		  "00000000000000000000000000000000",
		  "ffffffffffffffffffffffffffffffff",
		  "03000000000000000000000000000000" },
		{ "02000000000000000000000000000000"
		  "ffffffffffffffffffffffffffffffff",
		  "02000000000000000000000000000000",
		  "03000000000000000000000000000000" },
		{ "01000000000000000000000000000000"
		  "00000000000000000000000000000000",
		  "ffffffffffffffffffffffffffffffff"
		  "f0ffffffffffffffffffffffffffffff"
		  "11000000000000000000000000000000",
		  "05000000000000000000000000000000" },
		{ "01000000000000000000000000000000"
		  "00000000000000000000000000000000",
		  "ffffffffffffffffffffffffffffffff"
		  "fbfefefefefefefefefefefefefefefe"
		  "01010101010101010101010101010101",
		  "00000000000000000000000000000000" },
		{ "02000000000000000000000000000000"
		  "00000000000000000000000000000000",
		  "fdffffffffffffffffffffffffffffff",
		  "faffffffffffffffffffffffffffffff" },
		{ "01000000000000000400000000000000"
		  "00000000000000000000000000000000",
		  "e33594d7505e43b90000000000000000"
		  "3394d7505e4379cd0100000000000000"
		  "00000000000000000000000000000000"
		  "01000000000000000000000000000000",
		  "14000000000000005500000000000000" },
		{ "01000000000000000400000000000000"
		  "00000000000000000000000000000000",
		  "e33594d7505e43b90000000000000000"
		  "3394d7505e4379cd0100000000000000"
		  "00000000000000000000000000000000",
		  "13000000000000000000000000000000" },
	};
	uint8_t key[32], msg[64], want[16], got[16];

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t n;

		ASSERT_INT_EQ(th_unhex(key, 32, v[i].key), 32);
		n = th_unhex(msg, sizeof(msg), v[i].msg);
		ASSERT_INT_EQ(n, strlen(v[i].msg) / 2);
		ASSERT_INT_EQ(th_unhex(want, 16, v[i].tag), 16);
		poly_ossl(got, key, msg, n); /* the vector itself */
		ASSERT_MEM_EQ(got, want, 16);
		memset(got, 0, 16);
		ASSERT_INT_EQ(xchacha_avx512_test_poly1305(got, key, msg, n),
			      0);
		if (memcmp(got, want, 16))
			FAILF("vector %zu differs", i);
	}
}

static void poly_cross(const uint8_t key[32], const uint8_t *m, size_t n)
{
	uint8_t want[16], got[16];

	poly_ossl(want, key, m, n);
	ASSERT_INT_EQ(xchacha_avx512_test_poly1305(got, key, m, n), 0);
	if (memcmp(got, want, 16))
		FAILF("poly1305 differs: n=%zu", n);
}

/* Every length through the scalar and the 8-lane code (16 blocks and
 * more), random keys and messages, and the extremes: the largest clamped
 * r with all-ones messages and s (most carries, largest limbs). */
TEST(poly1305_matches_openssl)
{
	static const size_t big[] = { 4096, 4096 + 24, 4111, 65536 + 7, MIB };
	static const uint8_t rmax[16] = { 0xff, 0xff, 0xff, 0x0f, 0xfc, 0xff,
					  0xff, 0x0f, 0xfc, 0xff, 0xff, 0x0f,
					  0xfc, 0xff, 0xff, 0x0f };
	uint8_t key[32], *m = xmalloc(MIB);

	if (!aead_impl_supported(im, NULL)) {
		free(m);
		SKIP("no AVX-512 IFMA on this CPU");
	}
	for (size_t n = 0; n <= 700 && !th_cur.failed; n++) {
		rnd(key, 32);
		rnd(m, n);
		poly_cross(key, m, n);
		memcpy(key, rmax, 16);
		memset(key + 16, 0xff, 16);
		memset(m, 0xff, n);
		poly_cross(key, m, n);
	}
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		rnd(key, 32);
		rnd(m, big[i]);
		poly_cross(key, m, big[i]);
		memcpy(key, rmax, 16);
		memset(m, 0xff, big[i]);
		poly_cross(key, m, big[i]);
		memset(key + 16, 0, 16);
		memset(m, 0, big[i]); /* h stays 2^128 multiples */
		poly_cross(key, m, big[i]);
	}
	free(m);
}

/* The "sunscreen" plaintext of RFC 8439 and the draft. */
static const char sunscreen[] =
	"Ladies and Gentlemen of the class of '99: If I could offer you "
	"only one tip for the future, sunscreen would be it.";

TEST(rfc8439_aead_vector)
{
	uint8_t key[32], nonce[12], aad[12], want[114 + 16], got[114 + 16];

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
	ASSERT_INT_EQ(th_unhex(nonce, 12, "070000004041424344454647"), 12);
	ASSERT_INT_EQ(th_unhex(aad, 12, "50515253c0c1c2c3c4c5c6c7"), 12);
	ASSERT_INT_EQ(th_unhex(want, sizeof(want),
			       "d31a8d34648e60db7b86afbc53ef7ec2"
			       "a4aded51296e08fea9e2b5a736ee62d6"
			       "3dbea45e8ca9671282fafb69da92728b"
			       "1a71de0a9e060b2905d6a5b67ecd3b36"
			       "92ddbd7f2d778b8c9803aee328091b58"
			       "fab324e4fad675945585808b4831d7bc"
			       "3ff4def08e4b7a9de576d26586cec64b"
			       "6116"
			       "1ae10b594f09e26a7e902ecbd0600691"),
		      sizeof(want));
	ASSERT_INT_EQ(strlen(sunscreen), 114);
	ASSERT_INT_EQ(xchacha_avx512_test_chapoly(
			      got, key, nonce, (const uint8_t *)sunscreen, 114,
			      aad, sizeof(aad)),
		      0);
	ASSERT_MEM_EQ(got, want, sizeof(want));
}

TEST(xchacha_draft_vector)
{
	uint8_t key[32], nonce[24], aad[12], want[114 + 16], got[114 + 16];
	uint8_t back[114];
	void *ctx = NULL;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
	for (int i = 0; i < 24; i++)
		nonce[i] = (uint8_t)(0x40 + i);
	ASSERT_INT_EQ(th_unhex(aad, 12, "50515253c0c1c2c3c4c5c6c7"), 12);
	ASSERT_INT_EQ(th_unhex(want, sizeof(want),
			       "bd6d179d3e83d43b9576579493c0e939"
			       "572a1700252bfaccbed2902c21396cbb"
			       "731c7f1b0b4aa6440bf3a82f4eda7e39"
			       "ae64c6708c54c216cb96b72e1213b452"
			       "2f8c9ba40db5d945b11b69b982c1bb9e"
			       "3f3fac2bc369488f76b2383565d3fff9"
			       "21f9664c97637da9768812f615c68b13"
			       "b52e"
			       "c0875924c1c7987947deafd8780acf49"),
		      sizeof(want));
	ASSERT_INT_EQ(im->ctx_new(&ctx, key), 0);
	ASSERT_INT_EQ(im->seal(ctx, got, nonce, (const uint8_t *)sunscreen,
			       114, aad, sizeof(aad)),
		      0);
	ASSERT_MEM_EQ(got, want, sizeof(want));
	ASSERT_INT_EQ(im->open(ctx, back, nonce, got, sizeof(got), aad,
			       sizeof(aad)),
		      0);
	ASSERT_MEM_EQ(back, sunscreen, 114);
	im->ctx_free(ctx);
}

/* ---- against the OpenSSL backend ----------------------------------------- */

struct pair {
	void *mine, *theirs;
	uint8_t key[32];
};

static bool pair_init(struct pair *p)
{
	rnd(p->key, sizeof(p->key));
	p->mine = p->theirs = NULL;
	return im->ctx_new(&p->mine, p->key) == 0 &&
	       ref->ctx_new(&p->theirs, p->key) == 0;
}

static void pair_free(struct pair *p)
{
	im->ctx_free(p->mine);
	ref->ctx_free(p->theirs);
}

/* n bytes of plaintext, alen of AAD, buffers at offset off: sealed by each
 * the same, opened by the other, and in place. */
static void cross(struct pair *p, size_t n, size_t alen, size_t off)
{
	uint8_t nonce[24], *aad = xmalloc(alen), *pt = xmalloc(n);
	uint8_t *want = xmalloc(n + 16), *buf = xmalloc(n + 16 + off);
	uint8_t *body = buf + off, *back = xmalloc(n + off);

	rnd(nonce, 24);
	rnd(aad, alen);
	rnd(pt, n);
	ASSERT_INT_EQ(ref->seal(p->theirs, want, nonce, pt, n, aad, alen), 0);
	ASSERT_INT_EQ(im->seal(p->mine, body, nonce, pt, n, aad, alen), 0);
	if (memcmp(body, want, n + 16))
		goto differs;
	ASSERT_INT_EQ(ref->open(p->theirs, back + off, nonce, body, n + 16,
				aad, alen),
		      0);
	ASSERT_MEM_EQ(back + off, pt, n);
	memset(back, 0, n + off);
	ASSERT_INT_EQ(im->open(p->mine, back + off, nonce, want, n + 16, aad,
			       alen),
		      0);
	ASSERT_MEM_EQ(back + off, pt, n);
	/* in place both ways */
	memcpy(body, pt, n);
	ASSERT_INT_EQ(im->seal(p->mine, body, nonce, body, n, aad, alen), 0);
	ASSERT_MEM_EQ(body, want, n + 16);
	ASSERT_INT_EQ(im->open(p->mine, body, nonce, body, n + 16, aad, alen),
		      0);
	ASSERT_MEM_EQ(body, pt, n);
	goto out;
differs:
	th_cur.failed = 1;
	printf("# seal differs: n=%zu alen=%zu off=%zu\n", n, alen, off);
out:
	free(aad);
	free(pt);
	free(want);
	free(buf);
	free(back);
}

TEST(matches_openssl_every_length)
{
	static const size_t big[] = { 2047, 2048, 4095, 4096, 4097,
				      16384 + 1000, 65536 + 13, MIB };
	struct pair p;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	ASSERT(pair_init(&p));
	for (size_t n = 0; n <= 1100 && !th_cur.failed; n++) {
		cross(&p, n, n % 71, n % 5);
		cross(&p, n, 24, 0);
	}
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		cross(&p, big[i], 24, 0);
		cross(&p, big[i], (i * 13) % 71, 1 + i % 3);
	}
	pair_free(&p);
}

TEST(matches_openssl_every_aad_length)
{
	static const size_t lens[] = { 0, 1, 16, 31, 256, 4096 };
	struct pair p;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	ASSERT(pair_init(&p));
	for (size_t alen = 0; alen <= 70 && !th_cur.failed; alen++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			cross(&p, lens[i], alen, alen % 4);
	/* AAD long enough for the 8-lane Poly1305 */
	cross(&p, 100, 4096 + 40, 0);
	cross(&p, 5000, 1000, 3);
	pair_free(&p);
}

TEST(tampering_fails)
{
	static const size_t lens[] = { 0, 1, 33, 4096 };
	uint8_t nonce[24], aad[24], *pt, *body, *back;
	struct pair p;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	pt = xmalloc(4096);
	body = xmalloc(4112);
	back = xmalloc(4096);
	ASSERT(pair_init(&p));
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		size_t n = lens[l];

		rnd(nonce, 24);
		rnd(aad, sizeof(aad));
		rnd(pt, n);
		ASSERT_INT_EQ(im->seal(p.mine, body, nonce, pt, n, aad, 24), 0);
		ASSERT_INT_EQ(im->open(p.mine, back, nonce, body, n + 16, aad,
				       24),
			      0);
		/* every bit of the tag, of the AAD and of the nonce */
		for (size_t i = n; i < n + 16; i++)
			for (int b = 0; b < 8; b++) {
				body[i] ^= (uint8_t)(1 << b);
				ASSERT_INT_EQ(im->open(p.mine, back, nonce,
						       body, n + 16, aad, 24),
					      -EBADMSG);
				body[i] ^= (uint8_t)(1 << b);
			}
		for (size_t i = 0; i < 24; i++)
			for (int b = 0; b < 8; b++) {
				aad[i] ^= (uint8_t)(1 << b);
				ASSERT_INT_EQ(im->open(p.mine, back, nonce,
						       body, n + 16, aad, 24),
					      -EBADMSG);
				aad[i] ^= (uint8_t)(1 << b);
				nonce[i] ^= (uint8_t)(1 << b);
				ASSERT_INT_EQ(im->open(p.mine, back, nonce,
						       body, n + 16, aad, 24),
					      -EBADMSG);
				nonce[i] ^= (uint8_t)(1 << b);
			}
		/* ciphertext bits: all of them for short ones, spread
		 * over a 4 KiB one */
		for (size_t i = 0; i < n; i += 1 + n / 512)
			for (int b = 0; b < 8; b += 1 + (n > 64) * 2) {
				body[i] ^= (uint8_t)(1 << b);
				ASSERT_INT_EQ(im->open(p.mine, back, nonce,
						       body, n + 16, aad, 24),
					      -EBADMSG);
				body[i] ^= (uint8_t)(1 << b);
			}
		/* a shorter AAD or a truncated body */
		ASSERT_INT_EQ(im->open(p.mine, back, nonce, body, n + 16, aad,
				       23),
			      -EBADMSG);
		if (n)
			ASSERT_INT_EQ(im->open(p.mine, back, nonce, body,
					       n + 15, aad, 24),
				      -EBADMSG);
		ASSERT_INT_EQ(im->open(p.mine, back, nonce, body, n + 16, aad,
				       24),
			      0);
		ASSERT_MEM_EQ(back, pt, n);
	}
	pair_free(&p);
	free(pt);
	free(body);
	free(back);
}

/* One run of n blocks (the last one last bytes) through seal_run and
 * open_run, against OpenSSL's run entries; then a bad block at each of
 * the indices in bad_at must be reported by index, with the plaintext
 * before it intact. */
static void run_case(struct pair *p, size_t n, size_t last)
{
	enum { BS = 4096, CBS = 24 + BS + 16 };
	size_t len = (n - 1) * CBS + 24 + last + 16, bad = 999;
	size_t bad_at[] = { 0, n / 2, n - 1, n > 17 ? 17 : 0 };
	uint8_t fid[16], *pt = xmalloc(n * BS), *ct = xmalloc(n * CBS);
	uint8_t *ct2 = xmalloc(n * CBS), *back = xmalloc(n * BS);
	struct aead_run r = { 0 };

	rnd(fid, 16);
	rnd(pt, n * BS);
	for (size_t i = 0; i < n; i++)
		rnd(ct + i * CBS, 24);
	memcpy(ct2, ct, n * CBS);
	r.plain_in = pt;
	r.cipher_out = ct;
	r.n = n;
	r.bs = BS;
	r.cbs = CBS;
	r.last_len = last;
	r.first = 0x0102030405060708ULL + n;
	r.file_id = fid;
	ASSERT_INT_EQ(im->seal_run(p->mine, &r), 0);
	r.cipher_out = ct2;
	ASSERT_INT_EQ(ref->seal_run(p->theirs, &r), 0);
	if (memcmp(ct, ct2, len))
		FAILF("seal_run differs: n=%zu last=%zu", n, last);
	r.cipher_in = ct;
	r.plain_out = back;
	ASSERT_INT_EQ(im->open_run(p->mine, &r, &bad), 0);
	ASSERT_MEM_EQ(back, pt, (n - 1) * BS + last);
	memset(back, 0, n * BS);
	ASSERT_INT_EQ(ref->open_run(p->theirs, &r, &bad), 0);
	ASSERT_MEM_EQ(back, pt, (n - 1) * BS + last);
	for (size_t k = 0; k < sizeof(bad_at) / sizeof(bad_at[0]); k++) {
		size_t i = bad_at[k], blen = i + 1 < n ? BS : last;
		/* a ciphertext bit, or the tag's last bit */
		size_t off = i * CBS + 24 + (k % 2 ? blen + 15 : blen / 3);

		ct[off] ^= 0x01;
		bad = 999;
		ASSERT_INT_EQ(im->open_run(p->mine, &r, &bad), -EBADMSG);
		ASSERT_INT_EQ(bad, i);
		ASSERT_MEM_EQ(back, pt, i * BS);
		ct[off] ^= 0x01;
	}
	ASSERT_INT_EQ(im->open_run(p->mine, &r, &bad), 0);
	free(pt);
	free(ct);
	free(ct2);
	free(back);
}

/* seal_run / open_run: short runs go message by message, longer ones
 * derive the keys of up to 16 messages together, so every count up to
 * two groups and a few past, with full and partial last blocks. */
TEST(runs_match_openssl_and_report_bad_block)
{
	static const size_t lasts[] = { 4096, 1, 1000, 16 };
	struct pair p;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	ASSERT(pair_init(&p));
	for (size_t n = 1; n <= 40 && !th_cur.failed; n++)
		run_case(&p, n, lasts[n % 4]);
	pair_free(&p);
}

/* Through aead.h: the block batches, a bad block in the middle. */
TEST(public_api_matches_openssl)
{
	uint8_t key[32], fid[16], nonces[3 * 24], pt[3 * 4096 - 100];
	uint8_t ct[sizeof(pt) + 3 * 40], ct2[sizeof(ct)], back[sizeof(pt)];
	struct aead *a = NULL, *b = NULL;
	size_t bad = 99;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	rnd(key, 32);
	rnd(fid, 16);
	rnd(nonces, sizeof(nonces));
	rnd(pt, sizeof(pt));
	ASSERT_INT_EQ(aead_new(&a, im, key, 32), 0);
	ASSERT_INT_EQ(aead_new(&b, ref, key, 32), 0);
	ASSERT_INT_EQ(aead_seal_blocks(a, ct, pt, sizeof(pt), 4096, 7, fid,
				       nonces),
		      0);
	ASSERT_INT_EQ(aead_seal_blocks(b, ct2, pt, sizeof(pt), 4096, 7, fid,
				       nonces),
		      0);
	ASSERT_MEM_EQ(ct, ct2, sizeof(ct));
	ASSERT_INT_EQ(aead_open_blocks(b, back, ct, sizeof(ct), 4096, 7, fid,
				       &bad),
		      0);
	ASSERT_MEM_EQ(back, pt, sizeof(pt));
	ASSERT_INT_EQ(aead_open_blocks(a, back, ct2, sizeof(ct), 4096, 7, fid,
				       &bad),
		      0);
	ASSERT_MEM_EQ(back, pt, sizeof(pt));
	ct[4136 + 100] ^= 1;
	ASSERT_INT_EQ(aead_open_blocks(a, back, ct, sizeof(ct), 4096, 7, fid,
				       &bad),
		      -EBADMSG);
	ASSERT_INT_EQ(bad, 1);
	/* the blocks around it still open */
	ASSERT_MEM_EQ(back, pt, 4096);
	ASSERT_MEM_EQ(back + 8192, pt + 8192, sizeof(pt) - 8192);
	aead_free(a);
	aead_free(b);
}

/* The vector code spills ChaCha20 states (the subkey can be computed back
 * from them) to the stack; every entry point must leave none of it
 * behind. Without the wiping, GCC 12 left 164 subkey words after one seal.
 * Fixed keys and nonces, so that a chance match would fail every run. */
TEST(no_subkey_left_on_stack_or_in_registers)
{
	enum { N = 18, BS = 4096, CBS = 24 + BS + 16 };
	uint8_t key[32], nonce[24], sub[3][32], fid[16] = { 7 };
	uint8_t aad[24] = { 0 };
	uint8_t *body, *pt, *one;
	struct aead_run r = { 0 };
	void *ctx = NULL;
	size_t bad;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
#ifndef __OPTIMIZE__
	/* -O0 gives every inlined temporary its own slot: frames of up to
	 * 1.3 MiB (clang 14 with AddressSanitizer), far past the wiping and
	 * this scan, which would pass without proving anything */
	SKIP("unoptimised build");
#endif
	body = xmalloc(N * CBS);
	pt = xmalloc(N * BS);
	one = xmalloc(BS + 16);
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < 24; i++)
		nonce[i] = (uint8_t)(i * 13 + 5);
	memset(pt, 0x33, N * BS);
	for (size_t i = 0; i < N; i++)
		for (int k = 0; k < 24; k++)
			body[i * CBS + k] = (uint8_t)(nonce[k] + i);
	hchacha20(sub[0], key, nonce);
	hchacha20(sub[1], key, body); /* message 0 of the run */
	hchacha20(sub[2], key, body + (N - 1) * CBS); /* a single one */
	ASSERT_INT_EQ(im->ctx_new(&ctx, key), 0);
	ASSERT_INT_EQ(im->seal(ctx, one, nonce, pt, BS, aad, 24), 0);
	ASSERT_INT_EQ(vreg_hits(key, 8) + vreg_hits(sub[0], 8), 0);
	ASSERT_INT_EQ(stack_hits(sub[0], 8), 0);
	ASSERT_INT_EQ(im->open(ctx, pt, nonce, one, BS + 16, aad, 24), 0);
	ASSERT_INT_EQ(vreg_hits(key, 8) + vreg_hits(sub[0], 8), 0);
	ASSERT_INT_EQ(stack_hits(sub[0], 8), 0);
	r.plain_in = pt;
	r.cipher_out = body;
	r.n = N;
	r.bs = r.last_len = BS;
	r.cbs = CBS;
	r.file_id = fid;
	ASSERT_INT_EQ(im->seal_run(ctx, &r), 0);
	ASSERT_INT_EQ(vreg_hits(key, 8) + vreg_hits(sub[1], 8) +
		      vreg_hits(sub[2], 8), 0);
	ASSERT_INT_EQ(stack_hits(sub[1], 8) + stack_hits(sub[2], 8), 0);
	r.cipher_in = body;
	r.plain_out = pt;
	ASSERT_INT_EQ(im->open_run(ctx, &r, &bad), 0);
	ASSERT_INT_EQ(vreg_hits(key, 8) + vreg_hits(sub[1], 8) +
		      vreg_hits(sub[2], 8), 0);
	ASSERT_INT_EQ(stack_hits(sub[1], 8) + stack_hits(sub[2], 8), 0);
	im->ctx_free(ctx);
	free(body);
	free(pt);
	free(one);
}

/* A run of 16 blocks whose stride is past what 32-bit gather offsets reach
 * (about 137 MiB: lane 15 read its nonce 2 GiB below the buffer). All 16
 * ciphertext blocks are windows onto one memfd, so the run needs 137 MiB,
 * not 2.2 GiB; the blocks overwrite each other in order, and what stays is
 * block 15, which must match OpenSSL's. The plaintext is never-written
 * anonymous memory (zero pages). */
TEST(huge_stride_run)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	const size_t cbs = ((size_t)INT32_MAX / 15 + pg) / pg * pg;
	const size_t bs = cbs - 40, n = 16;
	const struct aead_impl *oss = &aead_xchacha_ossl;
	uint8_t key[32] = { 9 }, fid[16] = { 3 }, aad[24] = { 0 }, *want;
	uint8_t *ct, *pt;
	struct aead_run r = { 0 };
	void *ctx = NULL, *rctx = NULL;
	int mfd;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	mfd = memfd_create("stride", 0);
	ASSERT(mfd >= 0 && ftruncate(mfd, (off_t)cbs) == 0);
	ct = mmap(NULL, n * cbs, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
						    MAP_NORESERVE, -1, 0);
	pt = mmap(NULL, n * bs, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
						   MAP_NORESERVE, -1, 0);
	ASSERT(ct != MAP_FAILED && pt != MAP_FAILED);
	for (size_t i = 0; i < n; i++)
		ASSERT(mmap(ct + i * cbs, cbs, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_FIXED, mfd, 0) == ct + i * cbs);
	for (int k = 0; k < 24; k++)
		ct[k] = (uint8_t)(k * 5 + 1); /* every block's nonce */
	r.plain_in = pt;
	r.cipher_out = ct;
	r.n = n;
	r.bs = r.last_len = bs;
	r.cbs = cbs;
	r.file_id = fid;
	ASSERT_INT_EQ(im->ctx_new(&ctx, key), 0);
	ASSERT_INT_EQ(im->seal_run(ctx, &r), 0);
	want = xmalloc(bs + 16);
	memcpy(aad + 8, fid, 16);
	aad[7] = 15;
	ASSERT_INT_EQ(oss->ctx_new(&rctx, key), 0);
	ASSERT_INT_EQ(oss->seal(rctx, want, ct, pt, bs, aad, 24), 0);
	ASSERT_MEM_EQ(ct + 24, want, bs + 16);
	oss->ctx_free(rctx);
	im->ctx_free(ctx);
	free(want);
	munmap(ct, n * cbs);
	munmap(pt, n * bs);
	close(mfd);
}

/* Each entry point refuses a message longer than ChaCha20's 32-bit block
 * counter covers, without touching it (PROT_NONE). */
TEST(too_long_refused)
{
	size_t len = AEAD_CHACHA_MAX + 1;
	uint8_t key[32] = { 1 }, nonce[24] = { 1 }, aad[24] = { 0 };
	struct aead_run r = { 0 };
	uint8_t *big;
	void *ctx = NULL;
	size_t bad = 7;

	if (!aead_impl_supported(im, NULL))
		SKIP("no AVX-512 IFMA on this CPU");
	big = mmap(NULL, len + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
							MAP_NORESERVE, -1, 0);
	ASSERT(big != MAP_FAILED);
	ASSERT_INT_EQ(im->ctx_new(&ctx, key), 0);
	ASSERT_INT_EQ(im->seal(ctx, big, nonce, big, len, aad, 24), -EIO);
	ASSERT_INT_EQ(im->open(ctx, big, nonce, big, len + 16, aad, 24),
		      -EBADMSG);
	r.plain_in = big;
	r.cipher_out = big;
	r.n = 1;
	r.bs = r.last_len = len;
	r.cbs = len + 40;
	r.file_id = key;
	ASSERT_INT_EQ(im->seal_run(ctx, &r), -EIO);
	r.cipher_in = big;
	r.plain_out = big;
	ASSERT_INT_EQ(im->open_run(ctx, &r, &bad), -EBADMSG);
	ASSERT_INT_EQ(bad, 0);
	im->ctx_free(ctx);
	munmap(big, len + 4096);
}

/* On a CPU without AVX-512 (simulated with VEILFS_NO_AVX512_CHACHA, in a
 * child so that this process's auto-mode choice stays untouched): aead_new
 * refuses, the registry leaves it out, auto mode picks another
 * implementation, -speed prints n/a and succeeds. */
TEST(unsupported_cpu_is_skipped)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		char out[8192] = "";
		const char *needs = NULL;
		struct aead *a = NULL;
		void *ctx = NULL;
		uint8_t key[32] = { 1 }, tag[16];
		FILE *f = tmpfile();
		size_t n;
		int fail = 0;

		setenv("VEILFS_NO_AVX512_CHACHA", "1", 1);
		fail |= aead_impl_supported(im, &needs) || !needs ||
			strcmp(needs, "AVX-512 IFMA") != 0;
		fail |= aead_new(&a, im, key, 32) != -ENOTSUP || a;
		fail |= im->ctx_new(&ctx, key) != -ENOTSUP || ctx;
		fail |= xchacha_avx512_test_poly1305(tag, key, key, 1) !=
			-ENOTSUP;
		for (size_t k = 0; k < aead_impl_count(); k++)
			fail |= aead_impl_at(k) == im;
		fail |= aead_impl_auto(AEAD_XCHACHA20_POLY1305, 30, NULL, 0) ==
				im ||
			!aead_impl_auto(AEAD_XCHACHA20_POLY1305, 30, NULL, 0);
		fail |= !f || speed_run(f) != 0;
		if (f) {
			rewind(f);
			n = fread(out, 1, sizeof(out) - 1, f);
			out[n] = 0;
		}
		fail |= !strstr(out, "XChaCha20-Poly1305-AVX512") ||
			!strstr(out, "n/a (needs AVX-512 IFMA)") ||
			strstr(out, "XChaCha20-Poly1305-AVX512 parallel");
		if (fail)
			printf("# child output:\n%s", out);
		fflush(stdout);
		_exit(fail ? 1 : 0);
	}
	ASSERT(waitpid(pid, &status, 0) == pid);
	ASSERT(WIFEXITED(status));
	ASSERT_INT_EQ(WEXITSTATUS(status), 0);
}

RUN_TESTS(T(rfc8439_poly1305_vectors), T(poly1305_matches_openssl),
	  T(rfc8439_aead_vector), T(xchacha_draft_vector),
	  T(matches_openssl_every_length), T(matches_openssl_every_aad_length),
	  T(tampering_fails), T(runs_match_openssl_and_report_bad_block),
	  T(public_api_matches_openssl), T(no_subkey_left_on_stack_or_in_registers),
	  T(huge_stride_run), T(too_long_refused),
	  T(unsupported_cpu_is_skipped))
