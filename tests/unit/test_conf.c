/* SPDX-License-Identifier: MIT */
/*
 * gocryptfs.conf parsing, validation and saving: the configs of the
 * gocryptfs 2.3 vectors round-trip byte for byte, Go's tolerances (key case,
 * unknown keys, null, duplicates, CR/LF in base64) hold, and every rule of
 * spec §1.5 rejects with a message naming the field. Fixtures are derived
 * from the real vector config by textual substitution.
 */
#include "config/conf.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const vec_names[] = {
	"gcm", "aessiv", "xchacha", "plaintextnames", "deterministic-names",
	"longnamemax100",
};

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	*len = (size_t)n;
	fclose(f);
	return buf;
}

static char *vec_conf(const char *name, size_t *len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s/cipher/gocryptfs.conf",
		 th_vectors(), name);
	return slurp(path, len);
}

/* Replace the first occurrence of from by to in s; malloc'ed result, or
 * NULL if from does not occur. */
static char *subst(const char *s, const char *from, const char *to)
{
	const char *p = strstr(s, from);
	size_t a, b, c;
	char *out;

	if (!p)
		return NULL;
	a = (size_t)(p - s);
	b = strlen(to);
	c = strlen(p + strlen(from));
	out = malloc(a + b + c + 1);
	memcpy(out, s, a);
	memcpy(out + a, to, b);
	memcpy(out + a + b, p + strlen(from), c + 1);
	return out;
}

static int parse_str(const char *text, struct conf *c, char *err)
{
	conf_init(c);
	return conf_parse(c, text, strlen(text), err);
}

TEST(vectors_roundtrip_byte_identical)
{
	for (size_t i = 0; i < sizeof(vec_names) / sizeof(vec_names[0]); i++) {
		char err[CONF_ERR_LEN];
		struct conf c;
		size_t len;
		char *txt = vec_conf(vec_names[i], &len), *out;
		int rc;

		if (!txt)
			SKIP("vectors not extracted (VEILFS_VECTORS)");
		conf_init(&c);
		rc = conf_parse(&c, txt, len, err);
		if (rc)
			printf("# %s: %s\n", vec_names[i], err);
		ASSERT_INT_EQ(rc, 0);
		ASSERT_STR_EQ(c.creator, "gocryptfs 2.3");
		ASSERT_INT_EQ(c.enc_key_len, 64);
		ASSERT_INT_EQ(c.scrypt.salt_len, 32);
		ASSERT_INT_EQ(c.scrypt.n, 1024);
		ASSERT_INT_EQ(conf_logn(&c), 10);
		ASSERT_INT_EQ(conf_validate_unlock(&c, err), 0);
		out = conf_to_json(&c);
		ASSERT(out != NULL);
		ASSERT_STR_EQ(out, txt);
		free(out);
		conf_fini(&c);
		free(txt);
	}
}

TEST(vector_flags_and_cipher)
{
	static const int want_cipher[] = { 0, 1, 2, 0, 0, 0 };
	char err[CONF_ERR_LEN];

	for (size_t i = 0; i < sizeof(vec_names) / sizeof(vec_names[0]); i++) {
		struct conf c;
		size_t len;
		char *txt = vec_conf(vec_names[i], &len);

		if (!txt)
			SKIP("vectors not extracted (VEILFS_VECTORS)");
		conf_init(&c);
		ASSERT_INT_EQ(conf_parse(&c, txt, len, err), 0);
		ASSERT_INT_EQ(conf_cipher(&c), want_cipher[i]);
		ASSERT(conf_has(&c, CONF_FLAG_HKDF));
		if (i == 3)
			ASSERT(conf_has(&c, CONF_FLAG_PLAINTEXTNAMES));
		if (i == 4)
			ASSERT(!conf_has(&c, CONF_FLAG_DIRIV));
		if (i == 5)
			ASSERT_INT_EQ(c.longnamemax, 100);
		conf_fini(&c);
		free(txt);
	}
}

/* Go tolerances (spec §1.2): all of these must still load. */
TEST(go_tolerances)
{
	static const struct {
		const char *from, *to;
	} ok[] = {
		{ "\"FeatureFlags\"", "\"featureflags\"" },
		{ "\"Version\"", "\"VERSION\"" },
		{ "\"ScryptObject\"", "\"scryptobject\"" },
		{ "\"N\"", "\"n\"" },
		{ "\"Creator\"", "\"Extra\": {\"a\": [1, 2]}, \"Creator\"" },
		{ "\"Creator\": \"gocryptfs 2.3\"", "\"Creator\": null" },
		{ "\"Version\": 2", "\"Version\": 7, \"Version\": 2" },
		{ "CBg1cJcmXX", "CBg1\\ncJcmXX" },
		{ "\"Version\": 2", "\"Version\": 2, \"FIDO2\": null" },
		{ "\"Version\": 2", "\"Version\": 2, \"LongNameMax\": null" },
		{ "\"Version\": 2", "\"Version\": 2, \"scryptobject\": null" },
		{ "\"Version\": 2",
		  "\"Version\": 2, \"SCRYPTOBJECT\": {\"r\": 8}" },
		{ "\"Version\": 2", "\"Version\": 2, \"version\": null" },
	};
	char *base;
	size_t len;

	base = vec_conf("gcm", &len);
	if (!base)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char err[CONF_ERR_LEN];
		char *t = subst(base, ok[i].from, ok[i].to);
		struct conf c;
		int rc;

		ASSERT(t != NULL);
		rc = parse_str(t, &c, err);
		if (rc)
			printf("# case %zu: %s\n", i, err);
		ASSERT_INT_EQ(rc, 0);
		ASSERT_INT_EQ(c.version, 2);
		ASSERT_INT_EQ(c.enc_key_len, 64);
		ASSERT_INT_EQ(c.nflags, 6);
		conf_fini(&c);
		free(t);
	}
	free(base);
}

/* Each case: substitution, expected return, a word the message must
 * contain (the field or flag it is about). */
static const struct bad_case {
	const char *from, *to;
	int rc;
	const char *word;
} bad[] = {
	/* parse errors */
	{ "{", "[", -EINVAL, "JSON" },
	{ "\"Version\": 2", "\"Version\": \"2\"", -EINVAL, "Version" },
	{ "\"Version\": 2", "\"Version\": 2.0", -EINVAL, "Version" },
	{ "\"Version\": 2", "\"Version\": -1", -EINVAL, "Version" },
	{ "\"Version\": 2", "\"Version\": 70000", -EINVAL, "Version" },
	{ "\"N\": 1024", "\"N\": \"1024\"", -EINVAL, "ScryptObject.N" },
	{ "\"N\": 1024", "\"N\": true", -EINVAL, "ScryptObject.N" },
	{ "\"R\": 8", "\"R\": 8.5", -EINVAL, "ScryptObject.R" },
	{ "\"Creator\": \"gocryptfs 2.3\"", "\"Creator\": 5", -EINVAL,
	  "Creator" },
	{ "\"EncryptedKey\": \"", "\"EncryptedKey\": \"!", -EINVAL,
	  "EncryptedKey" },
	{ "\"Salt\": \"/DIk", "\"Salt\": \"/DI", -EINVAL,
	  "ScryptObject.Salt" },
	{ "\"Salt\": \"", "\"Salt\": 17, \"x\": \"", -EINVAL,
	  "ScryptObject.Salt" },
	{ "\"FeatureFlags\": [", "\"FeatureFlags\": \"HKDF\", \"y\": [",
	  -EINVAL, "FeatureFlags" },
	{ "\"HKDF\"", "7", -EINVAL, "FeatureFlags" },
	{ "\"ScryptObject\": {", "\"ScryptObject\": [], \"z\": {", -EINVAL,
	  "ScryptObject" },
	{ "\"Version\": 2", "\"Version\": 2, \"LongNameMax\": 300", -EINVAL,
	  "LongNameMax" },
	{ "\"Version\": 2", "\"Version\": 2, \"FIDO2\": 1", -EINVAL,
	  "FIDO2" },
	{ "\"Version\": 2", "\"Version\": 2,", -EINVAL, "JSON" },
	{ "\"Version\": 2", "\"Version\": 2 /* c */", -EINVAL, "JSON" },
	{ "\"Creator\"", "'Creator'", -EINVAL, "JSON" },
	{ "\"Version\": 2", "\"Version\": 2, \"x\": NaN", -EINVAL, "JSON" },
	{ "\"Version\": 2", "\"Version\": 2, \"x\": .5", -EINVAL, "JSON" },
	{ "\"Version\": 2", "\"Version\": 2, \"x\": \"\\q\"", -EINVAL,
	  "JSON" },
	{ "\"Version\": 2", "\"Version\": 2, \"x\": \"\t\"", -EINVAL,
	  "JSON" },
	{ "\"Version\": 2", "\"Version\": 2, \"FIDO2\": {\"HMACSalt\": 1}",
	  -EINVAL, "FIDO2.HMACSalt" },
	{ "\"Raw64\"\n\t]\n}", "\"Raw64\"\n\t]\n} x", -EINVAL, "JSON" },
	/* validation (spec §1.5) */
	{ "\"Version\": 2", "\"Version\": 3", -EPROTO, "Version" },
	{ "\"Version\": 2", "\"Version\": null", -EPROTO, "Version" },
	{ "\"N\": 1024", "\"N\": 512", -EPROTO, "ScryptObject.N" },
	{ "\"R\": 8", "\"R\": 7", -EPROTO, "ScryptObject.R" },
	{ "\"P\": 1", "\"P\": 0", -EPROTO, "ScryptObject.P" },
	{ "\"Salt\": \"/DIkYXrD5xjtjUE4utw5tC34FRUS5XObuihuEtN1DJk=\"",
	  "\"Salt\": \"AAAA\"", -EPROTO, "ScryptObject.Salt" },
	{ "\"KeyLen\": 32", "\"KeyLen\": 31", -EPROTO, "ScryptObject.KeyLen" },
	{ "\"Raw64\"", "\"Raw64\", \"Foo\"", -EPROTO, "\"Foo\"" },
	{ "\"Raw64\"", "\"Raw64\", \"hkdf\"", -EPROTO, "\"hkdf\"" },
	{ "\"Raw64\"", "\"Raw64\", null", -EPROTO, "Unknown feature flag" },
	{ "\"Raw64\"", "\"Raw64\", \"AESSIV\", \"XChaCha20Poly1305\"",
	  -EPROTO, "AESSIV" },
	{ "\"GCMIV128\",", "", -EPROTO, "GCMIV128" },
	{ "\"GCMIV128\",", "\"AESSIV\",", -EPROTO, "GCMIV128" },
	{ "\"Raw64\"", "\"Raw64\", \"XChaCha20Poly1305\"", -EPROTO,
	  "GCMIV128" },
	{ "\"HKDF\",\n\t\t\"GCMIV128\"", "\"XChaCha20Poly1305\"", -EPROTO,
	  "HKDF" },
	{ "\"Raw64\"", "\"Raw64\", \"PlaintextNames\"", -EPROTO,
	  "PlaintextNames" },
	{ "\"Raw64\"", "\"Raw64\", \"LongNameMax\"", -EPROTO, "LongNameMax" },
	{ "\"Version\": 2", "\"Version\": 2, \"LongNameMax\": 100", -EPROTO,
	  "LongNameMax" },
	{ "\"FeatureFlags\": [", "\"FeatureFlags\": null, \"w\": [", -EPROTO,
	  "GCMIV128" },
};

TEST(rejections_name_the_field)
{
	char *base;
	size_t len;

	base = vec_conf("gcm", &len);
	if (!base)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[CONF_ERR_LEN];
		char *t = subst(base, bad[i].from, bad[i].to);
		struct conf c;
		int rc;

		if (!t)
			FAILF("case %zu: fixture does not apply", i);
		rc = parse_str(t, &c, err);
		if (rc != bad[i].rc || !strstr(err, bad[i].word))
			FAILF("case %zu (%s): rc %d, err '%s'", i, bad[i].to,
			      rc, err);
		conf_fini(&c);
		free(t);
	}
	free(base);
}

TEST(truncated_and_garbage)
{
	char err[CONF_ERR_LEN];
	struct conf c;
	size_t len;
	char *base = vec_conf("gcm", &len);

	if (!base)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	/* Every proper prefix fails cleanly; the full text parses. */
	for (size_t n = 0; n < len; n++) {
		int rc;

		conf_init(&c);
		rc = conf_parse(&c, base, n, err);
		conf_fini(&c);
		/* Cutting only the final newline still leaves valid JSON. */
		if (n == len - 1) {
			ASSERT_INT_EQ(rc, 0);
			continue;
		}
		if (rc != -EINVAL)
			FAILF("prefix %zu: rc %d", n, rc);
		ASSERT(err[0] != '\0');
	}
	ASSERT_INT_EQ(parse_str("", &c, err), -EINVAL);
	ASSERT(strstr(err, "empty"));
	conf_fini(&c);
	ASSERT_INT_EQ(parse_str("nojson\n", &c, err), -EINVAL);
	conf_fini(&c);
	ASSERT_INT_EQ(parse_str("42", &c, err), -EINVAL);
	conf_fini(&c);
	ASSERT_INT_EQ(parse_str("\"x\"", &c, err), -EINVAL);
	conf_fini(&c);
	/* null is Go's "nothing set": then Version 0 fails validation. */
	ASSERT_INT_EQ(parse_str("null", &c, err), -EPROTO);
	conf_fini(&c);
	ASSERT_INT_EQ(parse_str("{}", &c, err), -EPROTO);
	conf_fini(&c);
	free(base);
}

/* Go nests up to 10000 levels; json-c's default is 32. */
TEST(deep_nesting)
{
	size_t len, depth[] = { 100, 9000, 20000 };
	char *base = vec_conf("gcm", &len);

	if (!base)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	for (size_t k = 0; k < 3; k++) {
		size_t d = depth[k], n = 0;
		char err[CONF_ERR_LEN];
		char *deep = malloc(2 * d + 32), *t;
		struct conf c;
		int rc;

		n += (size_t)sprintf(deep, "\"x\": ");
		for (size_t i = 0; i < d; i++)
			deep[n++] = '[';
		for (size_t i = 0; i < d; i++)
			deep[n++] = ']';
		strcpy(deep + n, ", \"Creator\"");
		t = subst(base, "\"Creator\"", deep);
		rc = parse_str(t, &c, err);
		if (d < 10000)
			ASSERT_INT_EQ(rc, 0);
		else
			ASSERT_INT_EQ(rc, -EINVAL);
		conf_fini(&c);
		free(t);
		free(deep);
	}
	free(base);
}

TEST(unlock_checks)
{
	static const struct {
		const char *from, *to, *word;
	} cases[] = {
		{ "\"N\": 1024", "\"N\": 1025", "power of two" },
		{ "\"N\": 1024", "\"N\": 3072", "power of two" },
		{ "\"KeyLen\": 32", "\"KeyLen\": 64", "KeyLen" },
		{ "\"Raw64\"", "\"Raw64\", \"FIDO2\"", "FIDO2" },
	};
	size_t len;
	char *base = vec_conf("gcm", &len);

	if (!base)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[CONF_ERR_LEN];
		char *t = subst(base, cases[i].from, cases[i].to);
		struct conf c;

		ASSERT(t != NULL);
		/* gocryptfs -info accepts these; unlocking must not. */
		ASSERT_INT_EQ(parse_str(t, &c, err), 0);
		ASSERT_INT_EQ(conf_validate_unlock(&c, err), -EPROTO);
		ASSERT(strstr(err, cases[i].word));
		conf_fini(&c);
		free(t);
	}
	free(base);
}

TEST(save_atomic_mode_0400)
{
	char dir[] = "/tmp/veilfs-test-conf-XXXXXX", path[256], tmp[300];
	char err[CONF_ERR_LEN];
	struct conf c, d;
	struct stat st;
	size_t len, len2;
	char *base = vec_conf("gcm", &len), *back;
	int fd;

	if (!base)
		SKIP("vectors not extracted (VEILFS_VECTORS)");
	ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/gocryptfs.conf", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	conf_init(&c);
	ASSERT_INT_EQ(conf_parse(&c, base, len, err), 0);
	ASSERT_INT_EQ(conf_save(&c, path, err), 0);
	ASSERT_INT_EQ(stat(path, &st), 0);
	ASSERT_INT_EQ(st.st_mode & 07777, 0400);
	ASSERT(access(tmp, F_OK) != 0);
	back = slurp(path, &len2);
	ASSERT(back != NULL);
	ASSERT_STR_EQ(back, base);
	free(back);
	/* A stale .tmp makes the save fail and leaves the old file alone
	 * (and the stale file too: it is not ours). */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT(fd >= 0);
	close(fd);
	c.scrypt.n = 2048;
	ASSERT_INT_EQ(conf_save(&c, path, err), -EEXIST);
	ASSERT(strstr(err, ".tmp"));
	back = slurp(path, &len2);
	ASSERT_STR_EQ(back, base);
	free(back);
	ASSERT_INT_EQ(access(tmp, F_OK), 0);
	unlink(tmp);
	/* Invalid configs are never written. */
	c.scrypt.n = 1000;
	ASSERT_INT_EQ(conf_save(&c, path, err), -EPROTO);
	ASSERT(strstr(err, "ScryptObject.N"));
	c.scrypt.n = 2048;
	ASSERT_INT_EQ(conf_save(&c, path, err), 0);
	conf_init(&d);
	ASSERT_INT_EQ(conf_load(&d, path, err), 0);
	ASSERT_INT_EQ(d.scrypt.n, 2048);
	conf_fini(&d);
	ASSERT_INT_EQ(conf_load(&d, "/nonexistent/gocryptfs.conf", err),
		      -ENOENT);
	ASSERT(strstr(err, "/nonexistent/gocryptfs.conf"));
	conf_fini(&d);
	conf_fini(&c);
	unlink(path);
	rmdir(dir);
	free(base);
}

TEST(flag_names)
{
	for (int i = 0; i < CONF_FLAG_COUNT; i++)
		ASSERT_INT_EQ(conf_flag_parse(conf_flag_name(
				      (enum conf_flag)i)), i);
	ASSERT_INT_EQ(conf_flag_parse("hkdf"), -1);
	ASSERT_INT_EQ(conf_flag_parse(""), -1);
}

RUN_TESTS(T(vectors_roundtrip_byte_identical), T(vector_flags_and_cipher),
	  T(go_tolerances), T(rejections_name_the_field),
	  T(truncated_and_garbage), T(deep_nesting), T(unlock_checks),
	  T(save_atomic_mode_0400), T(flag_names))
