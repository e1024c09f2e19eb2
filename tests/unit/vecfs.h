/* SPDX-License-Identifier: MIT */
/*
 * Test helper: open a gocryptfs 2.3 vector variant with our own modules
 * (kdf, aead, content, names) and walk its cipher/ tree next to plain/.
 * The walk decrypts every name and checks, per directory, that the set of
 * decrypted names equals the set of names in plain/.
 */
#ifndef TESTS_VECFS_H
#define TESTS_VECFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "crypto/aead.h"
#include "crypto/names.h"

struct aead;
struct content;
struct names;

struct vec_fs {
	const char *variant;
	struct names_params np;
	enum aead_cipher cipher;
	uint8_t mk[32], eme_key[32], ckey[64];
	size_t ckey_len;
	struct aead *aead;
	struct content *content;
	struct names *names;
};

/* Derive the keys from masterkey.hex, read the flags from the config, and
 * build aead (impl, or the first registered implementation of the variant's
 * cipher if NULL), content and names. Returns 0 or a negative errno. */
int vec_fs_open(struct vec_fs *fs, const char *variant,
		const struct aead_impl *impl);
void vec_fs_close(struct vec_fs *fs);

struct vec_entry {
	const char *cpath;  /* full path of the cipher entry */
	const char *ppath;  /* full path of the plain entry */
	const char *stored; /* stored (cipher) name */
	const char *cname;  /* encrypted name: sidecar content if long */
	const char *name;   /* decrypted name */
	const uint8_t *iv;  /* directory IV used */
	bool is_long, is_root;
	struct stat cst;    /* lstat of the cipher entry */
};

typedef int (*vec_entry_fn)(struct vec_fs *fs, const struct vec_entry *e,
			    void *arg);

/* Walk the whole tree depth-first calling fn for every visible entry.
 * Returns 0, the first non-zero value of fn, or a negative errno when a
 * name does not decrypt or a directory's names differ from plain/ (a "# "
 * diagnostic line is printed). */
int vec_fs_walk(struct vec_fs *fs, vec_entry_fn fn, void *arg);

#endif
