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

/* Sextet value of every byte in each alphabet, 0xff where none. */
static uint8_t dec_std[256], dec_url[256];

__attribute__((constructor)) static void b64_tables(void)
{
	for (int i = 0; i < 256; i++)
		dec_std[i] = dec_url[i] = 0xff;
	for (int i = 0; i < 64; i++) {
		dec_std[(uint8_t)std_alpha[i]] = (uint8_t)i;
		dec_url[(uint8_t)url_alpha[i]] = (uint8_t)i;
	}
}

int b64_decode(uint8_t *out, size_t cap, size_t *outlen, const char *in,
	       size_t len, enum b64_variant v)
{
	const uint8_t *t;
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
	t = v == B64_STD ? dec_std : dec_url;
	for (i = 0; i + 4 <= len; i += 4) {
		uint32_t a = t[(uint8_t)in[i]], b = t[(uint8_t)in[i + 1]],
			 c = t[(uint8_t)in[i + 2]], d = t[(uint8_t)in[i + 3]];

		if ((a | b | c | d) & 0x80)
			return -EINVAL;
		w = a << 18 | b << 12 | c << 6 | d;
		out[o++] = (uint8_t)(w >> 16);
		out[o++] = (uint8_t)(w >> 8);
		out[o++] = (uint8_t)w;
	}
	w = 0;
	for (; i < len; i++) {
		uint32_t a = t[(uint8_t)in[i]];

		if (a & 0x80)
			return -EINVAL;
		w = w << 6 | a;
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

int b64_set_unused_bits(char *s, size_t len, enum b64_variant v,
			unsigned bits, unsigned *nbits)
{
	const char *a = v == B64_STD ? std_alpha : url_alpha;
	const uint8_t *t = v == B64_STD ? dec_std : dec_url;
	unsigned mask, val;

	*nbits = 0;
	if (padded(v)) {
		if (len && s[len - 1] == '=')
			len--;
		if (len && s[len - 1] == '=')
			len--;
	}
	if (len % 4 < 2)
		return -1;
	val = t[(uint8_t)s[len - 1]];
	if (val & 0x80)
		return -1;
	*nbits = len % 4 == 2 ? 4 : 2;
	mask = (1u << *nbits) - 1;
	s[len - 1] = a[(val & ~mask) | (bits & mask)];
	return (int)(len - 1);
}
