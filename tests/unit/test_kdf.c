/* SPDX-License-Identifier: MIT */
/*
 * Key derivation: HKDF-SHA256 against the spec §2.1 table and RFC 5869,
 * scrypt against RFC 7914 and the gocryptfs config of every vector variant,
 * the SHA-2 digests, and the derived keys of every variant (vectors.txt).
 */
#include "common/b64.h"
#include "crypto/kdf.h"
#include "harness.h"
#include "vecutil.h"

#include <errno.h>

TEST(hkdf_spec_table)
{
	static const struct {
		uint8_t mk;
		const char *info, *hex;
	} t[] = {
		{ 0x00, KDF_INFO_EME,
		  "9ba3cddd48c6339c6e56ebe85f0281d6e9051be4104176e65cb0f8a6f77ae6b4" },
		{ 0x01, KDF_INFO_EME,
		  "e8a2499f48700b954f31de732efd04abce822f5c948e7fbc0896607be0d36d12" },
		{ 0x01, KDF_INFO_GCM,
		  "9137f2e67a842484137f3c458f357f204c30d7458f94f432fa989be96854a649" },
		{ 0x01, KDF_INFO_SIV,
		  "0bfa5da7d9724d4753269940d36898e2c0f3717c0fee86ada58b5fd6c08cc26c" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint8_t mk[32], out[64], want[32];

		memset(mk, t[i].mk, sizeof(mk));
		th_unhex(want, sizeof(want), t[i].hex);
		/* The SIV key is 64 bytes; the table lists its first half. */
		ASSERT_INT_EQ(kdf_hkdf_sha256(out, i == 3 ? 64 : 32, mk, 32,
					      t[i].info), 0);
		ASSERT_MEM_EQ(out, want, 32);
	}
}

TEST(hkdf_rfc5869_case3)
{
	/* RFC 5869 A.3: SHA-256, empty salt, empty info. */
	uint8_t ikm[22], okm[42], want[42];

	memset(ikm, 0x0b, sizeof(ikm));
	th_unhex(want, sizeof(want),
		 "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
		 "9d201395faa4b61a96c8");
	ASSERT_INT_EQ(kdf_hkdf_sha256(okm, sizeof(okm), ikm, sizeof(ikm), ""),
		      0);
	ASSERT_MEM_EQ(okm, want, sizeof(want));
}

TEST(hkdf_rejects_bad_args)
{
	uint8_t out[32], ikm[32] = { 0 };

	ASSERT_INT_EQ(kdf_hkdf_sha256(out, 0, ikm, 32, KDF_INFO_EME), -EINVAL);
	ASSERT_INT_EQ(kdf_hkdf_sha256(out, 32, ikm, 32, NULL), -EINVAL);
	/* RFC 5869: L <= 255 * HashLen */
	{
		static uint8_t big[255 * 32 + 1];

		ASSERT(kdf_hkdf_sha256(big, sizeof(big), ikm, 32,
				       KDF_INFO_EME) < 0);
	}
}

TEST(scrypt_rfc7914)
{
	static const struct {
		const char *pw, *salt;
		uint64_t N;
		uint32_t r, p;
		const char *hex;
	} t[] = {
		{ "", "", 16, 1, 1,
		  "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442"
		  "fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906" },
		{ "password", "NaCl", 1024, 8, 16,
		  "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
		  "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640" },
		{ "pleaseletmein", "SodiumChloride", 16384, 8, 1,
		  "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
		  "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint8_t out[64], want[64];

		th_unhex(want, sizeof(want), t[i].hex);
		ASSERT_INT_EQ(kdf_scrypt(out, 64, (const uint8_t *)t[i].pw,
					 strlen(t[i].pw),
					 (const uint8_t *)t[i].salt,
					 strlen(t[i].salt), t[i].N, t[i].r,
					 t[i].p), 0);
		ASSERT_MEM_EQ(out, want, 64);
	}
}

TEST(scrypt_rejects_bad_params)
{
	static const uint64_t badn[] = { 0, 1, 3, 1000, 1023, 1025,
					 (1ull << 40) + 1 };
	uint8_t out[32];

	for (size_t i = 0; i < sizeof(badn) / sizeof(badn[0]); i++)
		ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
					 (const uint8_t *)"s", 1, badn[i], 8,
					 1), -EINVAL);
	ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
				 (const uint8_t *)"s", 1, 1024, 0, 1), -EINVAL);
	ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
				 (const uint8_t *)"s", 1, 1024, 8, 0), -EINVAL);
	ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
				 (const uint8_t *)"s", 1, 1024, 1u << 15,
				 1u << 15), -EINVAL);
	/* hours of work: refused at once (issue 12: p = 2^20 hung) */
	ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
				 (const uint8_t *)"s", 1, 1u << 16, 8,
				 1u << 20), -EINVAL);
	ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
				 (const uint8_t *)"s", 1, 1u << 10, 8,
				 (1u << 18) + 1), -EINVAL);
	/* 2 is the smallest valid N */
	ASSERT_INT_EQ(kdf_scrypt(out, 32, (const uint8_t *)"x", 1,
				 (const uint8_t *)"s", 1, 2, 1, 1), 0);
}

TEST(sha2_known_answers)
{
	uint8_t h256[32], h512[64], want[64];

	ASSERT_INT_EQ(kdf_sha256(h256, (const uint8_t *)"abc", 3), 0);
	th_unhex(want, 32,
		 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ASSERT_MEM_EQ(h256, want, 32);
	ASSERT_INT_EQ(kdf_sha512(h512, (const uint8_t *)"abc", 3), 0);
	th_unhex(want, 64,
		 "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
		 "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
	ASSERT_MEM_EQ(h512, want, 64);
	ASSERT_INT_EQ(kdf_sha256(h256, NULL, 0), 0);
	th_unhex(want, 32,
		 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ASSERT_MEM_EQ(h256, want, 32);
}

/* The config's Salt (B64STD) of a variant. */
static size_t conf_salt(const char *variant, uint8_t *salt, size_t cap)
{
	char path[4096];
	uint8_t *conf;
	size_t len, n = 0;
	const char *s, *e;

	if (vec_path(path, sizeof(path), variant, "cipher/gocryptfs.conf"))
		return 0;
	conf = vec_read_file(path, &len);
	if (!conf)
		return 0;
	s = strstr((const char *)conf, "\"Salt\": \"");
	if (s) {
		s += strlen("\"Salt\": \"");
		e = strchr(s, '"');
		if (!e || b64_decode(salt, cap, &n, s, (size_t)(e - s),
				     B64_STD))
			n = 0;
	}
	free(conf);
	return n;
}

TEST(scrypt_and_kek_of_every_variant)
{
	if (!vec_available())
		SKIP("vectors not extracted");
	for (size_t i = 0; i < vec_nvariants; i++) {
		const char *v = vec_variants[i];
		uint8_t salt[64], want[32], kdf[32], kek[32];
		size_t saltlen = conf_salt(v, salt, sizeof(salt));

		ASSERT_INT_EQ(saltlen, 32);
		ASSERT_INT_EQ(vec_hex(v, "scrypt(password", want, 32), 32);
		ASSERT_INT_EQ(kdf_scrypt(kdf, 32, (const uint8_t *)"test", 4,
					 salt, saltlen, 1024, 8, 1), 0);
		ASSERT_MEM_EQ(kdf, want, 32);
		ASSERT_INT_EQ(vec_hex(v, "KEK = HKDF", want, 32), 32);
		ASSERT_INT_EQ(kdf_hkdf_sha256(kek, 32, kdf, 32, KDF_INFO_GCM),
			      0);
		ASSERT_MEM_EQ(kek, want, 32);
	}
}

TEST(derived_keys_of_every_variant)
{
	if (!vec_available())
		SKIP("vectors not extracted");
	for (size_t i = 0; i < vec_nvariants; i++) {
		const char *v = vec_variants[i], *info;
		char path[4096];
		uint8_t mk[32], want[64], out[64], *hex;
		size_t len, klen;

		ASSERT_INT_EQ(vec_path(path, sizeof(path), v, "masterkey.hex"),
			      0);
		hex = vec_read_file(path, &len);
		ASSERT(hex != NULL);
		ASSERT_INT_EQ(th_unhex(mk, 32, (const char *)hex), 32);
		free(hex);
		ASSERT_INT_EQ(vec_hex(v, "master key:", want, 32), 32);
		ASSERT_MEM_EQ(mk, want, 32);

		ASSERT_INT_EQ(vec_hex(v, "EME name key", want, 32), 32);
		ASSERT_INT_EQ(kdf_hkdf_sha256(out, 32, mk, 32, KDF_INFO_EME),
			      0);
		ASSERT_MEM_EQ(out, want, 32);

		klen = vec_hex(v, "content key (", want, 64);
		if (strcmp(v, "aessiv") == 0) {
			info = KDF_INFO_SIV;
			ASSERT_INT_EQ(klen, 64);
		} else if (strcmp(v, "xchacha") == 0) {
			info = KDF_INFO_XCHACHA;
			ASSERT_INT_EQ(klen, 32);
		} else {
			info = KDF_INFO_GCM;
			ASSERT_INT_EQ(klen, 32);
		}
		ASSERT_INT_EQ(kdf_hkdf_sha256(out, klen, mk, 32, info), 0);
		ASSERT_MEM_EQ(out, want, klen);
	}
}

RUN_TESTS(T(hkdf_spec_table), T(hkdf_rfc5869_case3), T(hkdf_rejects_bad_args),
	  T(scrypt_rfc7914), T(scrypt_rejects_bad_params),
	  T(sha2_known_answers), T(scrypt_and_kek_of_every_variant),
	  T(derived_keys_of_every_variant))
