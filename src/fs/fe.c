// SPDX-License-Identifier: MIT
/*
 * Helpers and handlers the forward and reverse frontends share (fe.h): the
 * replies that carry an inode or attributes, INIT, FORGET, STATFS, and open
 * directories. An open directory holds a listing snapshot made by the
 * frontend's list_load at offset 0; READDIR and READDIRPLUS page through
 * it, READDIRPLUS looking up each entry through the frontend's list_entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/chan.h"
#include "fs/fe.h"
#include "fs/file.h"
#include "fs/inode.h"

struct inode *fe_in(fuse_req_t req, fuse_ino_t ino)
{
	return inode_get(fe_fs(req), ino);
}

int dir_list_add(struct dir_list *dl, const char *name, const char *stored,
		 ino_t ino, unsigned char type, unsigned char kind)
{
	struct dir_ent *e;

	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 64;
		struct dir_ent *ne = realloc(dl->ents, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		dl->ents = ne;
		dl->cap = cap;
	}
	e = &dl->ents[dl->n];
	e->name = strdup(name);
	e->stored = strdup(stored);
	if (!e->name || !e->stored) {
		free(e->name);
		free(e->stored);
		return -ENOMEM;
	}
	e->ino = ino;
	e->type = type;
	e->kind = kind;
	dl->n++;
	return 0;
}

void dir_list_free(struct dir_list *dl)
{
	size_t i;

	for (i = 0; i < dl->n; i++) {
		free(dl->ents[i].name);
		free(dl->ents[i].stored);
	}
	free(dl->ents);
	memset(dl, 0, sizeof(*dl));
}

int fe_dir_stream(int dfd, DIR **out)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	*out = fdopendir(fd);
	if (!*out) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return 0;
}

int fe_list_backing(int dfd, struct dir_list *dl, fe_list_fn *fn, void *arg)
{
	struct dirent *de;
	DIR *d = NULL;
	int rc;

	rc = fe_dir_stream(dfd, &d);
	while (!rc) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			rc = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			rc = dir_list_add(dl, de->d_name, de->d_name,
					  de->d_ino, DT_DIR, INODE_REAL);
		else
			rc = fn(arg, de, dl);
	}
	if (d)
		closedir(d);
	return rc;
}

/* The frontend's attributes, then -force_owner. */
static void fix_attr(struct fs *fs, struct inode *in, struct stat *st)
{
	fs->fe->fix_attr(fs, in, st);
	if (fs->opt.force_owner) {
		st->st_uid = fs->opt.owner_uid;
		st->st_gid = fs->opt.owner_gid;
	}
}

void fe_fill_entry(struct fs *fs, struct fuse_entry_param *e,
		   struct inode *in, const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = inode_nodeid(fs, in);
	e->attr = *st;
	fix_attr(fs, in, &e->attr);
	e->attr_timeout = fs_cache_timeout(fs);
	e->entry_timeout = fs_cache_timeout(fs);
}

void fe_reply_entry(fuse_req_t req, int rc, struct inode *in,
		    const struct stat *st)
{
	struct fs *fs = fe_fs(req);
	struct fuse_entry_param e;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fe_fill_entry(fs, &e, in, st);
	if (fuse_reply_entry(req, &e) < 0)
		inode_forget(fs, in, 1);
}

void fe_reply_lookup(fuse_req_t req, int rc, struct inode *in,
		     const struct stat *st)
{
	struct fs *fs = fe_fs(req);
	struct fuse_entry_param e;

	if (rc != -ENOENT || fs_cache_timeout(fs) <= 0) {
		fe_reply_entry(req, rc, in, st);
		return;
	}
	/* A negative entry: the kernel remembers that the name is absent
	 * (compilers and interpreters look for many absent files). */
	memset(&e, 0, sizeof(e));
	e.entry_timeout = fs_cache_timeout(fs);
	fuse_reply_entry(req, &e);
}

void fe_reply_attr(fuse_req_t req, int rc, struct inode *in, struct stat *st)
{
	struct fs *fs = fe_fs(req);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fix_attr(fs, in, st);
	fuse_reply_attr(req, st, fs_cache_timeout(fs));
}

void fe_init(void *userdata, struct fuse_conn_info *conn)
{
	const struct fs *fs = userdata;

	/* -acl: the kernel checks permissions against the POSIX ACLs, which
	 * it reads and writes as the system.posix_acl_* xattrs (xattr.c
	 * passes them through to the backing files unencrypted). */
	if (fs->opt.acl) {
		if (conn->capable & FUSE_CAP_POSIX_ACL)
			conn->want |= FUSE_CAP_POSIX_ACL;
		else
			log_err("-acl: the kernel cannot enforce ACLs on FUSE");
	}
	/* Always READDIRPLUS, not only for the first chunk of a directory
	 * (the default "auto" mode): entries of later chunks would each cost a
	 * LOOKUP when a program then opens or unlinks them (rm -rf, find |
	 * xargs), and a directory listing costs us one fstatat per entry
	 * either way. */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* Forward mode clears set-id bits on writes itself (ops.c,
	 * kill_priv); a read-only view has none to clear. */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
	/* A symlink's target never changes: let the kernel cache it, where
	 * every change goes through this mount (a replaced symlink is a new
	 * inode then). Not with -sharedstorage or in reverse mode: another
	 * mount or the plain tree may replace a symlink by one that gets
	 * the freed inode number, the same node here, and the kernel would
	 * go on showing the old target. */
	if ((conn->capable & FUSE_CAP_CACHE_SYMLINKS) && fs->fe->sole_writer &&
	    !fs->opt.sharedstorage)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE |
				  FUSE_CAP_WRITEBACK_CACHE);
	conn->max_write = 1u << 20;
	/* The max_read mount option (fs.c: 1 MiB, unless the user's -o says
	 * otherwise): libfuse refuses any other value. */
	conn->max_read = fs->max_read;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	/* Killpriv v2 leaves security.capability to us as well: only
	 * without -suid, where no file has capabilities (xattr.c). */
	chan_init_wants(conn->want & FUSE_CAP_PARALLEL_DIROPS,
			conn->want & FUSE_CAP_HANDLE_KILLPRIV,
			(conn->want & FUSE_CAP_HANDLE_KILLPRIV) &&
				!fs->opt.suid);
}

void fe_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	inode_forget(fe_fs(req), fe_in(req, ino), nlookup);
	fuse_reply_none(req);
}

/* When the kernel has dropped many inodes (memory pressure, drop_caches),
 * give the memory they held back to the system: malloc keeps freed memory
 * in its per-thread pools otherwise, and the daemon's RSS would stay at its
 * high-water mark. At most once per TRIM_DROP inodes dropped. */
#define TRIM_DROP 16384

static void trim_after_forgets(struct fs *fs)
{
	static atomic_size_t high;
	size_t n, h;

	pthread_mutex_lock(&fs->lock);
	n = fs->count;
	pthread_mutex_unlock(&fs->lock);
	h = atomic_load(&high);
	if (n > h) {
		atomic_store(&high, n);
	} else if (h - n >= TRIM_DROP &&
		   atomic_compare_exchange_strong(&high, &h, n)) {
		malloc_trim(0);
	}
}

void fe_forget_multi(fuse_req_t req, size_t count,
		     struct fuse_forget_data *forgets)
{
	struct fs *fs = fe_fs(req);
	size_t i;

	for (i = 0; i < count; i++)
		inode_forget(fs, fe_in(req, forgets[i].ino),
			     forgets[i].nlookup);
	fuse_reply_none(req); /* req is gone */
	trim_after_forgets(fs);
}

void fe_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (fstatvfs(fe_fs(req)->root_fd, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

/* An open directory: its listing snapshot. Handles still open when the
 * daemon stops are freed by fe_fini. The list is protected by fs->lock. */
struct dir_handle {
	struct dir_list dl;
	struct dir_handle *prev, *next;
};

static void release_dir(struct fs *fs, struct dir_handle *h)
{
	pthread_mutex_lock(&fs->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->dir_handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->lock);
	atomic_fetch_sub(&fs->nopen, 1);
	dir_list_free(&h->dl);
	free(h);
}

/* Listings without a handle. Where the kernel may keep listings
 * (fs->sole_writer), OPENDIR answers ENOSYS: the kernel then sends neither
 * OPENDIR nor RELEASEDIR again (two round trips per directory opened),
 * keeps listings by itself (FUSE's default without opendir) and sends
 * READDIR without a handle. A listing is read into a snapshot at offset 0,
 * which waits here between its READDIRs until a READDIR finds its end. Two
 * programs may list one directory at once, so a listing has an id of its
 * own, which its entries' offsets carry (LISTING_OFF): the next READDIR of
 * a listing finds its own snapshot, never another's (where entries
 * removed meanwhile would shift every later one). PARKED_MAX at a time,
 * PARKED_PER_DIR of one directory and PARKED_ENTS entries in all besides
 * the PARKED_BIG largest, the least recently used dropped: a listing
 * abandoned midway, or one of very many in progress at once (a walk that
 * keeps a listing of every level open, as nftw does, goes hundreds of
 * levels deep before one is dropped).
 * A listing continued after its snapshot was dropped reads the directory
 * anew and goes on after the entry it returned last, which its offsets
 * name (a hash of its name); if that entry is gone (a walk that deletes
 * what it lists), from the start of the new listing, which then holds what
 * is left: entries may come twice, none that stayed is skipped.
 * Protected by fs->lock. */
#define PARKED_MAX 256
#define PARKED_PER_DIR 64
#define PARKED_ENTS (1u << 16)
#define PARKED_BIG 4
struct dir_parked {
	struct inode *dir; /* NULL: a free slot */
	dev_t dev;
	ino_t ino;
	uint32_t id; /* the listing's */
	unsigned long age;
	struct dir_list dl;
};

/* The offset after entry i of listing id, whose name has the check chk:
 * the id (1-255) in bits 55-62 (an offset is never negative), chk (23
 * bits) in 32-54, i + 1 below. */
#define LISTING_OFF(id, chk, i)                                              \
	((off_t)((uint64_t)(id) << 55 | (uint64_t)(chk) << 32 | ((i) + 1)))
#define LISTING_ID(off) ((uint32_t)((uint64_t)(off) >> 55))
#define LISTING_CHECK(off) ((uint32_t)((uint64_t)(off) >> 32) & 0x7fffffu)
#define LISTING_INDEX(off) ((size_t)((uint64_t)(off) & 0xffffffffu))

static uint32_t name_check(const char *name)
{
	uint32_t h = 0x811c9dc5u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 0x01000193u;
	return (h ^ (h >> 23)) & 0x7fffffu;
}

static uint32_t new_listing_id(void)
{
	static atomic_uint next;
	uint32_t id;

	do
		id = atomic_fetch_add(&next, 1) & 0xffu;
	while (!id);
	return id;
}

/* Where a listing continued at off goes on in dl: after the entry off
 * names, at the index off gives if that entry is still there, else
 * wherever it is now; from the start if it is gone. */
static size_t resume_at(const struct dir_list *dl, off_t off)
{
	size_t i = LISTING_INDEX(off), j;
	uint32_t chk = LISTING_CHECK(off);

	if (i >= 1 && i <= dl->n && name_check(dl->ents[i - 1].name) == chk)
		return i;
	for (j = 0; j < dl->n; j++)
		if (name_check(dl->ents[j].name) == chk)
			return j + 1;
	return 0;
}

static bool parked_is(const struct dir_parked *p, const struct inode *dir)
{
	return p->dir == dir && p->dev == dir->dev && p->ino == dir->ino;
}

/* The snapshot parked for listing id of dir into *dl, if any. */
static void parked_take(struct fs *fs, struct inode *dir, uint32_t id,
			struct dir_list *dl)
{
	struct dir_parked *p;
	size_t i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; fs->parked && i < PARKED_MAX; i++) {
		p = &fs->parked[i];
		if (parked_is(p, dir) && p->id == id) {
			*dl = p->dl;
			memset(p, 0, sizeof(*p));
			break;
		}
	}
	pthread_mutex_unlock(&fs->lock);
}

/* Whether parked listing q comes before r by size, largest first (ties:
 * by slot). */
static bool parked_larger(const struct dir_parked *q,
			  const struct dir_parked *r)
{
	return q->dl.n > r->dl.n || (q->dl.n == r->dl.n && q < r);
}

/* Drop the least recently used snapshots other than keep's until those
 * left and n more entries fit in PARKED_ENTS (or none is left). The
 * PARKED_BIG largest (the one of n entries about to be parked counted
 * too, first among equals) are not counted and never dropped to make
 * room: a listing larger than PARKED_ENTS would otherwise be dropped by
 * the next listing of any other directory, and read anew at each of its
 * READDIRs (quadratic in its size). fs->lock held. */
static void drop_for_room(struct fs *fs, struct dir_parked *keep, size_t n)
{
	struct dir_parked *big[PARKED_BIG], *old;
	unsigned nbig = 0, k, j;
	bool new_big = true;
	size_t total, i;

	/* the largest parked, then whether the new one is among them */
	for (i = 0; i < PARKED_MAX; i++) {
		struct dir_parked *q = &fs->parked[i];

		if (!q->dir || q == keep)
			continue;
		for (k = 0; k < nbig && !parked_larger(q, big[k]); k++)
			;
		if (k == PARKED_BIG)
			continue;
		if (nbig < PARKED_BIG)
			nbig++;
		for (j = nbig - 1; j > k; j--)
			big[j] = big[j - 1];
		big[k] = q;
	}
	for (k = 0; k < nbig && big[k]->dl.n > n; k++)
		;
	if (k == PARKED_BIG)
		new_big = false;
	else if (nbig == PARKED_BIG)
		nbig--; /* the smallest of them is pushed out by the new one */
	for (;;) {
		total = new_big ? 0 : n;
		old = NULL;
		for (i = 0; i < PARKED_MAX; i++) {
			struct dir_parked *q = &fs->parked[i];

			if (!q->dir || q == keep)
				continue;
			for (k = 0; k < nbig && big[k] != q; k++)
				;
			if (k < nbig)
				continue;
			total += q->dl.n;
			if (!old || q->age < old->age)
				old = q;
		}
		if (total <= PARKED_ENTS || !old)
			return;
		dir_list_free(&old->dl);
		memset(old, 0, sizeof(*old));
	}
}

/* Park dl as listing id of dir (taken over; freed if there is no room). */
static void parked_put(struct fs *fs, struct inode *dir, uint32_t id,
		       struct dir_list *dl)
{
	struct dir_parked *p = NULL, *mine = NULL;
	struct dir_list old = { 0 };
	static unsigned long clock;
	unsigned of_dir = 0;
	size_t i;

	pthread_mutex_lock(&fs->lock);
	if (!fs->parked)
		fs->parked = calloc(PARKED_MAX, sizeof(*fs->parked));
	/* The listing's own slot; else, with PARKED_PER_DIR of this
	 * directory parked, the oldest of them; else a free slot, else the
	 * oldest. */
	for (i = 0; fs->parked && i < PARKED_MAX; i++) {
		struct dir_parked *q = &fs->parked[i];

		if (parked_is(q, dir)) {
			if (q->id == id) {
				p = q;
				break;
			}
			of_dir++;
			if (!mine || q->age < mine->age)
				mine = q;
		}
		if (!p || !q->dir || (p->dir && q->age < p->age))
			p = q;
	}
	if (i == PARKED_MAX && of_dir >= PARKED_PER_DIR)
		p = mine;
	if (p)
		drop_for_room(fs, p, dl->n);
	if (p) {
		old = p->dl;
		p->dir = dir;
		p->dev = dir->dev;
		p->ino = dir->ino;
		p->id = id;
		p->age = ++clock;
		p->dl = *dl;
	} else {
		old = *dl;
	}
	pthread_mutex_unlock(&fs->lock);
	memset(dl, 0, sizeof(*dl));
	dir_list_free(&old);
}

void fe_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fe_fs(req);
	struct dir_handle *h;

	(void)ino;
	if (fs->sole_writer) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	h->next = fs->dir_handles;
	if (h->next)
		h->next->prev = h;
	fs->dir_handles = h;
	pthread_mutex_unlock(&fs->lock);
	atomic_fetch_add(&fs->nopen, 1);
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(req, fi) < 0)
		release_dir(fs, h);
}

/*
 * Bare listings. A READDIRPLUS answer with every entry's attributes costs an
 * fstatat per entry here and a new inode per entry in the kernel: worth it
 * when the program goes on to look at the entries (ls -l, du, rm -rf: no
 * LOOKUP each), wasted when it only wants names and types (find -name,
 * git's search for untracked files, tab completion), where a cold find took
 * twice as long as with plain listings. So a listing leaves out the
 * attributes of entries other than directories (their type comes from the
 * backing's listing; directories keep theirs, as walks descend into them)
 * until programs look up entries of bare listings: BARE_WANTED such lookups
 * switch to full listings for the next FULL_SPAN listings, after which a
 * bare listing of a small directory probes again: BARE_WANTED to PROBE_MAX
 * entries to leave bare, so that a program that looks at them all decides
 * before its next listing, at the price of one LOOKUP each. A mount starts
 * as at the end of a span (fs_new). Only where d_ino is the number stat
 * shows (fs_frontend.listing_ino). What a program sees is the same either
 * way. The kernel keeps listings (sole_writer): a walk that wants
 * attributes after one that did not (ls -l after find) sends one LOOKUP
 * per file of the bare listings it reads from the kernel's copy, once.
 */
#define BARE_WANTED 4
#define FULL_SPAN 64
#define PROBE_MAX 64

void fe_looked_up(struct fs *fs, struct inode *dir, const struct inode *in)
{
	if (!in || in->type == S_IFDIR || dir->type != S_IFDIR ||
	    !atomic_load(&dir->listed_bare))
		return;
	if (atomic_fetch_add(&fs->bare_lookups, 1) + 1 >= BARE_WANTED) {
		atomic_store(&fs->bare_lookups, 0);
		atomic_store(&fs->full_listings, FULL_SPAN);
	}
}

static bool may_be_bare(const struct dir_ent *d)
{
	return d->type != DT_DIR && d->type != DT_UNKNOWN;
}

/* Whether a listing with these entries may be the probe: BARE_WANTED to
 * PROBE_MAX entries to leave bare (counted no further than that). */
static bool fit_to_probe(const struct dir_list *dl)
{
	size_t n = 0, i;

	for (i = 0; i < dl->n && n <= PROBE_MAX; i++)
		n += may_be_bare(&dl->ents[i]);
	return n >= BARE_WANTED && n <= PROBE_MAX;
}

/* Whether a listing of dir that starts now sends every entry's attributes. */
static bool listing_full(struct fs *fs, struct inode *dir,
			 const struct dir_list *dl)
{
	unsigned left = atomic_load(&fs->full_listings);
	int fit = -1; /* fit_to_probe, once it is needed */
	bool full;

	if (!fs->fe->listing_ino)
		return true;
	for (;;) {
		if (left == 1 && fit < 0)
			fit = fit_to_probe(dl);
		/* A listing unfit to probe does not end the span. */
		if (left == 0 || (left == 1 && !fit)) {
			full = left > 0;
			break;
		}
		/* The last of the span is the probe. */
		if (atomic_compare_exchange_weak(&fs->full_listings, &left,
						 left - 1)) {
			full = left > 1;
			break;
		}
	}
	atomic_store(&dir->listed_bare, !full);
	return full;
}

/* The offset after entry i: with a handle its index, else LISTING_OFF. */
static off_t next_off(const struct dir_handle *h, uint32_t id,
		      const struct dir_list *dl, size_t i)
{
	return h ? (off_t)(i + 1)
		 : LISTING_OFF(id, name_check(dl->ents[i].name), i);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = fe_fs(req);
	struct inode *dir = fe_in(req, ino);
	struct dir_handle *h = (struct dir_handle *)(uintptr_t)fi->fh;
	struct dir_list own = { 0 }, *dl = h ? &h->dl : &own;
	struct fuse_entry_param e;
	struct stat st;
	char *buf = NULL;
	size_t pos = 0, i, ent, start = (size_t)off;
	uint32_t id = 0;
	int rc = 0, dfd = -1;
	bool full = false;

	/* Without a handle: a listing's id and index are in its offsets; at
	 * offset 0 one starts with an id of its own. */
	if (!h && off == 0) {
		id = new_listing_id();
	} else if (!h) {
		id = LISTING_ID(off);
		parked_take(fs, dir, id, &own);
	}
	if (off == 0 || !dl->ents) {
		dir_list_free(dl);
		rc = fs->fe->list_load(fs, dir, dl);
		if (rc)
			goto out;
	}
	if (!h && off)
		start = resume_at(dl, off);
	buf = malloc(size);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	if (plus) {
		/* Later chunks of a listing go as its first did. */
		full = off == 0 ? listing_full(fs, dir, dl) :
				  !atomic_load(&dir->listed_bare);
		dfd = dirfd_get(fs, dir);
		if (dfd < 0) {
			rc = dfd;
			dfd = -1;
			goto out;
		}
	}
	for (i = start; i < dl->n; i++) {
		struct dir_ent *d = &dl->ents[i];
		struct inode *in = NULL;

		if (!plus) {
			memset(&st, 0, sizeof(st));
			st.st_ino = d->ino;
			st.st_mode = (mode_t)d->type << 12;
			ent = fuse_add_direntry(req, buf + pos, size - pos,
						d->name, &st, next_off(h, id, dl, i));
		} else if (!strcmp(d->name, ".") || !strcmp(d->name, "..") ||
			   (!full && may_be_bare(d))) {
			/* No node id: the kernel takes name, number and
			 * type, and asks with a LOOKUP when it needs more. */
			memset(&e, 0, sizeof(e));
			e.attr.st_ino = d->ino;
			e.attr.st_mode = (mode_t)d->type << 12;
			ent = fuse_add_direntry_plus(req, buf + pos,
						     size - pos, d->name, &e,
						     next_off(h, id, dl, i));
		} else {
			rc = fs->fe->list_entry(fs, dir, dfd, d, &in, &st);
			if (rc == 1) {
				rc = 0;
				continue; /* vanished meanwhile */
			}
			if (rc)
				break;
			fe_fill_entry(fs, &e, in, &st);
			ent = fuse_add_direntry_plus(req, buf + pos,
						     size - pos, d->name, &e,
						     next_off(h, id, dl, i));
		}
		if (ent > size - pos) {
			if (in)
				inode_forget(fs, in, 1);
			break;
		}
		pos += ent;
	}
out:
	if (dfd >= 0)
		dirfd_put(fs, dir);
	/* Without a handle: an empty answer or an error ends the listing.
	 * The snapshot is parked before the answer goes: the kernel sends
	 * the next READDIR as soon as it has it, to another thread, which
	 * would otherwise find none, read the directory anew and leave this
	 * one parked, stale, for a later listing to continue from. */
	if (!h && pos && !rc)
		parked_put(fs, dir, id, &own);
	else
		dir_list_free(&own);
	if (rc && !pos)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

void fe_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

void fe_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

void fe_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	release_dir(fe_fs(req), (struct dir_handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

void fe_fini(struct fs *fs)
{
	size_t i;

	while (fs->dir_handles)
		release_dir(fs, fs->dir_handles);
	open_files_fini(fs);
	for (i = 0; fs->parked && i < PARKED_MAX; i++)
		dir_list_free(&fs->parked[i].dl);
	free(fs->parked);
	fs->parked = NULL;
}
