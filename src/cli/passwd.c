// SPDX-License-Identifier: MIT
/*
 * -passwd: re-wrap the same master key with a new password and a fresh
 * scrypt salt (spec §1.8), keeping every other field of the config, and
 * the key layout of a legacy config without HKDF. With -masterkey no old
 * password is needed and the old config is kept as gocryptfs.conf.bak (a
 * hard link, refused if it exists).
 */
#include <errno.h>
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
#include "exitcodes.h"

/* -masterkey: keep the old config as <path>.bak. */
static int make_backup(const char *path)
{
	char *bak = NULL;

	if (asprintf(&bak, "%s.bak", path) < 0)
		return EXIT_OTHER;
	if (link(path, bak) != 0) {
		cli_err("Could not create backup '%s': %s", bak,
			strerror(errno));
		free(bak);
		return EXIT_INIT; /* gocryptfs's code for it */
	}
	cli_say("A copy of the old config file has been created at '%s'.",
		bak);
	cli_say("Delete it after you have verified that you can access "
		"your files with the new password.");
	free(bak);
	return 0;
}

int cli_passwd(const struct args *a)
{
	struct password pw = { 0 };
	uint8_t *key = NULL;
	char *path = NULL;
	struct conf c = { 0 };
	long logn;
	int ex;

	key = secmem_alloc(MASTERKEY_LEN);
	ex = key ? cli_conf_of_dir(a, "-passwd", false, &c, &path)
		 : EXIT_OTHER;
	if (ex)
		goto out;
	if (conf_has(&c, CONF_FLAG_FIDO2)) {
		ex = cli_fido2_conf();
		goto out;
	}
	if (a->scryptn != ARGS_UNSET &&
	    (cli_scrypt_logn(a) < MASTERKEY_MIN_LOGN ||
	     cli_scrypt_logn(a) > MASTERKEY_MAX_LOGN)) {
		cli_err("-scryptn %ld: outside the allowed range 10 ... 28",
			cli_scrypt_logn(a));
		ex = EXIT_SCRYPT_PARAMS;
		goto out;
	}
	if (a->masterkey || a->zerokey)
		ex = cli_get_masterkey(a, key);
	else
		ex = cli_unlock(a, &c, key, "Old password: ");
	if (ex)
		goto out;
	logn = a->scryptn != ARGS_UNSET ? (int)cli_scrypt_logn(a) :
					  conf_logn(&c);
	/* As gocryptfs 2.3 (Debian 12): -passfile/-extpass give the new
	 * password too (2.5 and later read it from the terminal or stdin
	 * only). */
	cli_say("Please enter your new password.");
	ex = cli_read_password(&pw, a, "New password: ", true);
	if (ex)
		goto out;
	if (a->masterkey || a->zerokey) {
		ex = make_backup(path);
		if (ex)
			goto out;
	}
	ex = cli_wrap_and_save(&c, (unsigned)logn, &pw, key, path,
			       EXIT_WRITECONF);
	if (ex)
		goto out;
	cli_say("Password changed.");
out:
	secmem_free(key, MASTERKEY_LEN);
	password_free(&pw);
	conf_fini(&c);
	free(path);
	return ex;
}
