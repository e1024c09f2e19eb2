// SPDX-License-Identifier: MIT
/*
 * -info: the config's metadata (spec §6.2), never a secret; and the hidden
 * -dumpmasterkey CIPHERDIR|CONFIG (like gocryptfs-xray -dumpmasterkey),
 * which prints the unwrapped master key as hex.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "common/secmem.h"
#include "config/masterkey.h"
#include "exitcodes.h"

int cli_info(const struct args *a)
{
	struct conf c = { 0 };
	char *path = NULL;
	int ex;

	ex = cli_conf_of_dir(a, "-info", true, &c, &path);
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

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* -dumpmasterkey CONFIG, as gocryptfs-xray takes it: the config file
 * itself instead of its CIPHERDIR. */
static int conf_of_file(const char *file, struct conf *c, char **path)
{
	*path = strdup(file);
	if (!*path) {
		conf_init(c);
		return EXIT_OTHER;
	}
	return cli_load_conf(c, *path, false);
}

int cli_dumpmasterkey(const struct args *a)
{
	uint8_t *key = NULL;
	struct conf c = { 0 };
	char *path = NULL;
	int ex;

	key = secmem_alloc(MASTERKEY_LEN);
	if (!key)
		ex = EXIT_OTHER;
	else if (a->npos == 1 && !a->config && is_file(a->pos[0]))
		ex = conf_of_file(a->pos[0], &c, &path);
	else
		ex = cli_conf_of_dir(a, "-dumpmasterkey", false, &c, &path);
	if (!ex)
		ex = cli_unlock(a, &c, key, NULL);
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
