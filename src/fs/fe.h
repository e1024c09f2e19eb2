/* SPDX-License-Identifier: MIT */
/*
 * What the two frontends over the FUSE machinery share. A frontend is a view
 * of the backing directory: forward mode (ops.c: CIPHERDIR shown decrypted)
 * and reverse mode (rops.c: a plaintext directory shown encrypted). Each has
 * its own fuse_lowlevel_ops table and per-frontend state; both use the same
 * request channel, inode table, directory-fd cache and the helpers here:
 * entry and attribute replies, forget, statfs, INIT, and open directories
 * with their listing snapshots (READDIR/READDIRPLUS served from them).
 */
#ifndef FS_FE_H
#define FS_FE_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

struct fs;
struct inode;

/* One entry of a listing snapshot. */
struct dir_ent {
	char *name;	/* as shown in the view */
	char *stored;	/* backing name */
	ino_t ino;
	unsigned char type; /* DT_* */
	unsigned char kind; /* frontend's entry kind (inode.h INODE_*) */
};

struct dir_list {
	struct dir_ent *ents;
	size_t n, cap;
};

/* Append an entry (strings copied). Returns 0 or -ENOMEM. */
int dir_list_add(struct dir_list *dl, const char *name, const char *stored,
		 ino_t ino, unsigned char type, unsigned char kind);
void dir_list_free(struct dir_list *dl);

/* A directory stream over the directory dfd refers to, on a new descriptor
 * (closedir() leaves dfd open). Returns 0 or -errno. */
int fe_dir_stream(int dfd, DIR **out);

/* Read the backing directory dfd into dl: "." and ".." as they are, every
 * other entry through fn, which adds what the view shows of it (if
 * anything) and returns 0 or -errno. Returns 0 or the first error. */
typedef int fe_list_fn(void *arg, const struct dirent *de,
		       struct dir_list *dl);
int fe_list_backing(int dfd, struct dir_list *dl, fe_list_fn *fn, void *arg);

struct fs_frontend {
	const char *subtype;	/* FUSE subtype (mount type fuse.<subtype>) */
	const struct fuse_lowlevel_ops *ops;
	bool read_only;		/* always mounted ro */
	/* How long the kernel may cache what the view shows on a local
	 * backing (seconds; see fs_cache_timeout). */
	double cache_timeout;
	/* Nothing but the kernel changes what the view shows (on a local
	 * backing, without -sharedstorage): it may keep file pages and
	 * directory listings across opens (fs->sole_writer). */
	bool sole_writer;
	/* A listing entry's d_ino is the inode number the view shows, so
	 * READDIRPLUS may send an entry without attributes (fe.c). */
	bool listing_ino;
	/* Build the frontend's state from arg in fs_new (may be NULL). */
	int (*setup)(struct fs *fs, const void *arg);
	/* Free it in fs_free; no request runs any more (may be NULL). */
	void (*teardown)(struct fs *fs);
	/* Backing attributes -> what the kernel sees (sizes). */
	void (*fix_attr)(struct fs *fs, struct inode *in,
			 struct stat *st);
	/* Listing snapshot of dir ("." and ".." first). */
	int (*list_load)(struct fs *fs, struct inode *dir,
			 struct dir_list *dl);
	/* For READDIRPLUS: the inode (one kernel reference) and attributes
	 * (not yet fixed) of entry d of dir, whose fd is dfd. Returns 0, 1
	 * to leave the entry out (gone meanwhile), or -errno. */
	int (*list_entry)(struct fs *fs, struct inode *dir, int dfd,
			  const struct dir_ent *d, struct inode **in,
			  struct stat *st);
};

static inline struct fs *fe_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

struct inode *fe_in(fuse_req_t req, fuse_ino_t ino);

/* Reply an entry (rc 0: in holds one kernel reference for it, dropped if
 * the reply fails) or the error -rc. st is fixed with fix_attr. */
void fe_reply_entry(fuse_req_t req, int rc, struct inode *in,
		    const struct stat *st);
void fe_fill_entry(struct fs *fs, struct fuse_entry_param *e,
		   struct inode *in, const struct stat *st);
/* fe_reply_entry for LOOKUP: -ENOENT becomes a negative entry the kernel
 * caches as long as names (fs_cache_timeout). */
void fe_reply_lookup(fuse_req_t req, int rc, struct inode *in,
		     const struct stat *st);
/* A LOOKUP of a name in dir found in (bare listings, fe.c). */
void fe_looked_up(struct fs *fs, struct inode *dir, const struct inode *in);
/* Reply attributes (fixed with fix_attr) or the error -rc. */
void fe_reply_attr(fuse_req_t req, int rc, struct inode *in,
		   struct stat *st);

/* Handlers both frontends use as they are. */
void fe_init(void *userdata, struct fuse_conn_info *conn);
void fe_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fe_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets);
void fe_statfs(fuse_req_t req, fuse_ino_t ino);
void fe_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fe_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fe_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fe_releasedir(fuse_req_t req, fuse_ino_t ino,
		   struct fuse_file_info *fi);

/* Free what open directory handles still hold when the daemon stops (the
 * kernel sends no RELEASEDIR after the unmount). No request may run. */
void fe_fini(struct fs *fs);

#endif
