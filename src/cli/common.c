// SPDX-License-Identifier: MIT
/*
 * The steps the actions share (see common.h). Only src/cli prints; the
 * modules below return negative errnos and one-line reasons.
 */
#include "cli/common.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "common/log.h"
#include "common/secmem.h"
#include "config/masterkey.h"
#include "config/password.h"
#include "crypto/content.h"
#include "crypto/kdf.h"
#include "exitcodes.h"

static bool g_quiet;

static const char usage_line[] =
	"usage: " PROG " [OPTIONS] CIPHERDIR MOUNTPOINT\n"
	"       " PROG " -reverse [OPTIONS] PLAINDIR MOUNTPOINT\n"
	"       " PROG " -init|-passwd|-info|-fsck [OPTIONS] CIPHERDIR\n"
	"       " PROG " -speed | -version | -h\n";

void cli_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_say(const char *fmt, ...)
{
	va_list ap;

	if (g_quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

void cli_set_quiet(bool quiet)
{
	g_quiet = quiet;
}

bool cli_quiet(void)
{
	return g_quiet;
}

void cli_usage(FILE *f)
{
	fputs(usage_line, f);
}

char *cli_conf_path(const struct args *a, const char *dir)
{
	char *p = NULL;

	if (a->config) {
		/* -dumpmasterkey prints nothing but the key on stdout */
		if (!a->dumpmasterkey)
			cli_say("Using config file at custom location %s",
				a->config);
		return strdup(a->config);
	}
	if (asprintf(&p, "%s/%s", dir,
		     a->reverse ? CONF_REVERSE_FILENAME : CONF_FILENAME) < 0)
		return NULL;
	return p;
}

int cli_fido2_conf(void)
{
	/* -fido2 itself is refused earlier (main.c, EXIT_FIDO2) */
	cli_err("Masterkey encrypted using FIDO2 token; need to use the "
		"-fido2 option, which " PROG " does not support");
	return EXIT_USAGE;
}

long cli_scrypt_logn(const struct args *a)
{
	return a->scryptn <= 0 ? MASTERKEY_DEFAULT_LOGN : a->scryptn;
}

int cli_check_cipherdir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		cli_err("Invalid cipherdir: stat '%s': %s", dir,
			strerror(errno));
		return EXIT_CIPHERDIR;
	}
	if (!S_ISDIR(st.st_mode)) {
		cli_err("Invalid cipherdir: '%s' is not a directory", dir);
		return EXIT_CIPHERDIR;
	}
	return 0;
}

int cli_dir_nonempty(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			rc = 1;
			break;
		}
	}
	closedir(d);
	return rc;
}

int cli_want_args(const struct args *a, size_t n, const char *action,
		  const char *what)
{
	if (a->npos == n)
		return 0;
	cli_err("%s needs exactly %s argument%s: %s", action,
		n == 1 ? "one" : "two", n == 1 ? "" : "s", what);
	return EXIT_USAGE;
}

struct password_src cli_pw_src(const struct args *a)
{
	struct password_src s = {
		.passfiles = a->passfiles,
		.npassfiles = a->npassfiles,
		.extpass = a->extpass,
		.nextpass = a->nextpass,
	};
	return s;
}

int cli_read_password(struct password *pw, const struct args *a,
		      const char *prompt, bool twice)
{
	struct password_src src = { 0 };
	char err[PASSWORD_ERR_LEN];
	int rc;

	if (a)
		src = cli_pw_src(a);
	rc = password_read(pw, &src, prompt, twice, err);
	if (!rc)
		return 0;
	cli_err("%s", err);
	/* An empty password too: gocryptfs 2.3 exits 9 for it from every
	 * source (the terminal included); its code 22 goes unused. */
	return EXIT_READPASSWORD;
}

int cli_get_masterkey(const struct args *a, uint8_t *key)
{
	char *line = NULL;
	int rc;

	if (a->zerokey) {
		secure_zero(key, MASTERKEY_LEN);
		return 0;
	}
	if (strcmp(a->masterkey, "stdin") == 0) {
		struct password pw = { 0 };
		char err[PASSWORD_ERR_LEN];
		struct password_src none = { 0 };

		rc = password_read(&pw, &none, "Master key: ", false, err);
		if (rc) {
			password_free(&pw);
			cli_err("reading the master key from stdin failed: %s",
				err);
			/* nothing read: gocryptfs's code for it */
			return EXIT_READPASSWORD;
		}
		line = secmem_alloc(pw.len + 1);
		if (!line) {
			password_free(&pw);
			return EXIT_OTHER;
		}
		memcpy(line, pw.buf, pw.len);
		rc = masterkey_parse_hex(key, line);
		secmem_free(line, pw.len + 1);
		password_free(&pw);
	} else {
		rc = masterkey_parse_hex(key, a->masterkey);
		/* Take the key out of our argv so that ps shows it no longer
		 * (argv strings are writable; -o copies are ours too). */
		secure_zero((char *)(uintptr_t)a->masterkey,
			    strlen(a->masterkey));
	}
	if (rc) {
		cli_err("invalid -masterkey: want 64 hex digits (dashes are "
			"ignored)");
		return EXIT_MASTERKEY;
	}
	if (!g_quiet)
		fputs("Using explicit master key.\n"
		      "THE MASTER KEY IS VISIBLE VIA \"ps ax\" AND MAY BE "
		      "STORED IN YOUR SHELL HISTORY!\n"
		      "ONLY USE THIS MODE FOR EMERGENCIES\n",
		      stderr);
	return 0;
}

int cli_load_conf(struct conf *c, const char *path, bool info)
{
	char err[CONF_ERR_LEN];
	int rc;

	conf_init(c);
	rc = conf_load(c, path, err);
	if (!rc)
		return 0;
	if (info) {
		cli_err("Loading config file failed: %s", err);
		return EXIT_LOADCONF;
	}
	cli_err("Cannot open config file: %s", err);
	if (rc == -EPROTO)
		return EXIT_DEPRECATED_FS;
	return EXIT_OTHER;
}

int cli_conf_of_dir(const struct args *a, const char *action, bool info,
		    struct conf *c, char **path)
{
	int ex;

	conf_init(c);
	*path = NULL;
	ex = cli_want_args(a, 1, action, "CIPHERDIR");
	if (!ex)
		ex = cli_check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	*path = cli_conf_path(a, a->pos[0]);
	if (!*path)
		return EXIT_OTHER;
	return cli_load_conf(c, *path, info);
}

int cli_unlock(const struct args *a, const struct conf *c, uint8_t *key,
	       const char *prompt)
{
	struct password pw = { 0 };
	char cerr[CONF_ERR_LEN];
	int rc, ex = 0;

	if (conf_has(c, CONF_FLAG_FIDO2))
		return cli_fido2_conf();
	if (conf_validate_unlock(c, cerr)) {
		cli_err("Cannot open config file: %s", cerr);
		return EXIT_DEPRECATED_FS;
	}
	ex = cli_read_password(&pw, a, prompt, false);
	if (ex)
		goto out;
	log_info("Decrypting master key");
	rc = masterkey_unwrap(c, pw.buf, pw.len, key);
	if (rc == -EACCES) {
		cli_err("Password incorrect.");
		ex = EXIT_PASSWORD_INCORRECT;
	} else if (rc) {
		cli_err("unlocking the master key failed: %s", strerror(-rc));
		ex = EXIT_OTHER;
	}
out:
	password_free(&pw);
	return ex;
}

int cli_wrap_and_save(struct conf *c, unsigned logn,
		      const struct password *pw, const uint8_t *key,
		      const char *path, int wrap_ex)
{
	char cerr[CONF_ERR_LEN];
	int rc;

	rc = masterkey_wrap(c, logn, pw->buf, pw->len, key);
	if (rc) {
		cli_err("wrapping the master key failed: %s", strerror(-rc));
		return wrap_ex;
	}
	if (conf_save(c, path, cerr)) {
		cli_err("Writing config file failed: %s", cerr);
		return EXIT_WRITECONF;
	}
	return 0;
}

/* ---- the crypto chain ------------------------------------------------ */

static void settings_from_conf(struct cli_chain *ch, const struct conf *c)
{
	ch->cipher = (enum aead_cipher)conf_cipher(c);
	ch->hkdf = conf_has(c, CONF_FLAG_HKDF);
	ch->np.plaintext = conf_has(c, CONF_FLAG_PLAINTEXTNAMES);
	ch->np.raw64 = conf_has(c, CONF_FLAG_RAW64);
	ch->np.diriv = conf_has(c, CONF_FLAG_DIRIV);
	ch->np.longnamemax = c->longnamemax ? (unsigned)c->longnamemax
					    : NAMES_MAX_PLAIN;
}

/* -masterkey mounts have no config: the settings come from flags. */
static int settings_from_flags(struct cli_chain *ch, const struct args *a)
{
	if (a->aessiv + a->xchacha > 1) {
		cli_err("choose at most one of -aessiv and -xchacha");
		return EXIT_USAGE;
	}
	if (a->xchacha && !a->hkdf) {
		cli_err("-xchacha requires -hkdf");
		return EXIT_USAGE;
	}
	if (!a->longnames) {
		cli_err("-longnames=false: filesystems without long names "
			"(gocryptfs v0.8 and earlier) are not supported by "
			PROG);
		return EXIT_USAGE;
	}
	if (a->longnamemax && (a->longnamemax < 62 || a->longnamemax > 255)) {
		cli_err("-longnamemax: value %ld is outside allowed range "
			"62 ... 255", a->longnamemax);
		return EXIT_USAGE;
	}
	ch->cipher = a->xchacha ? AEAD_XCHACHA20_POLY1305
		     : a->aessiv || a->reverse ? AEAD_AES_SIV_512
					       : AEAD_AES_GCM_256;
	ch->hkdf = a->hkdf;
	ch->np.plaintext = a->plaintextnames;
	ch->np.raw64 = a->raw64;
	ch->np.diriv = !a->deterministic_names;
	ch->np.longnamemax = a->longnamemax ? (unsigned)a->longnamemax
					    : NAMES_MAX_PLAIN;
	return 0;
}

/* EME and content keys from the master key (spec §2). */
static int derive_keys(const struct cli_chain *ch, const uint8_t *mk,
		       uint8_t *eme, uint8_t *ckey)
{
	static const char *const info[AEAD_CIPHER_COUNT] = {
		[AEAD_AES_GCM_256] = KDF_INFO_GCM,
		[AEAD_AES_SIV_512] = KDF_INFO_SIV,
		[AEAD_XCHACHA20_POLY1305] = KDF_INFO_XCHACHA,
	};
	size_t klen = aead_cipher_key_len(ch->cipher);

	if (!ch->hkdf) {
		/* Legacy (spec §2.3). */
		memcpy(eme, mk, 32);
		if (ch->cipher == AEAD_AES_SIV_512)
			return kdf_sha512(ckey, mk, MASTERKEY_LEN);
		memcpy(ckey, mk, 32);
		return 0;
	}
	if (kdf_hkdf_sha256(eme, 32, mk, MASTERKEY_LEN, KDF_INFO_EME))
		return -EIO;
	return kdf_hkdf_sha256(ckey, klen, mk, MASTERKEY_LEN,
			       info[ch->cipher]);
}

/* -openssl=true: the OpenSSL implementation of the cipher; false: the
 * fastest of the others, measured. */
static int pick_openssl(struct cli_chain *ch, bool want)
{
	double best = -1, mbs;

	for (size_t i = 0; i < aead_impl_count(); i++) {
		const struct aead_impl *im = aead_impl_at(i);

		if (aead_impl_cipher(im) != ch->cipher ||
		    (strstr(aead_impl_name(im), "OpenSSL") != NULL) != want)
			continue;
		if (aead_impl_bench(im, 20, &mbs))
			continue;
		if (mbs > best) {
			best = mbs;
			ch->impl = im;
		}
	}
	if (!ch->impl) {
		cli_err("-openssl=%s: no such implementation of %s",
			want ? "true" : "false", aead_cipher_name(ch->cipher));
		return EXIT_USAGE;
	}
	snprintf(ch->figures, sizeof(ch->figures), "-openssl=%s",
		 want ? "true" : "false");
	return 0;
}

/* -cipher-impl NAME (compared without case), or the measured choice. */
static int pick_impl(struct cli_chain *ch, const struct args *a)
{
	if (a->impl) {
		ch->forced = true;
		for (size_t i = 0; i < aead_impl_count(); i++)
			if (strcasecmp(aead_impl_name(aead_impl_at(i)),
				       a->impl) == 0)
				ch->impl = aead_impl_at(i);
		if (!ch->impl || aead_impl_cipher(ch->impl) != ch->cipher) {
			cli_err("-cipher-impl '%s': no such implementation of "
				"%s (see -speed)", a->impl,
				aead_cipher_name(ch->cipher));
			return EXIT_USAGE;
		}
		return 0;
	}
	if (a->openssl >= 0)
		return pick_openssl(ch, a->openssl);
	ch->impl = aead_impl_auto(ch->cipher, 50, ch->figures,
				  sizeof(ch->figures));
	if (!ch->impl) {
		cli_err("no implementation of %s is available",
			aead_cipher_name(ch->cipher));
		return EXIT_OTHER;
	}
	return 0;
}

int cli_chain_open(struct cli_chain *ch, const struct args *a,
		   const char *dir)
{
	uint8_t *mk = NULL, *eme = NULL, *ckey = NULL;
	int rc, ex;

	memset(ch, 0, sizeof(*ch));
	conf_init(&ch->conf);
	mk = secmem_alloc(MASTERKEY_LEN);
	eme = secmem_alloc(32);
	ckey = secmem_alloc(AEAD_MAX_KEY_LEN);
	if (!mk || !eme || !ckey) {
		ex = EXIT_OTHER;
		goto out;
	}
	if (a->masterkey || a->zerokey) {
		ex = settings_from_flags(ch, a);
		if (!ex)
			ex = cli_get_masterkey(a, mk);
	} else {
		ch->conf_path = cli_conf_path(a, dir);
		if (!ch->conf_path) {
			ex = EXIT_OTHER;
			goto out;
		}
		ex = cli_load_conf(&ch->conf, ch->conf_path, false);
		if (ex)
			goto out;
		ch->have_conf = true;
		ex = cli_unlock(a, &ch->conf, mk, NULL);
		settings_from_conf(ch, &ch->conf);
	}
	if (ex)
		goto out;
	rc = derive_keys(ch, mk, eme, ckey);
	secure_zero(mk, MASTERKEY_LEN);
	if (rc) {
		cli_err("key derivation failed");
		ex = EXIT_OTHER;
		goto out;
	}
	ex = pick_impl(ch, a);
	if (ex)
		goto out;
	rc = aead_new(&ch->aead, ch->impl, ckey,
		      aead_cipher_key_len(ch->cipher));
	if (!rc)
		rc = content_new(&ch->content, ch->aead);
	if (!rc)
		rc = names_new(&ch->names, eme, &ch->np, ch->content);
	if (rc) {
		cli_err("setting up the ciphers failed: %s", strerror(-rc));
		ex = EXIT_OTHER;
	}
out:
	secmem_free(mk, MASTERKEY_LEN);
	secmem_free(eme, 32);
	secmem_free(ckey, AEAD_MAX_KEY_LEN);
	return ex;
}

void cli_chain_close(struct cli_chain *ch)
{
	names_free(ch->names);
	content_free(ch->content);
	aead_free(ch->aead);
	conf_fini(&ch->conf);
	free(ch->conf_path);
	memset(ch, 0, sizeof(*ch));
}
