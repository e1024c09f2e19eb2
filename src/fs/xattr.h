/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes (spec §4.10): every plaintext attribute is stored as
 * an encrypted "user.gocryptfs.*" name with a sealed value; the two POSIX
 * ACL names pass through unchanged.
 */
#ifndef FS_XATTR_H
#define FS_XATTR_H

#include <stddef.h>

struct fs;
struct inode;

/* -errno for an attribute name that a file does not have. */
int xattr_absent(const char *name);
/* size 0: *len gets the needed size. buf is caller-owned. */
int xattr_get(struct fs *fs, struct inode *in, const char *name, char *buf,
	      size_t size, size_t *len);
int xattr_set(struct fs *fs, struct inode *in, const char *name,
	      const char *value, size_t size, int flags);
int xattr_list(struct fs *fs, struct inode *in, char *buf, size_t size,
	       size_t *len);
int xattr_remove(struct fs *fs, struct inode *in, const char *name);

#endif
