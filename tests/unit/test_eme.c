/* SPDX-License-Identifier: MIT */
/*
 * EME-AES-256: the rfjakob/eme known answers of spec §4.4, round trips over
 * every length, tweak and key sensitivity, argument checks, and concurrent
 * use of one instance from several threads.
 */
#include "crypto/eme.h"
#include "crypto/kdf.h"
#include "harness.h"

#include <errno.h>
#include <pthread.h>

#include <openssl/rand.h>

TEST(known_answers)
{
	static const uint8_t key[32], tweak[16];
	static uint8_t in[2048], out[2048];
	uint8_t want[16];
	struct eme *e = NULL;

	ASSERT_INT_EQ(eme_new(&e, key), 0);
	ASSERT_INT_EQ(eme_encrypt(e, out, in, 16, tweak), 0);
	th_unhex(want, 16, "f1b9ce8ca15a4ba9fb476905434b9fd3");
	ASSERT_MEM_EQ(out, want, 16);
	ASSERT_INT_EQ(eme_decrypt(e, out, out, 16, tweak), 0);
	ASSERT_MEM_EQ(out, in, 16);

	ASSERT_INT_EQ(eme_encrypt(e, out, in, 2048, tweak), 0);
	th_unhex(want, 16, "630500884158a8d41216aaa6351e92ea");
	ASSERT_MEM_EQ(out, want, 16);
	ASSERT_INT_EQ(eme_decrypt(e, out, out, 2048, tweak), 0);
	ASSERT_MEM_EQ(out, in, 2048);
	eme_free(e);
}

/* SHA-256 of outputs of an independent model of spec §4.4 (Python with
 * pyca/cryptography AES-ECB, which also reproduces the rfjakob/eme answers
 * above) for 1, 2, 3, 16, 127 and 128 blocks. */
TEST(independent_model_every_width)
{
	static const struct {
		size_t m;
		const char *sha;
	} t[] = {
		{ 0, "44ea4ab31f9e4c83420f1bfe7782ded2e2421c92ac416a830cf46f3ea4cb5ff1" },
		{ 1, "7b55d258392ee184993e610dfcb6bcf583650c2dd7e78c7a3522ee3b1525d03f" },
		{ 2, "dcb879dad706b5c6b0fda92c239b10829efd5642bceda84454a5fa37af0ebec0" },
		{ 3, "6657e8de3940a204f8e65f80f66a665f10787680d47d788003f91a48908c7e35" },
		{ 16, "7ecb832c378a81669ba7919ee75d5b9a9e84313da30f0300dee25dccf68272d4" },
		{ 127, "5cb695768cc77e44ccdd9751cdc26544727740a1de06a56c36109ae0a7be0e23" },
		{ 128, "ef1d3d40dcabe88a0d6cea3a170948cb6b470b4b894ac5f15e98ce2a51e78060" },
	};
	static const uint8_t zkey[32], ztweak[16];
	static uint8_t in[2048], out[2048];
	uint8_t key[32], tweak[16], h[32], want[32];
	struct eme *e = NULL, *z = NULL;

	for (size_t i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (size_t i = 0; i < 16; i++)
		tweak[i] = (uint8_t)(100 + i);
	ASSERT_INT_EQ(eme_new(&e, key), 0);
	ASSERT_INT_EQ(eme_new(&z, zkey), 0);
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		/* m == 0: all-zero key, tweak and 2048-byte input */
		size_t len = t[k].m ? 16 * t[k].m : 2048;

		for (size_t i = 0; i < len; i++)
			in[i] = t[k].m ? (uint8_t)(i * 7) : 0;
		if (t[k].m)
			ASSERT_INT_EQ(eme_encrypt(e, out, in, len, tweak), 0);
		else
			ASSERT_INT_EQ(eme_encrypt(z, out, in, len, ztweak), 0);
		ASSERT_INT_EQ(kdf_sha256(h, out, len), 0);
		th_unhex(want, 32, t[k].sha);
		ASSERT_MEM_EQ(h, want, 32);
	}
	eme_free(z);
	eme_free(e);
}

TEST(roundtrip_every_length)
{
	uint8_t key[32], tweak[16], in[2048], ct[2048], pt[2048];
	struct eme *e = NULL;

	ASSERT(RAND_bytes(key, sizeof(key)) == 1);
	ASSERT(RAND_bytes(tweak, sizeof(tweak)) == 1);
	ASSERT(RAND_bytes(in, sizeof(in)) == 1);
	ASSERT_INT_EQ(eme_new(&e, key), 0);
	for (size_t len = 16; len <= 2048; len += 16) {
		ASSERT_INT_EQ(eme_encrypt(e, ct, in, len, tweak), 0);
		ASSERT(memcmp(ct, in, len) != 0);
		ASSERT_INT_EQ(eme_decrypt(e, pt, ct, len, tweak), 0);
		ASSERT_MEM_EQ(pt, in, len);
		/* in place gives the same bytes */
		memcpy(pt, in, len);
		ASSERT_INT_EQ(eme_encrypt(e, pt, pt, len, tweak), 0);
		ASSERT_MEM_EQ(pt, ct, len);
	}
	eme_free(e);
}

TEST(wide_block_diffusion)
{
	/* Changing any one input byte changes every output block, and so do
	 * the tweak and the key: EME is a tweakable wide-block cipher. */
	uint8_t key[32] = { 1 }, tweak[16] = { 2 }, in[256] = { 3 };
	uint8_t ref[256], ct[256];
	struct eme *e = NULL, *e2 = NULL;

	ASSERT_INT_EQ(eme_new(&e, key), 0);
	ASSERT_INT_EQ(eme_encrypt(e, ref, in, sizeof(in), tweak), 0);
	for (size_t i = 0; i < sizeof(in); i += 37) {
		in[i] ^= 0x01;
		ASSERT_INT_EQ(eme_encrypt(e, ct, in, sizeof(in), tweak), 0);
		in[i] ^= 0x01;
		for (size_t b = 0; b < sizeof(in) / 16; b++)
			ASSERT(memcmp(ct + 16 * b, ref + 16 * b, 16) != 0);
	}
	tweak[15] ^= 0x80;
	ASSERT_INT_EQ(eme_encrypt(e, ct, in, sizeof(in), tweak), 0);
	for (size_t b = 0; b < sizeof(in) / 16; b++)
		ASSERT(memcmp(ct + 16 * b, ref + 16 * b, 16) != 0);
	tweak[15] ^= 0x80;
	key[31] ^= 1;
	ASSERT_INT_EQ(eme_new(&e2, key), 0);
	ASSERT_INT_EQ(eme_encrypt(e2, ct, in, sizeof(in), tweak), 0);
	ASSERT(memcmp(ct, ref, 16) != 0);
	eme_free(e2);
	eme_free(e);
}

TEST(rejects_bad_lengths)
{
	static const uint8_t key[32], tweak[16];
	static uint8_t buf[2064];
	static const size_t bad[] = { 0, 1, 15, 17, 2047, 2049, 2064 };
	struct eme *e = NULL;

	ASSERT_INT_EQ(eme_new(&e, key), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_INT_EQ(eme_encrypt(e, buf, buf, bad[i], tweak), -EINVAL);
		ASSERT_INT_EQ(eme_decrypt(e, buf, buf, bad[i], tweak), -EINVAL);
	}
	eme_free(e);
	eme_free(NULL);
}

struct thr_arg {
	struct eme *e;
	const uint8_t *in, *want;
	int bad;
};

static void *thr_main(void *p)
{
	struct thr_arg *a = p;
	uint8_t tweak[16] = { 7 }, ct[512], pt[512];

	for (int i = 0; i < 2000; i++) {
		size_t len = 16 * (size_t)(1 + i % 32);

		if (eme_encrypt(a->e, ct, a->in, len, tweak) ||
		    memcmp(ct, a->want + 512 * (len / 16 - 1), len) ||
		    eme_decrypt(a->e, pt, ct, len, tweak) ||
		    memcmp(pt, a->in, len))
			a->bad++;
	}
	return NULL;
}

TEST(threads_share_one_instance)
{
	uint8_t key[32] = { 9 }, tweak[16] = { 7 }, in[512];
	static uint8_t want[32 * 512];
	struct thr_arg args[6];
	pthread_t th[6];
	struct eme *e = NULL;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 31);
	ASSERT_INT_EQ(eme_new(&e, key), 0);
	for (size_t m = 1; m <= 32; m++)
		ASSERT_INT_EQ(eme_encrypt(e, want + 512 * (m - 1), in, 16 * m,
					  tweak), 0);
	for (int i = 0; i < 6; i++) {
		args[i] = (struct thr_arg){ e, in, want, 0 };
		ASSERT_INT_EQ(pthread_create(&th[i], NULL, thr_main, &args[i]),
			      0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		ASSERT_INT_EQ(args[i].bad, 0);
	}
	/* Threads that already exited freed their contexts; free the rest
	 * (the main thread's) with the instance. */
	eme_free(e);
}

RUN_TESTS(T(known_answers), T(independent_model_every_width),
	  T(roundtrip_every_length),
	  T(wide_block_diffusion), T(rejects_bad_lengths),
	  T(threads_share_one_instance))
