/* SPDX-License-Identifier: MIT */
/*
 * EME-AES-256: the rfjakob/eme known answers of spec §4.4, round trips over
 * every length, tweak and key sensitivity, argument checks, and concurrent
 * use of one instance from several threads.
 */
#include "crypto/eme.h"
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

RUN_TESTS(T(known_answers), T(roundtrip_every_length),
	  T(wide_block_diffusion), T(rejects_bad_lengths),
	  T(threads_share_one_instance))
