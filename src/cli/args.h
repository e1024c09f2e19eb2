/* SPDX-License-Identifier: MIT */
/*
 * Command-line parsing with gocryptfs's conventions: flags take one or two
 * dashes, values come as "-flag=value" or "-flag value", booleans accept
 * "-flag=true|false", flags may appear before or after the positional
 * arguments ("--" ends them), and "-o a,b,c" names flags without their dash;
 * -o items that are not veilfs flags are passed to FUSE as mount options.
 */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define ARGS_MAX_MULTI 16
#define ARGS_ERR_LEN 512
#define ARGS_MAX_LIST 256

/* A flag that may be repeated, each value a comma-separated list (CSV, as
 * gocryptfs parses them). It has a long and a short name; the first use of
 * either name replaces what the other one gave, later uses append (so
 * "-e A -exclude B -e C" gives B, C, as with gocryptfs). Strings are owned
 * by struct args. */
struct args_list {
	const char *v[ARGS_MAX_LIST];
	size_t n;
	bool used[2];
};

/* A long flag that was not given. */
#define ARGS_UNSET LONG_MIN

struct args {
	/* actions */
	bool init, passwd, info, speed, version, help, dumpmasterkey;
	bool xray;
	/* filesystem creation / -masterkey mount settings */
	bool aessiv, xchacha, gcm, plaintextnames, deterministic_names;
	bool reverse, hkdf, raw64, zerokey;
	long longnamemax;	/* 0: not given */
	long scryptn;		/* ARGS_UNSET: not given; given <= 0:
				 * the default (cli/common.h, scrypt_logn) */
	/* -fsck */
	bool fsck, repair, repair_truncate;
	const char *quarantine;
	/* mount */
	bool fg, nosyslog, ro, rw, allow_other, nonempty, quiet, debug;
	bool noprealloc, sharedstorage;
	/* reverse mode: -exclude/-e, -exclude-wildcard/-ew, -exclude-from */
	struct args_list exclude, exclude_wildcard, exclude_from;
	bool one_file_system;
	const char *fsname, *config, *masterkey, *impl;
	char *fuse_opts;	/* malloc'ed, comma-separated, or NULL */
	/* more mount options (gocryptfs -hh) */
	bool dev, nodev, suid, nosuid, exec, noexec;
	bool acl, kernel_cache, serialize_reads, wpanic, fusedebug, noxattr;
	bool longhelp;		/* -hh */
	bool longnames;		/* default true; false only with -masterkey */
	int openssl;		/* -openssl: -1 auto (default), 0, 1 */
	const char *ko, *ctlsock, *force_owner, *fido2;
	long long idle_ns;	/* -idle / -i; 0: never */
	long notifypid;		/* 0: not given */
	/* one line each about flags accepted without effect, for main */
	const char *notes[ARGS_MAX_MULTI];
	size_t nnotes;
	/* password sources */
	const char *passfiles[ARGS_MAX_MULTI];
	size_t npassfiles;
	const char *extpass[ARGS_MAX_MULTI];
	size_t nextpass;
	/* -badname globs, repeatable */
	const char *badname[ARGS_MAX_MULTI];
	size_t nbadname;
	/* positional arguments */
	const char *pos[2];
	size_t npos;
	/* "-o" option strings are copied here; freed by args_free */
	char *ostore[ARGS_MAX_MULTI];
	size_t nostore;
	/* list items (struct args_list), freed by args_free */
	char **lstore;
	size_t nlstore;
};

/* Parse argv into a (defaults applied). Returns 0, or -EINVAL with a one-line
 * reason in err. argv strings are borrowed and must outlive a. Caller calls
 * args_free in every case. */
int args_parse(struct args *a, int argc, char **argv,
	       char err[static ARGS_ERR_LEN]);
void args_free(struct args *a);

/* The flag table, for -hh: the i-th flag's name (without dash) and whether
 * it takes a value; NULL past the end. */
const char *args_flag(size_t i, bool *takes_value);

#endif
