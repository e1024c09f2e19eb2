/* SPDX-License-Identifier: MIT */
/*
 * Private parts of the reverse frontend, shared by rops.c (handlers), rdir.c
 * (paths, names, lookups, listings, symlinks, virtual files) and rfile.c
 * (file contents). Paths follow spec §5.2: a directory's plaintext path and
 * cipher path are derived from the inode table's links (parent and
 * plaintext name), cached per directory inode until a directory's first
 * link changes (fs->path_gen).
 */
#ifndef FS_RPRIV_H
#define FS_RPRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "crypto/names.h"
#include "fs/fe.h"
#include "fs/inode.h"
#include "fs/rfs.h"

struct fs;
struct inode;

/* What gocryptfs calls the config in the plaintext root. */
#define RFS_CONF_NAME ".gocryptfs.reverse.conf"
/* The longest symlink target the view shows (spec §4.9). */
#define RFS_LINK_MAX 4096
/* View names of an entry: up to 255 bytes (longer ones are hashed). */
#define RFS_VNAME_MAX (NAMES_MAX_CNAME + sizeof(NAMES_LONG_SUFFIX))

/* One file's derived values (spec §5.4) kept for a hard-linked inode for
 * the rest of the mount: the first path it is opened through decides. */
struct rfs_hl;
struct rfs_ns {
	dev_t dev;
	unsigned char kind;
};

/* find_long's memory of the last directory it scanned: every long name's
 * hashed form and plain name, sorted by the former, valid while the
 * directory's inode, times and IV are the same. */
struct rfs_long {
	char *stored; /* "stored\0plain\0", malloc'ed */
	const char *plain;
};

struct rfs_longs {
	pthread_mutex_t lock;
	bool valid;
	dev_t dev;
	ino_t ino;
	struct timespec mtime, ctime;
	uint8_t iv[NAMES_DIRIV_LEN];
	struct rfs_long *e;
	size_t n;
};

struct rfs {
	struct rfs_options opt;
	uint8_t root_iv[NAMES_DIRIV_LEN];
	/* plaintext names: a real root gocryptfs.conf is shown as this */
	char collision[64];
	pthread_mutex_t lock;	/* protects hl and ns */
	struct rfs_hl **hl;	/* buckets */
	size_t hl_size;
	/* inode number namespaces (see rdir_ino) */
	struct rfs_ns *ns;
	size_t nns;
	struct rfs_longs longs;
};

void rdir_longs_fini(struct rfs *r);

/* A directory's paths and IV; release with rpath_put. */
struct rpath {
	char *buf;	    /* "plain\0cipher\0", malloc'ed */
	const char *plain;  /* "" for the root */
	const char *cipher;
	size_t plen, clen;
	uint8_t iv[NAMES_DIRIV_LEN];
};

int rpath_get(struct fs *fs, struct inode *dir, struct rpath *rp);
void rpath_put(struct rpath *rp);

/* The view name of backing entry name in directory dir (IV iv): stored is
 * what the listing shows (hashed if long, RFS_VNAME_MAX), cname the full
 * encrypted name (NAMES_MAX_CNAME). Returns 0, 1 if the name is long, or
 * -errno. */
int rname_encrypt(struct fs *fs, struct inode *dir, const uint8_t *iv,
		  const char *name, char *stored, char *cname);
/* dir's plaintext path joined with name; malloc'ed. */
char *rpath_join(const char *dir, size_t dlen, const char *name);
/* The path of name in the directory of rp is excluded. */
bool rpath_excluded(struct fs *fs, const struct rpath *rp, const char *name);

/* A non-directory entry through its first link: where it is and its
 * cipher path (for the file ID and the symlink nonce). Release with
 * rentry_put. */
struct rentry {
	struct loc loc;	  /* parent (pinned) and backing name */
	char *cipher;	  /* malloc'ed */
	const char *base; /* last component of cipher */
};

int rentry_get(struct fs *fs, struct inode *in, struct rentry *e);
void rentry_put(struct fs *fs, struct rentry *e);
/* in is the config shown in the root as gocryptfs.conf (its own bytes). */
bool rdir_is_conf(struct fs *fs, const struct inode *in);

/* Namespace (rdir.c). */
int rdir_lookup(struct fs *fs, struct inode *dir, const char *name,
		struct inode **out, struct stat *st);
/* Backing attributes of what in shows (virtual: of what it describes). */
int rdir_stat(struct fs *fs, struct inode *in, struct stat *st);
int rdir_readlink(struct fs *fs, struct inode *in, char *buf, size_t cap);
int rdir_list_load(struct fs *fs, struct inode *dir, struct dir_list *dl);
int rdir_list_entry(struct fs *fs, struct inode *dir, int dfd,
		    const struct dir_ent *d, struct inode **in,
		    struct stat *st);
/* Content of a virtual file (diriv: the IV, .name: the encrypted name)
 * into buf (NAMES_MAX_CNAME); *len its length. */
int rdir_virtual_content(struct fs *fs, struct inode *in, char *buf,
			 size_t *len);
/* The st_ino the view shows for backing inode ino on dev, of kind (enum
 * inode_kind). */
uint64_t rdir_ino(struct fs *fs, dev_t dev, uint64_t ino, unsigned char kind);
/* Attributes the view shows for in, from the backing ones (fe.h
 * fix_attr). */
void rdir_fix_attr(struct fs *fs, const struct inode *in, struct stat *st);

/* Contents (rfile.c). */
int rfile_open(struct fs *fs, struct inode *in);
int rfile_read(struct fs *fs, struct inode *in, size_t size, uint64_t off,
	       const uint8_t **data, size_t *len);
int rfile_lseek(struct fs *fs, struct inode *in, uint64_t off, int whence,
		uint64_t *res);
void rfile_fini(struct fs *fs);

static inline struct rfs *rfs_of(const struct fs *fs)
{
	return fs->fe_state;
}

#endif
