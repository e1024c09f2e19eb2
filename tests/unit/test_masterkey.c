/* SPDX-License-Identifier: MIT */
/*
 * Master key wrapping and password sources: every gocryptfs 2.3 vector's
 * key unwraps with its password to masterkey.hex, a wrong password or a
 * tampered blob is -EACCES with the output zeroed, wrap/unwrap round-trips,
 * the §6.1 display matches the real init.log, and the password readers
 * follow spec §1.7 (first line, CR kept, concatenation, extpass splitting,
 * empty and too-long passwords).
 */
#include "common/secmem.h"
#include "config/conf.h"
#include "config/masterkey.h"
#include "config/password.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <libscrypt.h>
#include <openssl/evp.h>
#include <unistd.h>

static const char *const vec_names[] = {
	"gcm", "aessiv", "xchacha", "plaintextnames", "deterministic-names",
	"longnamemax100",
};

static int load_vec(struct conf *c, const char *name, uint8_t want[32])
{
	char path[4096], hex[80] = { 0 }, err[CONF_ERR_LEN];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s/masterkey.hex", th_vectors(), name);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	if (!fgets(hex, sizeof(hex), f))
		hex[0] = '\0';
	fclose(f);
	if (th_unhex(want, 32, hex) != 32)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s/cipher/gocryptfs.conf",
		 th_vectors(), name);
	conf_init(c);
	rc = conf_load(c, path, err);
	if (rc)
		printf("# %s: %s\n", path, err);
	return rc;
}

TEST(unwrap_vectors)
{
	for (size_t i = 0; i < sizeof(vec_names) / sizeof(vec_names[0]); i++) {
		uint8_t want[32], key[MASTERKEY_LEN];
		struct conf c;
		int rc = load_vec(&c, vec_names[i], want);

		if (rc == -ENOENT)
			SKIP("vectors not extracted (VEILFS_VECTORS)");
		ASSERT_INT_EQ(rc, 0);
		ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"test", 4,
					       key), 0);
		ASSERT_MEM_EQ(key, want, 32);
		conf_fini(&c);
	}
}

TEST(wrong_password_and_tamper)
{
	static const uint8_t zero[MASTERKEY_LEN];
	uint8_t want[32], key[MASTERKEY_LEN];
	struct conf c;
	int rc = load_vec(&c, "gcm", want);

	if (rc == -ENOENT)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	ASSERT_INT_EQ(rc, 0);
	memset(key, 0xaa, sizeof(key));
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"tesT", 4, key),
		      -EACCES);
	ASSERT_MEM_EQ(key, zero, sizeof(zero));
	/* Flip one bit in each byte of the blob, one at a time. */
	for (size_t i = 0; i < c.enc_key_len; i++) {
		c.enc_key[i] ^= 0x01;
		ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"test", 4,
					       key), -EACCES);
		c.enc_key[i] ^= 0x01;
	}
	/* Truncated blob: cannot authenticate. */
	c.enc_key_len = 63;
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"test", 4, key),
		      -EACCES);
	c.enc_key_len = 64;
	/* Unusable scrypt parameters are refused before any work. */
	c.scrypt.n = 1025;
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"test", 4, key),
		      -EPROTO);
	c.scrypt.n = 1024;
	c.scrypt.key_len = 64;
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"test", 4, key),
		      -EPROTO);
	c.scrypt.key_len = 32;
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"test", 4, key),
		      0);
	ASSERT_MEM_EQ(key, want, 32);
	conf_fini(&c);
}

/* The flags of a gocryptfs <= 1.2 config: no HKDF. */
static void legacy_conf_init(struct conf *c)
{
	conf_init(c);
	conf_add_flag(c, CONF_FLAG_GCMIV128);
	conf_add_flag(c, CONF_FLAG_DIRIV);
	conf_add_flag(c, CONF_FLAG_EMENAMES);
	c->version = 2;
}

/* A gocryptfs <= 1.2 config (no HKDF, spec §1.6 legacy layout), built here
 * with libscrypt and EVP directly: 12-byte nonce, KEK = scrypt output. */
TEST(unwrap_legacy_no_hkdf)
{
	static const uint8_t zero_aad[8];
	uint8_t want[32], kek[32], key[MASTERKEY_LEN], tag[16];
	EVP_CIPHER_CTX *ctx;
	struct conf c;
	int outl;

	legacy_conf_init(&c);
	c.scrypt.salt_len = 32;
	for (size_t i = 0; i < 32; i++) {
		c.scrypt.salt[i] = (uint8_t)(i * 7 + 1);
		want[i] = (uint8_t)(0xa0 ^ i);
	}
	c.scrypt.n = 1024;
	c.scrypt.r = 8;
	c.scrypt.p = 1;
	c.scrypt.key_len = 32;
	ASSERT_INT_EQ(libscrypt_scrypt((const uint8_t *)"legacy", 6,
				       c.scrypt.salt, 32, 1024, 8, 1, kek, 32),
		      0);
	memset(c.enc_key, 0x42, 12); /* nonce */
	ctx = EVP_CIPHER_CTX_new();
	ASSERT(ctx != NULL);
	ASSERT(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL,
				  NULL) == 1);
	ASSERT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) ==
	       1);
	ASSERT(EVP_EncryptInit_ex(ctx, NULL, NULL, kek, c.enc_key) == 1);
	ASSERT(EVP_EncryptUpdate(ctx, NULL, &outl, zero_aad, 8) == 1);
	ASSERT(EVP_EncryptUpdate(ctx, c.enc_key + 12, &outl, want, 32) == 1);
	ASSERT(EVP_EncryptFinal_ex(ctx, c.enc_key + 44, &outl) == 1);
	ASSERT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1);
	EVP_CIPHER_CTX_free(ctx);
	memcpy(c.enc_key + 44, tag, 16);
	c.enc_key_len = 60;
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"legacy", 6, key),
		      0);
	ASSERT_MEM_EQ(key, want, 32);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"legacY", 6, key),
		      -EACCES);
	/* The HKDF layout of the same blob must not open. */
	conf_add_flag(&c, CONF_FLAG_HKDF);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"legacy", 6, key),
		      -EACCES);
	conf_fini(&c);
}

/* No HKDF flag: the legacy layout is written (as gocryptfs 2.3 -passwd
 * does), checked here with libscrypt and EVP directly. */
TEST(wrap_legacy_no_hkdf)
{
	static const uint8_t zero_aad[8];
	uint8_t key[MASTERKEY_LEN], back[MASTERKEY_LEN], kek[32];
	EVP_CIPHER_CTX *ctx;
	struct conf c;
	int outl;

	legacy_conf_init(&c);
	ASSERT_INT_EQ(masterkey_generate(key), 0);
	ASSERT_INT_EQ(masterkey_wrap(&c, 10, (const uint8_t *)"pw", 2, key),
		      0);
	ASSERT_INT_EQ(c.enc_key_len, 60);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"pw", 2, back), 0);
	ASSERT_MEM_EQ(back, key, 32);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"pW", 2, back),
		      -EACCES);
	ASSERT_INT_EQ(libscrypt_scrypt((const uint8_t *)"pw", 2,
				       c.scrypt.salt, 32, 1024, 8, 1, kek, 32),
		      0);
	memset(back, 0, sizeof(back));
	ctx = EVP_CIPHER_CTX_new();
	ASSERT(ctx != NULL);
	ASSERT(EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL,
				  NULL) == 1);
	ASSERT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) ==
	       1);
	ASSERT(EVP_DecryptInit_ex(ctx, NULL, NULL, kek, c.enc_key) == 1);
	ASSERT(EVP_DecryptUpdate(ctx, NULL, &outl, zero_aad, 8) == 1);
	ASSERT(EVP_DecryptUpdate(ctx, back, &outl, c.enc_key + 12, 32) == 1);
	ASSERT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16,
				   c.enc_key + 44) == 1);
	ASSERT(EVP_DecryptFinal_ex(ctx, back + outl, &outl) == 1);
	EVP_CIPHER_CTX_free(ctx);
	ASSERT_MEM_EQ(back, key, 32);
	conf_fini(&c);
}

TEST(wrap_roundtrip)
{
	uint8_t key[MASTERKEY_LEN], back[MASTERKEY_LEN];
	uint8_t salt1[32], blob1[64];
	struct conf c;

	conf_init(&c);
	ASSERT_INT_EQ(masterkey_generate(key), 0);
	conf_add_flag(&c, CONF_FLAG_HKDF);
	ASSERT_INT_EQ(masterkey_wrap(&c, 9, (const uint8_t *)"pw", 2, key),
		      -EINVAL);
	ASSERT_INT_EQ(masterkey_wrap(&c, 10, (const uint8_t *)"pw", 2, key),
		      0);
	ASSERT_INT_EQ(c.enc_key_len, 64);
	ASSERT_INT_EQ(c.scrypt.salt_len, 32);
	ASSERT_INT_EQ(c.scrypt.n, 1024);
	ASSERT_INT_EQ(c.scrypt.r, 8);
	ASSERT_INT_EQ(c.scrypt.p, 1);
	ASSERT_INT_EQ(c.scrypt.key_len, 32);
	memcpy(salt1, c.scrypt.salt, 32);
	memcpy(blob1, c.enc_key, 64);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"pw", 2, back), 0);
	ASSERT_MEM_EQ(back, key, 32);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"pW", 2, back),
		      -EACCES);
	/* Re-wrapping draws a fresh salt and nonce. */
	ASSERT_INT_EQ(masterkey_wrap(&c, 11, (const uint8_t *)"pw", 2, key),
		      0);
	ASSERT_INT_EQ(c.scrypt.n, 2048);
	ASSERT(memcmp(salt1, c.scrypt.salt, 32) != 0);
	ASSERT(memcmp(blob1, c.enc_key, 16) != 0);
	ASSERT_INT_EQ(masterkey_unwrap(&c, (const uint8_t *)"pw", 2, back), 0);
	ASSERT_MEM_EQ(back, key, 32);
	conf_fini(&c);
}

TEST(parse_and_format)
{
	static const char hex[] = "bbced0fb58def0e78e2a8be6c2920b58"
				  "6e00eeb85f27e7a783e378797abab112";
	static const char disp[] = "    bbced0fb-58def0e7-8e2a8be6-c2920b58-\n"
				   "    6e00eeb8-5f27e7a7-83e37879-7abab112\n";
	uint8_t key[MASTERKEY_LEN], want[32];
	char out[MASTERKEY_DISPLAY_LEN];
	char path[4096], *log = NULL;
	size_t cap = 0;
	FILE *f;

	th_unhex(want, 32, hex);
	ASSERT_INT_EQ(masterkey_parse_hex(key, hex), 0);
	ASSERT_MEM_EQ(key, want, 32);
	ASSERT_INT_EQ(masterkey_parse_hex(key, "bbced0fb-58def0e7-8e2a8be6-"
					  "c2920b58-6e00eeb8-5f27e7a7-"
					  "83e37879-7abab112"), 0);
	ASSERT_MEM_EQ(key, want, 32);
	ASSERT_INT_EQ(masterkey_parse_hex(key, "BBCED0FB58DEF0E78E2A8BE6C292"
					  "0B586E00EEB85F27E7A783E378797A"
					  "BAB112"), 0);
	ASSERT_MEM_EQ(key, want, 32);
	ASSERT_INT_EQ(masterkey_parse_hex(key, "bbced0fb"), -EINVAL);
	ASSERT_INT_EQ(masterkey_parse_hex(key, ""), -EINVAL);
	ASSERT_INT_EQ(masterkey_parse_hex(key, "bbced0fb58def0e78e2a8be6c2920b"
					  "586e00eeb85f27e7a783e378797abab1"
					  "1200"), -EINVAL);
	ASSERT_INT_EQ(masterkey_parse_hex(key, "xbced0fb58def0e78e2a8be6c2920b"
					  "586e00eeb85f27e7a783e378797abab1"
					  "12"), -EINVAL);
	masterkey_format(out, want);
	ASSERT_STR_EQ(out, disp);
	/* The real gocryptfs -init printout contains exactly this block. */
	snprintf(path, sizeof(path), "%s/gcm/init.log", th_vectors());
	f = fopen(path, "r");
	if (!f)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	if (getdelim(&log, &cap, '\0', f) < 0) {
		fclose(f);
		FAILF("cannot read %s", path);
	}
	fclose(f);
	ASSERT(strstr(log, disp) != NULL);
	free(log);
}

/* ---- password sources ---------------------------------------------- */

static char tmpdir[] = "/tmp/veilfs-test-pw-XXXXXX";

static const char *mkfile(const char *name, const void *data, size_t n)
{
	static char path[8][256];
	static int slot;
	char *p = path[slot++ % 8];
	int fd;

	snprintf(p, 256, "%s/%s", tmpdir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, n) != (ssize_t)n)
		abort();
	close(fd);
	return p;
}

static int read_from(struct password *pw, const char *const *files,
		     size_t n, char *err)
{
	struct password_src s = { .passfiles = files, .npassfiles = n };

	return password_read(pw, &s, NULL, false, err);
}

TEST(passfile_rules)
{
	char err[PASSWORD_ERR_LEN];
	struct password pw = { 0 };
	const char *f[2];
	char big[2100];

	if (!mkdtemp(tmpdir))
		FAILF("mkdtemp");
	f[0] = mkfile("a", "te\nrest", 7);
	f[1] = mkfile("b", "st\n", 3);
	ASSERT_INT_EQ(read_from(&pw, f, 2, err), 0);
	ASSERT_INT_EQ(pw.len, 4);
	ASSERT_MEM_EQ(pw.buf, "test", 4);
	f[0] = mkfile("cr", "test\r\n", 6);
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), 0);
	ASSERT_INT_EQ(pw.len, 5);
	ASSERT_MEM_EQ(pw.buf, "test\r", 5);
	f[0] = mkfile("nonl", "abc", 3);
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), 0);
	ASSERT_INT_EQ(pw.len, 3);
	f[0] = mkfile("empty", "\nsecond\n", 8);
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), -ENODATA);
	ASSERT(strstr(err, "empty"));
	ASSERT_INT_EQ(pw.len, 0);
	f[0] = mkfile("zero", "", 0);
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), -ENODATA);
	memset(big, 'x', sizeof(big));
	f[0] = mkfile("max", big, PASSWORD_MAX);
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), 0);
	ASSERT_INT_EQ(pw.len, PASSWORD_MAX);
	f[0] = mkfile("big", big, PASSWORD_MAX + 1);
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), -EINVAL);
	f[0] = "/nonexistent/passfile";
	ASSERT_INT_EQ(read_from(&pw, f, 1, err), -ENOENT);
	ASSERT(strstr(err, "/nonexistent/passfile"));
	password_free(&pw);
	password_free(&pw);
	for (size_t i = 0; i < 8; i++) {
		static const char *const names[] = { "a", "b", "cr", "nonl",
						     "empty", "zero", "max",
						     "big" };
		char p[256];

		snprintf(p, sizeof(p), "%s/%s", tmpdir, names[i]);
		unlink(p);
	}
	rmdir(tmpdir);
}

static int extpass(struct password *pw, const char *const *argv, size_t n,
		   char *err)
{
	struct password_src s = { .extpass = argv, .nextpass = n };

	return password_read(pw, &s, NULL, false, err);
}

TEST(extpass_rules)
{
	char err[PASSWORD_ERR_LEN];
	struct password pw = { 0 };
	const char *one[] = { "echo  hello world" };
	const char *many[] = { "printf", "%s\\n", "a b" };
	const char *fail[] = { "false" };
	const char *empty[] = { "true" };
	const char *missing[] = { "/nonexistent/cmd" };
	const char *lines[] = { "printf", "one\\ntwo\\n" };

	/* one string is split at every space, as gocryptfs does: the two
	 * spaces give echo an empty argument */
	ASSERT_INT_EQ(extpass(&pw, one, 1, err), 0);
	ASSERT_INT_EQ(pw.len, 12);
	ASSERT_MEM_EQ(pw.buf, " hello world", 12);
	ASSERT_INT_EQ(extpass(&pw, many, 3, err), 0);
	ASSERT_INT_EQ(pw.len, 3);
	ASSERT_MEM_EQ(pw.buf, "a b", 3);
	ASSERT_INT_EQ(extpass(&pw, lines, 2, err), 0);
	ASSERT_INT_EQ(pw.len, 3);
	ASSERT_MEM_EQ(pw.buf, "one", 3);
	ASSERT_INT_EQ(extpass(&pw, fail, 1, err), -EIO);
	ASSERT_INT_EQ(extpass(&pw, empty, 1, err), -ENODATA);
	ASSERT_INT_EQ(extpass(&pw, missing, 1, err), -EIO);
	password_free(&pw);
}

TEST(stdin_lines)
{
	char err[PASSWORD_ERR_LEN];
	struct password pw = { 0 };
	int p[2], saved = dup(STDIN_FILENO);

	ASSERT(pipe(p) == 0);
	ASSERT(write(p[1], "old\nnew\n\n", 9) == 9);
	close(p[1]);
	ASSERT(dup2(p[0], STDIN_FILENO) == STDIN_FILENO);
	close(p[0]);
	/* Two passwords on consecutive lines: the first read must not
	 * swallow the second (-passwd reads old and new from stdin). */
	ASSERT_INT_EQ(password_read(&pw, NULL, NULL, false, err), 0);
	ASSERT_INT_EQ(pw.len, 3);
	ASSERT_MEM_EQ(pw.buf, "old", 3);
	ASSERT_INT_EQ(password_read(&pw, NULL, NULL, true, err), 0);
	ASSERT_MEM_EQ(pw.buf, "new", 3);
	ASSERT_INT_EQ(password_read(&pw, NULL, NULL, false, err), -ENODATA);
	ASSERT_INT_EQ(password_read(&pw, NULL, NULL, false, err), -ENODATA);
	password_free(&pw);
	dup2(saved, STDIN_FILENO);
	close(saved);
}

RUN_TESTS(T(unwrap_vectors), T(wrong_password_and_tamper),
	  T(unwrap_legacy_no_hkdf), T(wrap_legacy_no_hkdf),
	  T(wrap_roundtrip), T(parse_and_format), T(passfile_rules),
	  T(extpass_rules), T(stdin_lines))
