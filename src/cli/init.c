// SPDX-License-Identifier: MIT
/*
 * -init: create a filesystem. Checks CIPHERDIR (empty; for -reverse only
 * the config must not exist), picks the content cipher (by flag, or the
 * faster of AES-GCM and XChaCha20 measured here), draws or takes the master
 * key, wraps it with the new password into a config (spec §1.3 flag order)
 * and writes the root gocryptfs.diriv (spec §4.1).
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "common/secmem.h"
#include "config/masterkey.h"
#include "config/password.h"
#include "crypto/speed.h"
#include "exitcodes.h"

#define INIT_BENCH_MS 400 /* the cipher benchmark, both ciphers */

static enum aead_cipher pick_cipher(const struct args *a)
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
	cli_say("Cipher benchmark: AES-GCM-256 %.0f MB/s, XChaCha20-Poly1305 "
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

/* The flag values -init checks before it touches anything. */
static int check_init_flags(const struct args *a, long *lnm, long *logn)
{
	if (a->aessiv + a->xchacha + a->gcm > 1 || (a->reverse && a->xchacha)) {
		cli_err("choose at most one of -aessiv, -xchacha and -gcm "
			"(-reverse implies -aessiv)");
		return EXIT_WRITECONF;
	}
	if (a->longnamemax && a->longnamemax != NAMES_MAX_PLAIN) {
		if (a->longnamemax < 62 || a->longnamemax > 255) {
			cli_err("-longnamemax: value %ld is outside allowed "
				"range 62 ... 255", a->longnamemax);
			return EXIT_USAGE;
		}
		*lnm = a->longnamemax;
	}
	if (a->scryptn != ARGS_UNSET) {
		long n = cli_scrypt_logn(a);

		if (n < MASTERKEY_MIN_LOGN) {
			cli_err("-scryptn %ld: below 10 is too low to make "
				"sense", n);
			return EXIT_WRITECONF;
		}
		if (n > MASTERKEY_MAX_LOGN) {
			cli_err("-scryptn %ld: above 28 is too high", n);
			return EXIT_WRITECONF;
		}
		*logn = (int)n;
	}
	return 0;
}

/* A forward cipherdir must be empty; a reverse one only lacks the config. */
static int check_init_dir(const struct args *a, const char *dir,
			  const char *path)
{
	int rc;

	if (a->reverse) {
		if (access(path, F_OK) == 0) {
			cli_err("Config file '%s' already exists", path);
			return EXIT_INIT;
		}
		return 0;
	}
	rc = cli_dir_nonempty(dir);
	if (rc < 0)
		cli_err("Invalid cipherdir: '%s': %s", dir, strerror(-rc));
	else if (rc)
		cli_err("Invalid cipherdir: directory '%s' not empty", dir);
	return rc ? EXIT_CIPHERDIR : 0;
}

int cli_init(const struct args *a)
{
	struct password pw = { 0 };
	uint8_t *key = NULL;
	const char *dir;
	char *path = NULL;
	long lnm = 0, logn = MASTERKEY_DEFAULT_LOGN;
	enum aead_cipher cipher;
	struct conf c;
	int rc, ex;

	conf_init(&c);
	ex = cli_want_args(a, 1, "-init", "CIPHERDIR");
	if (!ex)
		ex = check_init_flags(a, &lnm, &logn);
	if (ex)
		return ex;
	dir = a->pos[0];
	ex = cli_check_cipherdir(dir);
	if (ex)
		return ex;
	path = cli_conf_path(a, dir);
	if (!path)
		return EXIT_OTHER;
	ex = check_init_dir(a, dir, path);
	if (ex)
		goto out;
	cipher = pick_cipher(a);
	key = secmem_alloc(MASTERKEY_LEN);
	if (!key) {
		ex = EXIT_OTHER;
		goto out;
	}
	/* -zerokey is for mounts: a new filesystem always gets a random
	 * key (gocryptfs ignores it here too) */
	if (a->masterkey) {
		ex = cli_get_masterkey(a, key);
		if (ex)
			goto out;
	} else if (masterkey_generate(key)) {
		cli_err("the random number generator failed");
		ex = EXIT_INIT;
		goto out;
	}
	cli_say("Choose a password for protecting your files.");
	ex = cli_read_password(&pw, a, NULL, true);
	if (ex)
		goto out;
	if (conf_set_creator(&c, CREATOR)) {
		ex = EXIT_OTHER;
		goto out;
	}
	c.version = CONF_VERSION;
	init_flags(&c, a, cipher, lnm);
	ex = cli_wrap_and_save(&c, (unsigned)logn, &pw, key, path, EXIT_INIT);
	if (ex)
		goto out;
	if (!a->reverse && !a->plaintextnames && !a->deterministic_names) {
		rc = write_diriv(dir);
		if (rc) {
			cli_err("Creating %s/%s failed: %s", dir,
				NAMES_DIRIV_FILE, strerror(-rc));
			ex = EXIT_INIT;
			goto out;
		}
	}
	if (!a->quiet) {
		if (isatty(STDOUT_FILENO))
			print_masterkey(key);
		else
			cli_say("Not running on a terminal, suppressing "
				"master key display");
	}
	cli_say("The " PROG " filesystem has been created successfully.");
	cli_say("You can now mount it using: " PROG "%s %s MOUNTPOINT",
		a->reverse ? " -reverse" : "", dir);
out:
	secmem_free(key, MASTERKEY_LEN);
	password_free(&pw);
	conf_fini(&c);
	free(path);
	return ex;
}
