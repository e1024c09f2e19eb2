/* SPDX-License-Identifier: MIT */
/*
 * veilfs command line: -init, mount, -passwd, -info, -speed (and the hidden
 * -dumpmasterkey). It builds the crypto chain config -> master key -> HKDF
 * subkeys -> aead -> content/names -> fs, and maps every failure to the
 * gocryptfs exit code (src/exitcodes.h). This is the only file that exits;
 * key material lives in secmem and is wiped on every path, with an atexit
 * handler as the last resort.
 */
#include "cli/args.h"
#include "common/log.h"
#include "common/secmem.h"
#include "config/conf.h"
#include "config/masterkey.h"
#include "config/password.h"
#include "crypto/aead.h"
#include "crypto/content.h"
#include "crypto/kdf.h"
#include "crypto/names.h"
#include "crypto/speed.h"
#include "exitcodes.h"
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "veilfs"
#define CREATOR PROG " " VEILFS_VERSION
#define INIT_BENCH_MS 400 /* -init's cipher benchmark, both ciphers */

static const char usage_line[] =
	"usage: " PROG " [OPTIONS] CIPHERDIR MOUNTPOINT\n"
	"       " PROG " -init|-passwd|-info [OPTIONS] CIPHERDIR\n"
	"       " PROG " -speed | -version | -h\n";

static bool g_quiet;

/* Print one error line to stderr (no prefix: the texts that scripts match,
 * like "Password incorrect.", are gocryptfs's). */
static void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Progress messages for the user on stdout, silenced by -q. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
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

static void wipe_at_exit(void)
{
	secmem_wipe_all();
}

static void usage(FILE *f)
{
	fputs(usage_line, f);
}

static void help(void)
{
	usage(stdout);
	fputs("\nCommon options (see veilfs(1) for all):\n"
	      "  -init              create a new filesystem in CIPHERDIR\n"
	      "  -passwd            change the password\n"
	      "  -info              show the config of CIPHERDIR\n"
	      "  -speed             benchmark the cipher implementations\n"
	      "  -aessiv, -xchacha, -gcm   content cipher for -init\n"
	      "  -plaintextnames, -deterministic-names, -longnamemax N\n"
	      "  -scryptn N         scrypt cost as log2(N), default 16\n"
	      "  -reverse           reverse-mode config (-init only)\n"
	      "  -passfile FILE, -extpass CMD, -masterkey HEX|stdin\n"
	      "  -config FILE       use this config file\n"
	      "  -fg, -nosyslog, -ro, -allow_other, -nonempty, -fsname NAME\n"
	      "  -o OPTS, -q, -d, -noprealloc, -cipher-impl NAME\n",
	      stdout);
}

/* ---- helpers ---------------------------------------------------------- */

/* Path of the config for cipherdir under the -config/-reverse flags;
 * malloc'ed. */
static char *conf_path(const struct args *a, const char *dir)
{
	char *p = NULL;

	if (a->config) {
		/* -dumpmasterkey prints nothing but the key on stdout */
		if (!a->dumpmasterkey)
			say("Using config file at custom location %s",
			    a->config);
		return strdup(a->config);
	}
	if (asprintf(&p, "%s/%s", dir,
		     a->reverse ? CONF_REVERSE_FILENAME : CONF_FILENAME) < 0)
		return NULL;
	return p;
}

static int check_cipherdir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		errmsg("Invalid cipherdir: stat '%s': %s", dir,
		       strerror(errno));
		return EXIT_CIPHERDIR;
	}
	if (!S_ISDIR(st.st_mode)) {
		errmsg("Invalid cipherdir: '%s' is not a directory", dir);
		return EXIT_CIPHERDIR;
	}
	return 0;
}

/* 1 if dir has entries, 0 if empty, negative errno. */
static int dir_nonempty(const char *dir)
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

static struct password_src pw_src(const struct args *a)
{
	struct password_src s = {
		.passfiles = a->passfiles,
		.npassfiles = a->npassfiles,
		.extpass = a->extpass,
		.nextpass = a->nextpass,
	};
	return s;
}

static int password_exit(int rc, const char *err)
{
	errmsg("%s", err);
	return rc == -ENODATA ? EXIT_PASSWORD_EMPTY : EXIT_READPASSWORD;
}

/* -masterkey HEX|stdin (or -zerokey) into key. Returns 0 or an exit code. */
static int get_masterkey(const struct args *a, uint8_t *key)
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
			errmsg("reading the master key from stdin failed: %s",
			       err);
			return EXIT_MASTERKEY;
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
		errmsg("invalid -masterkey: want 64 hex digits (dashes are "
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

/* Load the config at path. Returns 0 or the exit code gocryptfs uses in the
 * caller's context: -info exits 8 for every failure; the other actions exit
 * 27 when the config parses but fails validation and 11 when it cannot be
 * read or parsed. */
static int load_conf(struct conf *c, const char *path, bool info)
{
	char err[CONF_ERR_LEN];
	int rc;

	conf_init(c);
	rc = conf_load(c, path, err);
	if (!rc)
		return 0;
	if (info) {
		errmsg("Loading config file failed: %s", err);
		return EXIT_LOADCONF;
	}
	errmsg("Cannot open config file: %s", err);
	if (rc == -EPROTO)
		return EXIT_DEPRECATED_FS;
	return EXIT_OTHER;
}

/* Read the password and unwrap. Returns 0 or an exit code. */
static int unlock(const struct args *a, const struct conf *c, uint8_t *key,
		  const char *prompt)
{
	struct password_src src = pw_src(a);
	struct password pw = { 0 };
	char err[PASSWORD_ERR_LEN], cerr[CONF_ERR_LEN];
	int rc, ex = 0;

	if (conf_has(c, CONF_FLAG_FIDO2)) {
		errmsg("FIDO2 filesystems are not supported by " PROG);
		return EXIT_FIDO2;
	}
	if (conf_validate_unlock(c, cerr)) {
		errmsg("Cannot open config file: %s", cerr);
		return EXIT_DEPRECATED_FS;
	}
	rc = password_read(&pw, &src, prompt, false, err);
	if (rc) {
		ex = password_exit(rc, err);
		goto out;
	}
	log_info("Decrypting master key");
	rc = masterkey_unwrap(c, pw.buf, pw.len, key);
	if (rc == -EACCES) {
		errmsg("Password incorrect.");
		ex = EXIT_PASSWORD_INCORRECT;
	} else if (rc) {
		errmsg("unlocking the master key failed: %s", strerror(-rc));
		ex = EXIT_OTHER;
	}
out:
	password_free(&pw);
	return ex;
}

/* ---- -info and -dumpmasterkey ------------------------------------------ */

static int do_info(const struct args *a)
{
	struct conf c;
	char *path = NULL;
	int ex;

	if (a->npos != 1) {
		errmsg("-info needs exactly one argument: CIPHERDIR");
		return EXIT_USAGE;
	}
	ex = check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	path = conf_path(a, a->pos[0]);
	if (!path)
		return EXIT_OTHER;
	ex = load_conf(&c, path, true);
	if (ex)
		goto out;
	printf("Creator:           %s\n", c.creator ? c.creator : "");
	printf("FeatureFlags:     ");
	for (size_t i = 0; i < c.nflags; i++)
		printf(" %s", conf_flag_name(c.flags[i]));
	printf("\n");
	printf("EncryptedKey:      %zuB\n", c.enc_key_len);
	printf("ScryptObject:      Salt=%zuB N=%lld R=%lld P=%lld "
	       "KeyLen=%lld\n",
	       c.scrypt.salt_len, (long long)c.scrypt.n,
	       (long long)c.scrypt.r, (long long)c.scrypt.p,
	       (long long)c.scrypt.key_len);
	printf("contentEncryption: %s\n",
	       aead_cipher_name((enum aead_cipher)conf_cipher(&c)));
out:
	conf_fini(&c);
	free(path);
	return ex;
}

/* Hidden debug action (like gocryptfs-xray -dumpmasterkey): print the
 * unwrapped master key as hex. */
static int do_dumpmasterkey(const struct args *a)
{
	uint8_t *key = secmem_alloc(MASTERKEY_LEN);
	struct conf c;
	char *path = NULL;
	int ex;

	conf_init(&c);
	if (!key)
		return EXIT_OTHER;
	if (a->npos != 1) {
		errmsg("-dumpmasterkey needs exactly one argument: CIPHERDIR");
		ex = EXIT_USAGE;
		goto out;
	}
	ex = check_cipherdir(a->pos[0]);
	if (ex)
		goto out;
	path = conf_path(a, a->pos[0]);
	if (!path) {
		ex = EXIT_OTHER;
		goto out;
	}
	ex = load_conf(&c, path, false);
	if (ex)
		goto out;
	ex = unlock(a, &c, key, NULL);
	if (ex)
		goto out;
	for (size_t i = 0; i < MASTERKEY_LEN; i++)
		printf("%02x", key[i]);
	printf("\n");
out:
	conf_fini(&c);
	free(path);
	secmem_free(key, MASTERKEY_LEN);
	return ex;
}

/* ---- -init ------------------------------------------------------------- */

static enum aead_cipher init_pick_cipher(const struct args *a)
{
	double g = 0, x = 0;
	enum aead_cipher c;

	if (a->aessiv || a->reverse)
		return AEAD_AES_SIV_512;
	if (a->xchacha)
		return AEAD_XCHACHA20_POLY1305;
	if (a->gcm)
		return AEAD_AES_GCM_256;
	c = speed_pick_cipher(INIT_BENCH_MS, &g, &x);
	say("Cipher benchmark: AES-GCM-256 %.0f MB/s, XChaCha20-Poly1305 "
	    "%.0f MB/s: using %s",
	    g, x, aead_cipher_name(c));
	return c;
}

/* Flags in the order -init writes them (spec §1.3). */
static void init_flags(struct conf *c, const struct args *a,
		       enum aead_cipher cipher, long lnm)
{
	conf_add_flag(c, CONF_FLAG_HKDF);
	if (cipher == AEAD_XCHACHA20_POLY1305)
		conf_add_flag(c, CONF_FLAG_XCHACHA20POLY1305);
	else
		conf_add_flag(c, CONF_FLAG_GCMIV128);
	if (a->plaintextnames) {
		conf_add_flag(c, CONF_FLAG_PLAINTEXTNAMES);
	} else {
		if (!a->deterministic_names)
			conf_add_flag(c, CONF_FLAG_DIRIV);
		if (lnm) {
			conf_add_flag(c, CONF_FLAG_LONGNAMEMAX);
			c->longnamemax = lnm;
		}
		conf_add_flag(c, CONF_FLAG_EMENAMES);
		conf_add_flag(c, CONF_FLAG_LONGNAMES);
		conf_add_flag(c, CONF_FLAG_RAW64);
	}
	if (cipher == AEAD_AES_SIV_512)
		conf_add_flag(c, CONF_FLAG_AESSIV);
}

static int write_diriv(const char *dir)
{
	uint8_t iv[NAMES_DIRIV_LEN];
	char *path = NULL;
	int fd = -1, rc = 0;

	if (asprintf(&path, "%s/%s", dir, NAMES_DIRIV_FILE) < 0)
		return -ENOMEM;
	if (RAND_bytes(iv, sizeof(iv)) != 1) {
		rc = -EIO;
		goto out;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (write(fd, iv, sizeof(iv)) != (ssize_t)sizeof(iv) ||
	    fsync(fd) != 0)
		rc = errno ? -errno : -EIO;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (rc)
		unlink(path);
out:
	free(path);
	return rc;
}

static void print_masterkey(const uint8_t *key)
{
	char disp[MASTERKEY_DISPLAY_LEN];

	masterkey_format(disp, key);
	printf("\nYour master key is:\n\n%s\n"
	       "If the " CONF_FILENAME " file becomes corrupted or you ever "
	       "forget your password,\n"
	       "there is only one hope for recovery: The master key. Print "
	       "it to a piece of\n"
	       "paper and store it in a drawer. This message is only printed "
	       "once.\n",
	       disp);
	fflush(stdout);
	secure_zero(disp, sizeof(disp));
}

/* Wrap key with the password into c and write c to path. Returns 0 or the
 * exit code (wrap_ex when the wrapping fails). */
static int wrap_and_save(struct conf *c, unsigned logn,
			 const struct password *pw, const uint8_t *key,
			 const char *path, int wrap_ex)
{
	char cerr[CONF_ERR_LEN];
	int rc;

	rc = masterkey_wrap(c, logn, pw->buf, pw->len, key);
	if (rc) {
		errmsg("wrapping the master key failed: %s", strerror(-rc));
		return wrap_ex;
	}
	if (conf_save(c, path, cerr)) {
		errmsg("Writing config file failed: %s", cerr);
		return EXIT_WRITECONF;
	}
	return 0;
}

static int do_init(const struct args *a)
{
	struct password_src src = pw_src(a);
	struct password pw = { 0 };
	uint8_t *key = NULL;
	char perr[PASSWORD_ERR_LEN];
	const char *dir;
	char *path = NULL;
	long lnm = 0, logn = MASTERKEY_DEFAULT_LOGN;
	enum aead_cipher cipher;
	struct conf c;
	int rc, ex = 0;

	conf_init(&c);
	if (a->npos != 1) {
		errmsg("-init needs exactly one argument: CIPHERDIR");
		return EXIT_USAGE;
	}
	dir = a->pos[0];
	if (a->aessiv + a->xchacha + a->gcm > 1 || (a->reverse && a->xchacha)) {
		errmsg("choose at most one of -aessiv, -xchacha and -gcm "
		       "(-reverse implies -aessiv)");
		return EXIT_WRITECONF;
	}
	if (a->longnamemax && a->longnamemax != NAMES_MAX_PLAIN) {
		if (a->longnamemax < 62 || a->longnamemax > 255) {
			errmsg("-longnamemax: value %ld is outside allowed "
			       "range 62 ... 255", a->longnamemax);
			return EXIT_USAGE;
		}
		lnm = a->longnamemax;
	}
	if (a->scryptn >= 0) {
		if (a->scryptn < MASTERKEY_MIN_LOGN) {
			errmsg("-scryptn %ld: below 10 is too low to make "
			       "sense", a->scryptn);
			return EXIT_WRITECONF;
		}
		if (a->scryptn > MASTERKEY_MAX_LOGN) {
			errmsg("-scryptn %ld: above 28 is too high",
			       a->scryptn);
			return EXIT_WRITECONF;
		}
		logn = a->scryptn;
	}
	ex = check_cipherdir(dir);
	if (ex)
		return ex;
	path = conf_path(a, dir);
	if (!path)
		return EXIT_OTHER;
	if (a->reverse) {
		if (access(path, F_OK) == 0) {
			errmsg("Invalid cipherdir: config '%s' already exists",
			       path);
			ex = EXIT_CIPHERDIR;
			goto out;
		}
	} else {
		rc = dir_nonempty(dir);
		if (rc) {
			if (rc < 0)
				errmsg("Invalid cipherdir: '%s': %s", dir,
				       strerror(-rc));
			else
				errmsg("Invalid cipherdir: directory '%s' not "
				       "empty", dir);
			ex = EXIT_CIPHERDIR;
			goto out;
		}
	}
	cipher = init_pick_cipher(a);
	key = secmem_alloc(MASTERKEY_LEN);
	if (!key) {
		ex = EXIT_OTHER;
		goto out;
	}
	if (a->masterkey || a->zerokey) {
		ex = get_masterkey(a, key);
		if (ex)
			goto out;
	} else if (masterkey_generate(key)) {
		errmsg("the random number generator failed");
		ex = EXIT_INIT;
		goto out;
	}
	say("Choose a password for protecting your files.");
	rc = password_read(&pw, &src, NULL, true, perr);
	if (rc) {
		ex = password_exit(rc, perr);
		goto out;
	}
	if (conf_set_creator(&c, CREATOR)) {
		ex = EXIT_OTHER;
		goto out;
	}
	c.version = CONF_VERSION;
	init_flags(&c, a, cipher, lnm);
	ex = wrap_and_save(&c, (unsigned)logn, &pw, key, path, EXIT_INIT);
	if (ex)
		goto out;
	if (!a->reverse && !a->plaintextnames && !a->deterministic_names) {
		rc = write_diriv(dir);
		if (rc) {
			errmsg("Creating %s/%s failed: %s", dir,
			       NAMES_DIRIV_FILE, strerror(-rc));
			ex = EXIT_INIT;
			goto out;
		}
	}
	if (!a->quiet) {
		if (isatty(STDOUT_FILENO))
			print_masterkey(key);
		else
			say("Not running on a terminal, suppressing master "
			    "key display");
	}
	say("The " PROG " filesystem has been created successfully.");
	if (a->reverse)
		say("You can now mount it using: " PROG " -reverse %s "
		    "MOUNTPOINT", dir);
	else
		say("You can now mount it using: " PROG " %s MOUNTPOINT",
		    dir);
out:
	secmem_free(key, MASTERKEY_LEN);
	password_free(&pw);
	conf_fini(&c);
	free(path);
	return ex;
}

/* ---- -passwd ----------------------------------------------------------- */

static int do_passwd(const struct args *a)
{
	struct password pw = { 0 };
	uint8_t *key = NULL;
	char perr[PASSWORD_ERR_LEN];
	char *path = NULL, *bak = NULL;
	struct conf c;
	long logn;
	int rc, ex;

	conf_init(&c);
	if (a->npos != 1) {
		errmsg("-passwd needs exactly one argument: CIPHERDIR");
		return EXIT_USAGE;
	}
	ex = check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	path = conf_path(a, a->pos[0]);
	key = secmem_alloc(MASTERKEY_LEN);
	if (!path || !key) {
		ex = EXIT_OTHER;
		goto out;
	}
	ex = load_conf(&c, path, false);
	if (ex)
		goto out;
	if (conf_has(&c, CONF_FLAG_FIDO2)) {
		errmsg("Password change is not supported on FIDO2-enabled "
		       "filesystems.");
		ex = EXIT_FIDO2;
		goto out;
	}
	if (a->scryptn >= 0 && (a->scryptn < MASTERKEY_MIN_LOGN ||
				a->scryptn > MASTERKEY_MAX_LOGN)) {
		errmsg("-scryptn %ld: outside the allowed range 10 ... 28",
		       a->scryptn);
		ex = EXIT_SCRYPT_PARAMS;
		goto out;
	}
	if (a->masterkey || a->zerokey) {
		ex = get_masterkey(a, key);
	} else {
		/* -passfile/-extpass give the old password only (as
		 * gocryptfs >= 2.5). */
		ex = unlock(a, &c, key, "Old password: ");
	}
	if (ex)
		goto out;
	logn = a->scryptn >= 0 ? a->scryptn : conf_logn(&c);
	if (!conf_has(&c, CONF_FLAG_HKDF)) {
		errmsg("-passwd on a legacy filesystem without HKDF is not "
		       "supported");
		ex = EXIT_DEPRECATED_FS;
		goto out;
	}
	say("Please enter your new password.");
	{
		struct password_src none = { 0 };

		rc = password_read(&pw, &none, "New password: ", true, perr);
	}
	if (rc) {
		ex = password_exit(rc, perr);
		goto out;
	}
	if (a->masterkey || a->zerokey) {
		if (asprintf(&bak, "%s.bak", path) < 0) {
			bak = NULL;
			ex = EXIT_OTHER;
			goto out;
		}
		if (link(path, bak) != 0) {
			errmsg("Could not create backup '%s': %s", bak,
			       strerror(errno));
			ex = EXIT_WRITECONF;
			goto out;
		}
		say("A copy of the old config file has been created at '%s'.",
		    bak);
		say("Delete it after you have verified that you can access "
		    "your files with the new password.");
	}
	ex = wrap_and_save(&c, (unsigned)logn, &pw, key, path, EXIT_WRITECONF);
	if (ex)
		goto out;
	say("Password changed.");
out:
	secmem_free(key, MASTERKEY_LEN);
	password_free(&pw);
	conf_fini(&c);
	free(path);
	free(bak);
	return ex;
}

/* ---- mount ------------------------------------------------------------- */

struct mount_ctx {
	const struct aead_impl *impl;
	char figures[512];
	bool forced;
};

static void on_ready(void *arg)
{
	struct mount_ctx *m = arg;

	secmem_relock_all();
	log_info("content cipher %s, implementation %s%s",
		 aead_cipher_name(aead_impl_cipher(m->impl)),
		 aead_impl_name(m->impl), m->forced ? " (forced)" : "");
	if (!m->forced && m->figures[0])
		log_info("implementation benchmark: %s", m->figures);
	log_info("Filesystem mounted and ready.");
}

/* Mount settings: from the config, or from flags for -masterkey mounts. */
struct fs_settings {
	enum aead_cipher cipher;
	bool hkdf;
	struct names_params np;
};

static void settings_from_conf(struct fs_settings *s, const struct conf *c)
{
	s->cipher = (enum aead_cipher)conf_cipher(c);
	s->hkdf = conf_has(c, CONF_FLAG_HKDF);
	s->np.plaintext = conf_has(c, CONF_FLAG_PLAINTEXTNAMES);
	s->np.raw64 = conf_has(c, CONF_FLAG_RAW64);
	s->np.diriv = conf_has(c, CONF_FLAG_DIRIV);
	s->np.longnamemax = c->longnamemax ? (unsigned)c->longnamemax
					   : NAMES_MAX_PLAIN;
}

static int settings_from_flags(struct fs_settings *s, const struct args *a)
{
	if (a->aessiv + a->xchacha > 1) {
		errmsg("choose at most one of -aessiv and -xchacha");
		return EXIT_USAGE;
	}
	if (a->xchacha && !a->hkdf) {
		errmsg("-xchacha requires -hkdf");
		return EXIT_USAGE;
	}
	if (a->longnamemax && (a->longnamemax < 62 || a->longnamemax > 255)) {
		errmsg("-longnamemax: value %ld is outside allowed range "
		       "62 ... 255", a->longnamemax);
		return EXIT_USAGE;
	}
	s->cipher = a->xchacha ? AEAD_XCHACHA20_POLY1305
		    : a->aessiv ? AEAD_AES_SIV_512 : AEAD_AES_GCM_256;
	s->hkdf = a->hkdf;
	s->np.plaintext = a->plaintextnames;
	s->np.raw64 = a->raw64;
	s->np.diriv = !a->deterministic_names;
	s->np.longnamemax = a->longnamemax ? (unsigned)a->longnamemax
					   : NAMES_MAX_PLAIN;
	return 0;
}

/* EME and content keys from the master key (spec §2). */
static int derive_keys(const struct fs_settings *s, const uint8_t *mk,
		       uint8_t *eme, uint8_t *ckey)
{
	static const char *const info[AEAD_CIPHER_COUNT] = {
		[AEAD_AES_GCM_256] = KDF_INFO_GCM,
		[AEAD_AES_SIV_512] = KDF_INFO_SIV,
		[AEAD_XCHACHA20_POLY1305] = KDF_INFO_XCHACHA,
	};
	size_t klen = aead_cipher_key_len(s->cipher);

	if (!s->hkdf) {
		/* Legacy (spec §2.3). */
		memcpy(eme, mk, 32);
		if (s->cipher == AEAD_AES_SIV_512)
			return kdf_sha512(ckey, mk, MASTERKEY_LEN);
		memcpy(ckey, mk, 32);
		return 0;
	}
	if (kdf_hkdf_sha256(eme, 32, mk, MASTERKEY_LEN, KDF_INFO_EME))
		return -EIO;
	return kdf_hkdf_sha256(ckey, klen, mk, MASTERKEY_LEN, info[s->cipher]);
}

static int check_mountpoint(const struct args *a, const char *mnt,
			    const char *cipherdir)
{
	struct stat st;
	size_t clen = strlen(cipherdir);
	int rc;

	if (stat(mnt, &st) != 0) {
		errmsg("Invalid mountpoint: stat '%s': %s", mnt,
		       strerror(errno));
		return EXIT_MOUNTPOINT;
	}
	if (!S_ISDIR(st.st_mode)) {
		errmsg("Invalid mountpoint: '%s' is not a directory", mnt);
		return EXIT_MOUNTPOINT;
	}
	if (strncmp(mnt, cipherdir, clen) == 0 &&
	    (mnt[clen] == '/' || mnt[clen] == '\0')) {
		errmsg("Invalid mountpoint: '%s' is inside cipherdir '%s'",
		       mnt, cipherdir);
		return EXIT_MOUNTPOINT;
	}
	if (!a->nonempty) {
		rc = dir_nonempty(mnt);
		if (rc) {
			errmsg("Invalid mountpoint: '%s' %s", mnt,
			       rc > 0 ? "is not empty (use -nonempty)"
				      : strerror(-rc));
			return EXIT_MOUNTPOINT;
		}
	}
	return 0;
}

/* -cipher-impl NAME: the registry name, compared without case. */
static const struct aead_impl *find_impl(const char *name)
{
	for (size_t i = 0; i < aead_impl_count(); i++)
		if (strcasecmp(aead_impl_name(aead_impl_at(i)), name) == 0)
			return aead_impl_at(i);
	return NULL;
}

static int do_mount(const struct args *a)
{
	struct mount_ctx m = { .impl = NULL };
	struct fs_settings s = { .cipher = AEAD_AES_GCM_256 };
	struct fs_options fo = { 0 };
	struct content *content = NULL;
	struct names *names = NULL;
	struct aead *aead = NULL;
	struct fs *fs = NULL;
	uint8_t *mk = NULL, *eme = NULL, *ckey = NULL;
	char *cipherdir = NULL, *mnt = NULL, *path = NULL;
	bool parent = false;
	struct conf c;
	int rc, ex;

	conf_init(&c);
	if (a->npos != 2) {
		errmsg("Wrong number of arguments (have %zu, want 2)", a->npos);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (a->reverse) {
		errmsg("reverse mode mounts are not supported by " PROG);
		return EXIT_USAGE;
	}
	ex = check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	cipherdir = realpath(a->pos[0], NULL);
	if (!cipherdir) {
		errmsg("Invalid cipherdir: '%s': %s", a->pos[0],
		       strerror(errno));
		return EXIT_CIPHERDIR;
	}
	mnt = realpath(a->pos[1], NULL);
	if (!mnt) {
		errmsg("Invalid mountpoint: '%s': %s", a->pos[1],
		       strerror(errno));
		ex = EXIT_MOUNTPOINT;
		goto out;
	}
	ex = check_mountpoint(a, mnt, cipherdir);
	if (ex)
		goto out;
	mk = secmem_alloc(MASTERKEY_LEN);
	eme = secmem_alloc(32);
	ckey = secmem_alloc(AEAD_MAX_KEY_LEN);
	if (!mk || !eme || !ckey) {
		ex = EXIT_OTHER;
		goto out;
	}
	if (a->masterkey || a->zerokey) {
		ex = settings_from_flags(&s, a);
		if (!ex)
			ex = get_masterkey(a, mk);
	} else {
		path = conf_path(a, cipherdir);
		if (!path) {
			ex = EXIT_OTHER;
			goto out;
		}
		ex = load_conf(&c, path, false);
		if (!ex)
			ex = unlock(a, &c, mk, NULL);
		settings_from_conf(&s, &c);
	}
	if (ex)
		goto out;
	rc = derive_keys(&s, mk, eme, ckey);
	secure_zero(mk, MASTERKEY_LEN);
	if (rc) {
		errmsg("key derivation failed");
		ex = EXIT_OTHER;
		goto out;
	}
	if (a->impl) {
		m.impl = find_impl(a->impl);
		m.forced = true;
		if (!m.impl || aead_impl_cipher(m.impl) != s.cipher) {
			errmsg("-cipher-impl '%s': no such implementation of "
			       "%s (see -speed)", a->impl,
			       aead_cipher_name(s.cipher));
			ex = EXIT_USAGE;
			goto out;
		}
	} else {
		m.impl = aead_impl_auto(s.cipher, 50, m.figures,
					sizeof(m.figures));
		if (!m.impl) {
			errmsg("no implementation of %s is available",
			       aead_cipher_name(s.cipher));
			ex = EXIT_OTHER;
			goto out;
		}
	}
	rc = aead_new(&aead, m.impl, ckey, aead_cipher_key_len(s.cipher));
	secure_zero(ckey, AEAD_MAX_KEY_LEN);
	if (!rc)
		rc = content_new(&content, aead);
	if (!rc)
		rc = names_new(&names, eme, &s.np, content);
	secure_zero(eme, 32);
	if (rc) {
		errmsg("setting up the ciphers failed: %s", strerror(-rc));
		ex = EXIT_OTHER;
		goto out;
	}
	fo.cipherdir = cipherdir;
	fo.mountpoint = mnt;
	fo.foreground = a->fg;
	fo.nosyslog = a->nosyslog;
	fo.ro = a->ro;
	fo.allow_other = a->allow_other;
	fo.nonempty = a->nonempty;
	fo.noprealloc = a->noprealloc;
	fo.debug = a->debug;
	fo.quiet = a->quiet;
	fo.fsname = a->fsname;
	fo.fuse_opts = a->fuse_opts;
	fo.on_ready = on_ready;
	fo.on_ready_arg = &m;
	rc = fs_new(&fs, &fo, content, names);
	if (rc) {
		errmsg("setting up the filesystem failed: %s", strerror(-rc));
		ex = EXIT_OTHER;
		goto out;
	}
	rc = fs_run(fs, &parent);
	if (rc == FS_ERR_MOUNTPOINT) {
		errmsg("Mounting on '%s' failed", mnt);
		ex = EXIT_MOUNTPOINT;
	} else if (rc == FS_ERR_CIPHERDIR) {
		errmsg("Cannot open cipherdir '%s'", cipherdir);
		ex = EXIT_CIPHERDIR;
	} else if (rc) {
		errmsg("Mount failed: %s",
		       rc > -1000 ? strerror(-rc) : "see the log");
		ex = EXIT_OTHER;
	}
out:
	fs_free(fs);
	names_free(names);
	content_free(content);
	aead_free(aead);
	secmem_free(mk, MASTERKEY_LEN);
	secmem_free(eme, 32);
	secmem_free(ckey, AEAD_MAX_KEY_LEN);
	conf_fini(&c);
	free(path);
	free(cipherdir);
	free(mnt);
	return ex;
}

/* ---- -speed ------------------------------------------------------------ */

static int do_speed(void)
{
	int rc = speed_run(stdout);

	fflush(stdout);
	if (rc) {
		errmsg("-speed: an implementation failed: %s", strerror(-rc));
		return EXIT_OTHER;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	char err[ARGS_ERR_LEN];
	struct args a;
	int ex, nact;

	atexit(wipe_at_exit);
	log_init(PROG, false, LOG_LVL_INFO);
	if (args_parse(&a, argc, argv, err)) {
		errmsg("%s", err);
		usage(stderr);
		args_free(&a);
		return EXIT_USAGE;
	}
	g_quiet = a.quiet;
	if (a.debug)
		log_init(PROG, false, LOG_LVL_DBG);
	else if (a.quiet)
		log_init(PROG, false, LOG_LVL_WARN);
	nact = a.init + a.passwd + a.info + a.speed + a.dumpmasterkey;
	if (a.help) {
		help();
		ex = EXIT_OK;
	} else if (a.version) {
		printf(PROG " %s; gocryptfs v2 on-disk format\n",
		       VEILFS_VERSION);
		ex = EXIT_OK;
	} else if (nact > 1) {
		errmsg("choose at most one of -init, -passwd, -info, -speed");
		usage(stderr);
		ex = EXIT_USAGE;
	} else if (a.speed) {
		ex = do_speed();
	} else if (a.info) {
		ex = do_info(&a);
	} else if (a.init) {
		ex = do_init(&a);
	} else if (a.passwd) {
		ex = do_passwd(&a);
	} else if (a.dumpmasterkey) {
		ex = do_dumpmasterkey(&a);
	} else {
		ex = do_mount(&a);
	}
	args_free(&a);
	fflush(stdout);
	return ex;
}
