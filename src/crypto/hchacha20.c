/* SPDX-License-Identifier: MIT */
/*
 * HChaCha20: the ChaCha20 state of constants, key and 16 nonce bytes, ten
 * double rounds, no feed-forward; the output is words 0-3 and 12-15
 * (spec §3.7). The working state is key-derived and wiped.
 */
#include "crypto/hchacha20.h"

#include "common/secmem.h"

#define ROTL(v, n) ((uint32_t)((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                                  \
	do {                                                            \
		a += b, d ^= a, d = ROTL(d, 16);                        \
		c += d, b ^= c, b = ROTL(b, 12);                        \
		a += b, d ^= a, d = ROTL(d, 8);                         \
		c += d, b ^= c, b = ROTL(b, 7);                         \
	} while (0)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

void hchacha20(uint8_t out[static 32], const uint8_t key[static 32],
	       const uint8_t nonce[static 16])
{
	uint32_t x[16] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
	int i;

	for (i = 0; i < 8; i++)
		x[4 + i] = le32(key + 4 * i);
	for (i = 0; i < 4; i++)
		x[12 + i] = le32(nonce + 4 * i);
	for (i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (i = 0; i < 4; i++) {
		put_le32(out + 4 * i, x[i]);
		put_le32(out + 16 + 4 * i, x[12 + i]);
	}
	secure_zero(x, sizeof(x));
}
