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

RUN_TESTS(T(rfc4648_roundtrip), T(alphabets_differ), T(strict_rejects))
