/* SPDX-License-Identifier: MIT */
/*
 * Steps the command-line actions share: messages (the one-line errors and
 * -q-aware progress), the config path under -config/-reverse, checks of
 * CIPHERDIR, password sources, -masterkey, loading and unlocking the config,
 * and building the crypto chain of a filesystem (config or flags -> master
 * key -> HKDF subkeys -> aead -> content and names). Every function that
 * fails prints its one line and returns the gocryptfs exit code
 * (src/exitcodes.h); 0 is success. Key material lives in secmem and is wiped
 * on every path.
 */
#ifndef CLI_COMMON_H
#define CLI_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/conf.h"
#include "crypto/aead.h"
#include "crypto/names.h"

#define PROG "veilfs"
#define CREATOR PROG " " VEILFS_VERSION

struct args;
struct content;
struct names;
struct password;
struct password_src;

/* One error line on stderr (no prefix: the texts scripts match, like
 * "Password incorrect.", are gocryptfs's). */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One progress line on stdout, silenced by -q (cli_set_quiet). */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_set_quiet(bool quiet);
bool cli_quiet(void);
void cli_usage(FILE *f);

/* Path of the config of dir under -config/-reverse; malloc'ed, NULL on
 * ENOMEM. */
char *cli_conf_path(const struct args *a, const char *dir);
/* dir exists and is a directory (EXIT_CIPHERDIR otherwise). */
int cli_check_cipherdir(const char *dir);
/* A config whose key a FIDO2 token unlocks, without -fido2: gocryptfs's
 * one line and exit code (1). */
int cli_fido2_conf(void);
/* The -scryptn value given (a->scryptn != ARGS_UNSET): one of 0 or below
 * is the default, as gocryptfs takes it. */
long cli_scrypt_logn(const struct args *a);
/* 1 if dir has entries, 0 if empty, negative errno. */
int cli_dir_nonempty(const char *dir);
/* Exactly n positional arguments for action (EXIT_USAGE otherwise). */
int cli_want_args(const struct args *a, size_t n, const char *action,
		  const char *what);

/* The password sources the flags name (-passfile, -extpass). */
struct password_src cli_pw_src(const struct args *a);
/* The prologue of the actions on one CIPHERDIR: exactly one argument, a
 * directory, its config path (*path, malloc'ed; the caller frees it, also
 * on failure) loaded into c (conf_init'ed here; conf_fini in every case) as
 * cli_load_conf does. */
int cli_conf_of_dir(const struct args *a, const char *action, bool info,
		    struct conf *c, char **path);
/* Read a password from the flags' sources (-passfile, -extpass), or from
 * the terminal or stdin when they name none or a is NULL; prints the error
 * and returns its exit code. */
int cli_read_password(struct password *pw, const struct args *a,
		      const char *prompt, bool twice);
/* -masterkey HEX|stdin or -zerokey into key. */
int cli_get_masterkey(const struct args *a, uint8_t *key);
/* Load the config at path; -info (info) exits 8 on every failure, the
 * other actions 27 when it fails validation and 11 otherwise. */
int cli_load_conf(struct conf *c, const char *path, bool info);
/* Read the password and unwrap c's master key into key. */
int cli_unlock(const struct args *a, const struct conf *c, uint8_t *key,
	       const char *prompt);
/* Wrap key with pw into c and save c to path (wrap_ex when the wrapping
 * fails, EXIT_WRITECONF when the write does). */
int cli_wrap_and_save(struct conf *c, unsigned logn,
		      const struct password *pw, const uint8_t *key,
		      const char *path, int wrap_ex);

/* The crypto chain of one filesystem. */
struct cli_chain {
	enum aead_cipher cipher;
	bool hkdf;
	struct names_params np;
	struct conf conf;	/* loaded unless -masterkey/-zerokey */
	bool have_conf;
	char *conf_path;	/* malloc'ed, NULL with -masterkey */
	const struct aead_impl *impl;
	bool forced;		/* -cipher-impl */
	char figures[512];	/* what auto mode measured */
	struct aead *aead;
	struct content *content;
	struct names *names;
};

/* Build the chain for the filesystem in dir: the config (or, with
 * -masterkey/-zerokey, the flags), the master key (password or flag), the
 * subkeys, the implementation (-cipher-impl or measured), and the engines.
 * Nothing secret is left outside the engines when it returns. Release with
 * cli_chain_close in every case. */
int cli_chain_open(struct cli_chain *ch, const struct args *a,
		   const char *dir);
void cli_chain_close(struct cli_chain *ch);

#endif
