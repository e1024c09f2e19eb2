/* SPDX-License-Identifier: MIT */
/*
 * -badname PATTERN (spec §4.6): entries whose encrypted name does not
 * decrypt and matches one of the globs are listed under the name gocryptfs
 * 2.3 shows for them (the longest decryptable prefix, the rest,
 * " GOCRYPTFS_BAD_NAME"), and that name leads back to the entry, so that
 * such files can be opened, renamed and deleted by hand. For a long name
 * the encrypted name is the content of its .name file (one that is
 * missing stays hidden, as in gocryptfs).
 */
#ifndef FS_BADNAME_H
#define FS_BADNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/names.h"
#include "fs/inode.h"

/* Reads a small file name in dfd into buf (cap bytes): 0 with *len set, or
 * -errno. */
typedef int badname_read_fn(int dfd, const char *name, uint8_t *buf,
			    size_t cap, size_t *len);

/* The entry a shown name leads to. */
struct badname_hit {
	char stored[INODE_NAME_MAX];
	char cname[NAMES_MAX_CNAME];
	bool is_long;
};

/* Whether name may be a shown bad name (-badname given, name with the
 * suffix). */
bool badname_wanted(const struct fs *fs, const char *name);
/* The name to list for an entry whose encrypted name enc did not decrypt
 * in a directory with IV iv: 0 with name (NAMES_MAX_PLAIN + 1 bytes) set,
 * or 1 to hide it. */
int badname_show(const struct fs *fs, const uint8_t *iv, const char *enc,
		 char *name);
/* The entry in the directory dfd (the root if is_root) that is shown as
 * name; read reads .name files. Returns 0 with *hit set, or -ENOENT. */
int badname_resolve(const struct fs *fs, int dfd, bool is_root,
		    const uint8_t *iv, const char *name, badname_read_fn *read,
		    struct badname_hit *hit);

#endif
