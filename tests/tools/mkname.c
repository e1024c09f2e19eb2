// SPDX-License-Identifier: MIT
/*
 * mkname: encrypt an arbitrary byte string as a gocryptfs file name, for
 * tamper tests that need names the filesystem itself would never write
 * ("." / ".." / names with '/' or NUL / bad padding). It is a second,
 * independent implementation of spec §2.1 and §4.3-4.4 on OpenSSL only
 * (HKDF-SHA256 "EME filename encryption", EME-AES-256 with the directory IV
 * as tweak, PKCS#7 pad16, unpadded or padded base64url), so a test does not
 * trust the code it tests to build its inputs.
 *
 * usage: mkname [-n] [-B] MASTERKEY_HEX DIRIV NAME_HEX
 *   DIRIV is 32 hex digits or the path of a gocryptfs.diriv file.
 *   -n  do not pad (NAME_HEX must be a multiple of 16 bytes)
 *   -B  padded base64url (filesystems without Raw64)
 * Prints the encrypted name on stdout. Exit 0, or 2 on errors.
 */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXN 2048

static void die(const char *msg)
{
	fprintf(stderr, "mkname: %s\n", msg);
	exit(2);
}

static size_t unhex(uint8_t *out, size_t cap, const char *s)
{
	size_t n = strlen(s), i;

	if (n % 2 || n / 2 > cap)
		die("bad hex length");
	for (i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			die("bad hex digit");
		out[i] = (uint8_t)v;
	}
	return n / 2;
}

static void hkdf(uint8_t out[32], const uint8_t key[32], const char *info)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM p[4];

	if (!ctx)
		die("HKDF unavailable");
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						(char *)"SHA256", 0);
	p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						 (void *)key, 32);
	p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
						 (void *)info, strlen(info));
	p[3] = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(ctx, out, 32, p) != 1)
		die("HKDF failed");
	EVP_KDF_CTX_free(ctx);
	EVP_KDF_free(kdf);
}

static void aes(EVP_CIPHER_CTX *ctx, uint8_t out[16], const uint8_t in[16])
{
	int l;

	if (EVP_CipherUpdate(ctx, out, &l, in, 16) != 1 || l != 16)
		die("AES failed");
}

/* GF(2^128) doubling, little-endian block (spec §4.4). */
static void dbl(uint8_t b[16])
{
	uint8_t carry = b[15] >> 7;

	for (int j = 15; j > 0; j--)
		b[j] = (uint8_t)(b[j] << 1 | b[j - 1] >> 7);
	b[0] = (uint8_t)(b[0] << 1) ^ (carry ? 0x87 : 0);
}

static void xor16(uint8_t *d, const uint8_t *a, const uint8_t *b)
{
	for (int i = 0; i < 16; i++)
		d[i] = a[i] ^ b[i];
}

/* EME encryption of m 16-byte blocks (spec §4.4). */
static void eme_encrypt(uint8_t *c, const uint8_t *p, size_t len,
			const uint8_t key[32], const uint8_t t[16])
{
	static uint8_t lt[MAXN / 16][16], ppp[MAXN / 16][16];
	size_t m = len / 16, j;
	uint8_t l[16] = {0}, mp[16], mc[16], mm[16], tmp[16];
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

	if (!ctx || EVP_EncryptInit_ex(ctx, EVP_aes_256_ecb(), NULL, key,
				       NULL) != 1)
		die("AES init failed");
	EVP_CIPHER_CTX_set_padding(ctx, 0);
	aes(ctx, l, l);
	for (j = 0; j < m; j++) {
		dbl(l);
		memcpy(lt[j], l, 16);
	}
	memcpy(mp, t, 16);
	for (j = 0; j < m; j++) {
		xor16(tmp, p + 16 * j, lt[j]);
		aes(ctx, ppp[j], tmp);
		xor16(mp, mp, ppp[j]);
	}
	aes(ctx, mc, mp);
	xor16(mm, mp, mc);
	for (j = 1; j < m; j++) {
		dbl(mm);
		xor16(c + 16 * j, ppp[j], mm); /* CCC_j */
	}
	xor16(c, mc, t);
	for (j = 1; j < m; j++)
		xor16(c, c, c + 16 * j); /* CCC_1 */
	for (j = 0; j < m; j++) {
		aes(ctx, tmp, c + 16 * j);
		xor16(c + 16 * j, tmp, lt[j]);
	}
	EVP_CIPHER_CTX_free(ctx);
}

static void b64url(const uint8_t *in, size_t len, bool pad)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
				"wxyz0123456789-_";
	size_t i;

	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = in[i] << 16 | in[i + 1] << 8 | in[i + 2];

		printf("%c%c%c%c", a[v >> 18], a[v >> 12 & 63], a[v >> 6 & 63],
		       a[v & 63]);
	}
	if (len - i == 1) {
		uint32_t v = in[i] << 16;

		printf("%c%c%s", a[v >> 18], a[v >> 12 & 63], pad ? "==" : "");
	} else if (len - i == 2) {
		uint32_t v = in[i] << 16 | in[i + 1] << 8;

		printf("%c%c%c%s", a[v >> 18], a[v >> 12 & 63], a[v >> 6 & 63],
		       pad ? "=" : "");
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	static uint8_t name[MAXN], out[MAXN];
	uint8_t mk[32], ek[32], iv[16];
	bool nopad = false, padded = false;
	size_t n;
	int c;

	while ((c = getopt(argc, argv, "nB")) != -1) {
		if (c == 'n')
			nopad = true;
		else if (c == 'B')
			padded = true;
		else
			die("usage: mkname [-n] [-B] MASTERKEY_HEX DIRIV NAME_HEX");
	}
	if (argc - optind != 3)
		die("usage: mkname [-n] [-B] MASTERKEY_HEX DIRIV NAME_HEX");
	if (unhex(mk, sizeof(mk), argv[optind]) != 32)
		die("master key must be 32 bytes");
	if (strlen(argv[optind + 1]) == 32) {
		unhex(iv, sizeof(iv), argv[optind + 1]);
	} else {
		FILE *f = fopen(argv[optind + 1], "rb");

		if (!f || fread(iv, 1, 16, f) != 16)
			die("cannot read diriv");
		fclose(f);
	}
	n = unhex(name, MAXN - 16, argv[optind + 2]);
	if (!nopad) {
		size_t k = 16 - n % 16;

		memset(name + n, (int)k, k);
		n += k;
	}
	if (n == 0 || n % 16)
		die("length must be a positive multiple of 16");
	hkdf(ek, mk, "EME filename encryption");
	eme_encrypt(out, name, n, ek, iv);
	b64url(out, n, padded);
	return 0;
}
