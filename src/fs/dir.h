/* SPDX-License-Identifier: MIT */
/*
 * Directory and namespace operations: name encryption with the per-directory
 * IV (cached per inode), long-name sidecars, listing snapshots, and the
 * create/remove/rename family (spec §4). Results are backing stats; ops.c
 * converts sizes for the kernel.
 */
#ifndef FS_DIR_H
#define FS_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/fe.h"
#include "fs/inode.h"

struct fs;
struct inode;

/* Who asked: as root with allow_other, new objects are chowned to them. */
struct cred {
	uid_t uid;
	gid_t gid;
};

/* Directory IV of dir (fd dfd); zeros without DirIV. */
int dir_iv(struct fs *fs, struct inode *dir, int dfd,
	   uint8_t iv[static NAMES_DIRIV_LEN]);

int dir_lookup(struct fs *fs, struct inode *dir, const char *name,
	       struct inode **out, struct stat *st);
int dir_mknod(struct fs *fs, struct inode *dir, const char *name, mode_t mode,
	      dev_t rdev, const struct cred *cr, struct inode **out,
	      struct stat *st);
int dir_mkdir(struct fs *fs, struct inode *dir, const char *name, mode_t mode,
	      const struct cred *cr, struct inode **out, struct stat *st);
int dir_symlink(struct fs *fs, struct inode *dir, const char *name,
		const char *target, const struct cred *cr, struct inode **out,
		struct stat *st);
/* Create and open; the fd is attached to *out as one handle. Without
 * O_EXCL in flags an entry that is there already is opened (*existed). */
int dir_create(struct fs *fs, struct inode *dir, const char *name,
	       mode_t mode, int flags, const struct cred *cr,
	       struct inode **out, struct stat *st, bool *existed);
int dir_link(struct fs *fs, struct inode *in, struct inode *dir,
	     const char *name, struct inode **out, struct stat *st);
int dir_unlink(struct fs *fs, struct inode *dir, const char *name);
int dir_rmdir(struct fs *fs, struct inode *dir, const char *name);
/* moved[0..1] get the node ids of the directories whose parent changed
 * (their ".." is another now), 0 for none. */
int dir_rename(struct fs *fs, struct inode *dir, const char *name,
	       struct inode *newdir, const char *newname, unsigned flags,
	       uint64_t moved[static 2]);
/* Decrypted symlink target into buf (cap bytes, NUL-terminated). */
int dir_readlink(struct fs *fs, struct inode *in, char *buf, size_t cap);
/* st_size of symlink in as the plaintext view shows it (the decrypted
 * target's length), from the backing size stored_len; -errno on failure. */
long dir_symlink_size(struct fs *fs, struct inode *in, size_t stored_len);

/* Translate a canonical path relative to the root (no empty, "." or ".."
 * component, no leading or trailing '/') from the plaintext view to the
 * stored path in the cipherdir, or back, as -ctlsock does: the directory IVs
 * and long-name sidecars are read from the cipherdir, long names are hashed
 * as stored, and the last component need not exist. Returns 0 with *out
 * malloc'ed (caller frees), or -ENOENT / -ENOTDIR for a missing or
 * non-directory parent, -EBADMSG for a name that is not valid or does not
 * decrypt, -ENAMETOOLONG, -EIO (corrupt diriv), -ENOMEM. Safe to call from
 * any thread while the filesystem is served. */
int dir_encrypt_path(struct fs *fs, const char *path, char **out);
int dir_decrypt_path(struct fs *fs, const char *path, char **out);

/* Listing snapshot of dir with decrypted names ("." and ".." first), and
 * the READDIRPLUS lookup of one of its entries (fe.h list_entry). */
int dir_list_load(struct fs *fs, struct inode *dir, struct dir_list *dl);
int dir_list_entry(struct fs *fs, struct inode *dir, int dfd,
		   const struct dir_ent *d, struct inode **in, struct stat *st);

#endif
