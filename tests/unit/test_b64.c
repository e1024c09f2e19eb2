/* SPDX-License-Identifier: MIT */
/* Base64 codecs: RFC 4648 test vectors and strict-decoding rejections. */
#include "common/b64.h"
#include "harness.h"

#include <errno.h>

static const struct {
	const char *in, *std, *raw;
} rfc[] = {
	{ "", "", "" },
	{ "f", "Zg==", "Zg" },
	{ "fo", "Zm8=", "Zm8" },
	{ "foo", "Zm9v", "Zm9v" },
	{ "foob", "Zm9vYg==", "Zm9vYg" },
	{ "fooba", "Zm9vYmE=", "Zm9vYmE" },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
};

TEST(rfc4648_roundtrip)
{
	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		char enc[32];
		uint8_t dec[32];
		size_t n, len = strlen(rfc[i].in);

		ASSERT_INT_EQ(b64_encode(enc, (const uint8_t *)rfc[i].in, len,
					 B64_STD),
			      strlen(rfc[i].std));
		ASSERT_STR_EQ(enc, rfc[i].std);
		b64_encode(enc, (const uint8_t *)rfc[i].in, len, B64_URL_RAW);
		ASSERT_STR_EQ(enc, rfc[i].raw);
		ASSERT_INT_EQ(b64_encoded_len(len, B64_URL_RAW),
			      strlen(rfc[i].raw));
		ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, rfc[i].std,
					 strlen(rfc[i].std), B64_STD), 0);
		ASSERT_INT_EQ(n, len);
		ASSERT_MEM_EQ(dec, rfc[i].in, len);
		ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, rfc[i].raw,
					 strlen(rfc[i].raw), B64_URL_RAW), 0);
		ASSERT_INT_EQ(n, len);
		ASSERT_MEM_EQ(dec, rfc[i].in, len);
	}
}

TEST(alphabets_differ)
{
	const uint8_t in[] = { 0xfb, 0xff };
	char enc[8];
	uint8_t dec[8];
	size_t n;

	b64_encode(enc, in, 2, B64_STD);
	ASSERT_STR_EQ(enc, "+/8=");
	b64_encode(enc, in, 2, B64_URL);
	ASSERT_STR_EQ(enc, "-_8=");
	ASSERT_INT_EQ(b64_decode(dec, 8, &n, "+/8=", 4, B64_URL), -EINVAL);
	ASSERT_INT_EQ(b64_decode(dec, 8, &n, "-_8=", 4, B64_STD), -EINVAL);
}

TEST(strict_rejects)
{
	uint8_t dec[16];
	size_t n;
	static const char *const raw_bad[] = {
		"Zg=",	 /* padding in raw */
		"Zh",	 /* non-canonical trailing bits */
		"Zm9=",	 /* padding in raw */
		"Z",	 /* impossible length */
		"Zm\n9v", /* newline */
		"Zm 9v", /* space */
	};
	for (size_t i = 0; i < sizeof(raw_bad) / sizeof(raw_bad[0]); i++)
		ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, raw_bad[i],
					 strlen(raw_bad[i]), B64_URL_RAW),
			      -EINVAL);
	ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, "Zg", 2, B64_URL),
		      -EINVAL); /* padding missing */
	ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, "Zg=", 3, B64_URL),
		      -EINVAL);
	ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, "Zh==", 4, B64_URL),
		      -EINVAL);
	ASSERT_INT_EQ(b64_decode(dec, sizeof(dec), &n, "Z===", 4, B64_URL),
		      -EINVAL);
	ASSERT_INT_EQ(b64_decode(dec, 2, &n, "Zm9v", 4, B64_URL), -ENOSPC);
}

/* The unused bits of the last character (what gocryptfs 2.3 ignored). */
TEST(unused_bits)
{
	char s[16];
	uint8_t out[16];
	size_t n;
	unsigned nb;

	strcpy(s, "QUJD");	/* "ABC": no unused bits */
	ASSERT_INT_EQ(b64_set_unused_bits(s, 4, B64_URL_RAW, 3, &nb), -1);
	ASSERT_INT_EQ(nb, 0);
	ASSERT_STR_EQ(s, "QUJD");
	strcpy(s, "QQ");	/* "A": 4 unused bits */
	ASSERT_INT_EQ(b64_set_unused_bits(s, 2, B64_URL_RAW, 5, &nb), 1);
	ASSERT_INT_EQ(nb, 4);
	ASSERT_STR_EQ(s, "QV");
	ASSERT_INT_EQ(b64_decode(out, sizeof(out), &n, s, 2, B64_URL_RAW),
		      -EINVAL);
	ASSERT_INT_EQ(b64_set_unused_bits(s, 2, B64_URL_RAW, 0, &nb), 1);
	ASSERT_STR_EQ(s, "QQ");
	ASSERT_INT_EQ(b64_decode(out, sizeof(out), &n, s, 2, B64_URL_RAW), 0);
	ASSERT(n == 1 && out[0] == 'A');
	strcpy(s, "QUI=");	/* "AB": 2 unused bits, padded */
	ASSERT_INT_EQ(b64_set_unused_bits(s, 4, B64_URL, 3, &nb), 2);
	ASSERT_INT_EQ(nb, 2);
	ASSERT_STR_EQ(s, "QUL=");
	ASSERT_INT_EQ(b64_set_unused_bits(s, 4, B64_URL, 0, &nb), 2);
	ASSERT_STR_EQ(s, "QUI=");
	strcpy(s, "Q!");	/* not in the alphabet */
	ASSERT_INT_EQ(b64_set_unused_bits(s, 2, B64_URL_RAW, 0, &nb), -1);
	ASSERT_INT_EQ(nb, 0);
}

RUN_TESTS(T(rfc4648_roundtrip), T(alphabets_differ), T(strict_rejects),
	  T(unused_bits))
