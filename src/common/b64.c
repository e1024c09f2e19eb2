/* SPDX-License-Identifier: MIT */
/*
 * RFC 4648 base64, standard and URL alphabets, padded and raw, with strict
 * canonical decoding (spec §4.3 step 2).
 */
#include "common/b64.h"

#include <errno.h>
#include <stdbool.h>

static const char std_alpha[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alpha[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static bool padded(enum b64_variant v)
{
	return v != B64_URL_RAW;
}

size_t b64_encoded_len(size_t n, enum b64_variant v)
{
	if (padded(v))
		return (n + 2) / 3 * 4;
	return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

size_t b64_decoded_max(size_t len)
{
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
}

size_t b64_encode(char *out, const uint8_t *in, size_t n, enum b64_variant v)
{
	const char *a = v == B64_STD ? std_alpha : url_alpha;
	size_t i, o = 0;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];
		out[o++] = a[w >> 18];
		out[o++] = a[(w >> 12) & 63];
		out[o++] = a[(w >> 6) & 63];
		out[o++] = a[w & 63];
	}
	if (n - i == 1) {
		uint32_t w = (uint32_t)in[i] << 16;
		out[o++] = a[w >> 18];
		out[o++] = a[(w >> 12) & 63];
		if (padded(v)) {
			out[o++] = '=';
			out[o++] = '=';
		}
	} else if (n - i == 2) {
		uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = a[w >> 18];
		out[o++] = a[(w >> 12) & 63];
		out[o++] = a[(w >> 6) & 63];
		if (padded(v))
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int sextet(char c, enum b64_variant v)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (v == B64_STD)
		return c == '+' ? 62 : c == '/' ? 63 : -1;
	return c == '-' ? 62 : c == '_' ? 63 : -1;
}

int b64_decode(uint8_t *out, size_t cap, size_t *outlen, const char *in,
	       size_t len, enum b64_variant v)
{
	size_t i, o = 0, tail;
	uint32_t w = 0;

	if (padded(v)) {
		if (len % 4)
			return -EINVAL;
		if (len && in[len - 1] == '=')
			len--;
		if (len && in[len - 1] == '=')
			len--;
		/* a third '=' or a lone data char in the last quad is invalid */
		if (len % 4 == 1)
			return -EINVAL;
	} else if (len % 4 == 1) {
		return -EINVAL;
	}
	if (b64_decoded_max(len) > cap)
		return -ENOSPC;
	for (i = 0; i < len; i++) {
		int s = sextet(in[i], v);
		if (s < 0)
			return -EINVAL;
		w = w << 6 | (uint32_t)s;
		if (i % 4 == 3) {
			out[o++] = (uint8_t)(w >> 16);
			out[o++] = (uint8_t)(w >> 8);
			out[o++] = (uint8_t)w;
			w = 0;
		}
	}
	tail = len % 4;
	if (tail == 2) {
		if (w & 0xf) /* non-canonical trailing bits */
			return -EINVAL;
		out[o++] = (uint8_t)(w >> 4);
	} else if (tail == 3) {
		if (w & 0x3)
			return -EINVAL;
		out[o++] = (uint8_t)(w >> 10);
		out[o++] = (uint8_t)(w >> 2);
	}
	*outlen = o;
	return 0;
}
