/* SPDX-License-Identifier: MIT */
/*
 * Private state of the daemon: struct fs and the inode table. An inode is
 * keyed by the backing (dev, ino) and is reached through its parent's
 * directory fd plus its stored (backing) name; no fd is pinned per inode.
 * Directory fds live in a bounded LRU cache, file fds only while a FUSE
 * handle is open. All links (parent, name, hash chain, LRU) are protected by
 * fs->lock; syscalls never run under it.
 *
 * A frontend may also show entries that no backing directory holds (reverse
 * mode's gocryptfs.diriv and .name files). Such a virtual inode is a child
 * of its directory like any other: its one link has the directory as parent
 * (which the link pins) and as name the backing name of what it describes;
 * it is found by that link and its kind, never by (dev, ino).
 */
#ifndef FS_INODE_H
#define FS_INODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/rwlock.h"
#include "crypto/content.h"
#include "crypto/names.h"
#include "fs/fs.h"

/* Stored names on the backing filesystem are at most 255 bytes. */
#define INODE_NAME_MAX 256

struct ctlsock_ops;
struct dir_handle;
struct dir_parked;
struct file_tail;
struct fuse_session;
struct inode;

enum inode_kind {
	INODE_REAL = 0,	/* a backing object */
	INODE_VDIRIV,	/* the directory IV file of the link's parent; the
			 * link name is "" */
	INODE_VNAME,	/* the long-name file of the entry the link names */
};

/* One known name of an inode: the stored name in parent (pinned). Hard
 * links give several. Every name the kernel was given for the inode is
 * kept while the inode lives: once all of them are removed, the backing
 * number may be reused by a new object (inode_lookup_add), so a name
 * forgotten while the kernel still held it would split one file into two
 * kernel inodes with different cached attributes. */
struct ilink {
	struct ilink *next;	/* next link of the same inode */
	struct ilink **pprev;	/* what points to this one in that list */
	struct ilink *hnext;	/* chain in fs->ltab */
	struct inode *owner;
	struct inode *parent;
	char name[];
};

/* An inode's type never changes (inode_lookup_add gives a reused (dev, ino)
 * of another type a new inode), so what only a directory needs and what
 * only other types need share memory: use the first part of the union only
 * where type is S_IFDIR, the second only where it is not. */
struct inode {
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;	/* kernel references (lookup/forget) */
	struct ilink *links;	/* known names, most recent first */
	struct inode *hnext;	/* hash chain */
	unsigned pins;		/* children, handles, in-flight users */
	uint16_t type;		/* S_IFMT bits */
	unsigned char kind;	/* enum inode_kind */
	bool stale;		/* (dev, ino) reused: lookups skip it */
	/* Room for one link with a name of up to link_room bytes right after
	 * the struct (in the same allocation), and whether a link uses it
	 * (protected by fs->lock). */
	unsigned char link_room;
	bool link_used;

	/* xattr negative cache (under inode_hdr_lock, see xattr.c): the
	 * backing object had no attribute we show, valid until xnone_until
	 * (CLOCK_MONOTONIC ns) while xgen == xnone_gen. xbusy counts
	 * setxattr/removexattr calls in progress; each bumps xgen. */
	unsigned xgen, xnone_gen, xbusy;
	uint64_t xnone_until;

	union {
		/* Directories. */
		struct {
			/* Directory fd cache (protected by fs->lock). */
			int dfd;
			unsigned dfd_users;
			struct inode *lru_prev, *lru_next;

			/* Directory IV cache (protected by fs->lock); with
			 * -sharedstorage valid until iv_until
			 * (CLOCK_MONOTONIC_COARSE ns, dir.c dir_iv). */
			bool iv_valid;
			uint8_t iv[NAMES_DIRIV_LEN];
			uint64_t iv_until;

			/* Reverse frontend (protected by fs->lock): the
			 * plaintext and cipher paths, "plain\0cipher\0"
			 * (malloc'ed), valid while rgen equals fs->path_gen;
			 * its IV goes to iv/iv_valid. */
			unsigned rgen;
			char *rpath;

			/* Its last listing left out the attributes of
			 * entries other than directories (fe.c, bare
			 * listings). */
			atomic_bool listed_bare;
		};
		/* Every other type: open-file state. rw serialises writers
		 * against everything and lets reads run in parallel; fd,
		 * fd_refs, fd_rw change under rw held for writing (and
		 * fs->lock for fd_refs). id/id_valid change under rw for
		 * writing, or under inode_hdr_lock while rw is held for
		 * reading. */
		struct {
			struct rwlock rw;
			int fd;
			unsigned fd_refs;
			/* Under inode_hdr_lock (file.c, take_wb_err):
			 * the last error of a write answered early, how
			 * many there were, and whether a handle reported
			 * the last one. */
			int wb_err;
			uint32_t wb_seq;
			bool wb_seen;
			bool fd_rw;
			bool id_valid;
			bool size_known; /* bsize is the backing file's
					  * size (file.c, backing_size);
					  * under rw */
			uint8_t id[CONTENT_FILE_ID_LEN];
			/* Forward: write-behind started up to this 4 KiB
			 * page of the backing file (file.c); under rw. */
			uint32_t wb_page;
			/* Forward (file.c): the file's partial last block
			 * as the last write left it; under rw held for
			 * writing, freed with the fd. */
			struct file_tail *tail;
			/* A mount is forward or reverse: what only one of
			 * the two frontends uses shares memory. */
			union {
				/* Forward (file.c). */
				struct {
					uint64_t bsize;
					/* The backing file as we last
					 * left it or saw it (renew_stamp):
					 * a digest of its ctime, mtime and
					 * size, 0 for none; changed under
					 * rw (held for reading by
					 * file_restamp). */
					_Atomic uint64_t kc_stamp;
				};
				/* Reverse (rfile.c): a regular file's
				 * block-0 IV (spec §5.4), valid with
				 * id_valid. */
				uint8_t b0iv[16];
			};
		};
	};
};

struct fs_frontend;

struct fs {
	struct fs_options opt;
	const struct fs_frontend *fe;	/* the view (fe.h) */
	void *fe_state;			/* the frontend's own state */
	char *cipherdir;
	char *mountpoint;
	char *fsname;
	char *fuse_opts;
	unsigned max_read;		/* the max_read mount option (fs.c) */
	struct content *content;
	struct names *names;
	bool plaintext, diriv;
	size_t cbs;			/* cipher block size */
	double cache_timeout;		/* fs_cache_timeout */
	bool local;			/* the backing is a local filesystem */
	bool in_place;			/* its overwrites need no new space */
	bool delalloc;			/* no early answer on a reservation:
					 * it allocates at writeback (or, zfs,
					 * fallocate reserves nothing) */
	bool ack_on_room;		/* delalloc, but no quota can refuse a
					 * write: answered early while the
					 * backing has ACK_ROOM free (file.c) */
	bool disk;			/* local, with a page cache in front of
					 * a device (not tmpfs or ramfs) */
	bool sole_writer;		/* fe->sole_writer, on a local backing,
					 * without -sharedstorage */
	struct fuse_session *se;
	int root_fd;

	pthread_mutex_t lock;
	struct inode root;
	struct inode **htab;
	size_t hsize, count, lcount; /* buckets, inodes, links */
	struct ilink **ltab;		/* (parent, name) -> link */
	struct inode lru;		/* sentinel of the dir-fd LRU list */
	unsigned lru_count, lru_max;
	bool as_root_chown;		/* allow_other as root: chown new */
	struct dir_handle *dir_handles;	/* open directories (fe.c) */
	struct open_file *open_files;	/* open regular files (file.c) */
	struct dir_parked *parked;	/* listings without a handle (fe.c) */
	atomic_int nopen;		/* open file + directory handles */
	pthread_mutex_t read_lock;	/* -serialize_reads */
	/* -ctlsock: the frontend's path translation. fs_new sets the
	 * forward one; a reverse frontend sets its own before fs_run. */
	const struct ctlsock_ops *ctl_ops;
	void *ctl_arg;
	/* Bumped whenever the first link of a directory inode changes: paths
	 * derived from links are stale then. Protected by lock. */
	unsigned path_gen;
	/* Bare listings (fe.c): listings still to send with every entry's
	 * attributes, and lookups of entries of bare listings since the
	 * last switch to them. */
	atomic_uint full_listings, bare_lookups;
	/* Renames and unlinks (dir.c) in progress, and done: while neither
	 * changes, every backing name names what it named before
	 * (names_steady_*). */
	atomic_uint names_busy;
	atomic_ulong names_gen;
	/* Writes answered before they were written (file.c
	 * reserve_and_ack): after a reservation, or on free space alone. */
	atomic_ulong acks_reserved, acks_on_room;
};

/* The "major:minor" of the topmost mount on mnt, from
 * /proc/self/mountinfo (the mount itself is not touched). 0 or -ENOENT. */
int fs_mount_devno(const char *mnt, char *out, size_t cap);

/* How long the kernel may cache names, negative lookups and attributes
 * (and xattr.c its "no attributes" answers), in seconds: the frontend's
 * (fe.h) on a local backing, at most FS_SHORT_TIMEOUT on others, 0 with
 * -sharedstorage, where other mounts change the cipherdir behind our back.
 * Set once in fs_run. */
#define FS_SHORT_TIMEOUT 1.0
static inline double fs_cache_timeout(const struct fs *fs)
{
	return fs->cache_timeout;
}

/* Location of an inode: its parent (pinned) and a copy of its stored name. */
struct loc {
	struct inode *parent;
	char name[INODE_NAME_MAX];
};

int inode_table_init(struct fs *fs);
void inode_table_fini(struct fs *fs);

/* Map a FUSE node id to an inode (root for FUSE_ROOT_ID). */
struct inode *inode_get(struct fs *fs, uint64_t nodeid);
uint64_t inode_nodeid(struct fs *fs, struct inode *in);

/* Find or create the inode for st (child name in parent) and add one
 * kernel reference; updates the parent/name link. Returns NULL on ENOMEM. */
struct inode *inode_lookup_add(struct fs *fs, struct inode *parent,
			       const char *name, const struct stat *st);
/* Find or create the virtual inode of kind (INODE_VDIRIV, INODE_VNAME)
 * linked as (parent, name), with st's dev/ino/type, and add one kernel
 * reference. Returns NULL on ENOMEM. */
struct inode *inode_lookup_virtual(struct fs *fs, struct inode *parent,
				   const char *name, unsigned char kind,
				   const struct stat *st);
/* Drop n kernel references; frees the inode when nothing holds it. */
void inode_forget(struct fs *fs, struct inode *in, uint64_t n);
/* Find an existing inode without taking a reference (NULL if none). The
 * result is pinned; release with inode_unpin. */
struct inode *inode_find_pin(struct fs *fs, dev_t dev, ino_t ino);
/* The inode of the object st known as (parent, name), pinned; NULL if none
 * (by (dev, ino); with -sharedstorage by the name). */
struct inode *inode_find_entry_pin(struct fs *fs, struct inode *parent,
				   const char *name, const struct stat *st);
/* The real inode known by the name (parent, name), pinned; NULL if none. */
struct inode *inode_find_name_pin(struct fs *fs, struct inode *parent,
				  const char *name);
/* The mutex guarding in's file ID while rw is held for reading, its
 * wb_err and its xattr cache: one of a fixed set, picked by the inode's
 * address, so unrelated inodes may share one. Hold it briefly and take no
 * other lock of the daemon's under it, a second one of these included
 * (logging is fine). */
pthread_mutex_t *inode_hdr_lock(const struct inode *in);

void inode_pin(struct fs *fs, struct inode *in);
void inode_unpin(struct fs *fs, struct inode *in);

/* After a rename: in moved from (oldp, oldn) to (newp, newn). */
void inode_move(struct fs *fs, struct inode *in, struct inode *oldp,
		const char *oldn, struct inode *newp, const char *newn);
/* After unlink/rmdir or being replaced: forget the name (parent, name). */
void inode_unlink_name(struct fs *fs, struct inode *in,
		       struct inode *parent, const char *name);

/* Parent + stored name of in. Returns 0, -ESTALE (unlinked) or -EINVAL
 * (root). Release with loc_put. */
int loc_get(struct fs *fs, struct inode *in, struct loc *l);
void loc_put(struct fs *fs, struct loc *l);

/* Around a rename or unlink in the backing and its inode table update. */
void names_change_begin(struct fs *fs);
void names_change_end(struct fs *fs);
/* Whether no rename or unlink runs now (then *gen is for
 * names_steady_end), and whether none ran since names_steady_begin: what
 * a backing name named between the two calls, it named throughout. */
bool names_steady_begin(struct fs *fs, unsigned long *gen);
bool names_steady_end(struct fs *fs, unsigned long gen);

/* A directory fd for in (a directory inode), verified against (dev, ino).
 * Returns the fd (>= 0) or a negative errno. Release with dirfd_put. */
int dirfd_get(struct fs *fs, struct inode *in);
void dirfd_put(struct fs *fs, struct inode *in);
/* Close a cached fd of a directory that goes away. */
void dirfd_drop(struct fs *fs, struct inode *in);

/* Open the regular file name in the directory dfd with flags | O_NOFOLLOW |
 * O_CLOEXEC without opening anything but a regular file, not even for a
 * moment: an O_PATH descriptor is checked first and the file opened
 * through it (/proc/self/fd), so a FIFO never blocks the open and a device
 * node put where a file of ours should be is never opened (a driver's open
 * can act: arm a watchdog, rewind a tape). Anything else is refused with
 * -EIO. The fd comes back without O_NONBLOCK unless flags has it. st (may
 * be NULL) gets its stat. Returns the fd or a negative errno. */
int open_regular_checked_at(int dfd, const char *name, int flags,
			    struct stat *st);

/* Open in's backing object relative to its parent with flags | O_NOFOLLOW |
 * O_CLOEXEC and check that it is still (dev, ino); unless flags has O_PATH,
 * through open_regular_checked_at (regular files only). Returns the fd or a
 * negative errno (-ESTALE: the name holds something else now, or a
 * symlink where in is none). */
int inode_open(struct fs *fs, struct inode *in, int flags);

/* fstatat the inode via its location and check (dev, ino); or fstat its
 * open fd. */
int inode_stat(struct fs *fs, struct inode *in, struct stat *st);

#endif
