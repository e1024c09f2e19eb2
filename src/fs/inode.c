// SPDX-License-Identifier: MIT
/*
 * Inode table and directory-fd cache. The FUSE node id is the address of the
 * struct inode (1 for the root). An inode lives while the kernel holds
 * references (nlookup) or something pins it: a child's parent link, an open
 * handle, or a request in flight. Every backing access goes through the
 * parent's directory fd and the stored name with O_NOFOLLOW, so a symlink
 * placed into CIPHERDIR never leads the daemon outside of it; a re-opened
 * directory is checked against its (dev, ino).
 *
 * With -sharedstorage other mounts delete and re-create objects behind our
 * back, so a backing inode number may soon name another object (and on
 * sshfs the numbers are the client's own, reused after it forgets them): an
 * inode is then the object at one name, found by (parent, name) and its
 * (dev, ino), never by the number alone; hard links are separate inodes
 * (with the same shown inode number).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "common/log.h"
#include "common/openreg.h"
#include "fs/file.h"
#include "fs/inode.h"

static size_t hash_of(const struct fs *fs, dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (fs->hsize - 1);
}

static size_t lhash_of(const struct fs *fs, const struct inode *parent,
		       const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)parent;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 0x100000001b3ULL;
	return (size_t)(h ^ (h >> 32)) & (fs->hsize - 1);
}

static void lt_insert(struct fs *fs, struct ilink *l)
{
	size_t h = lhash_of(fs, l->parent, l->name);

	l->hnext = fs->ltab[h];
	fs->ltab[h] = l;
}

/* Double both tables when they hold more than two inodes per bucket, so
 * that a chain stays one or two long however many inodes the kernel holds
 * (a fixed size made a million files three times slower to create and
 * stat), for 8 to 16 bytes per inode (one per bucket would cost 16 to 32);
 * likewise when there are more than two links per bucket (a file with
 * thousands of names).
 * On ENOMEM the tables stay as they are: longer chains, still correct.
 * fs->lock held. */
static void grow_tables(struct fs *fs)
{
	size_t old = fs->hsize, i;
	struct inode **oh = fs->htab, **nh;
	struct ilink **ol = fs->ltab, **nl;

	if ((fs->count <= 2 * old && fs->lcount <= 2 * old) ||
	    old > SIZE_MAX / 4 / sizeof(*nh))
		return;
	nh = calloc(old * 2, sizeof(*nh));
	nl = calloc(old * 2, sizeof(*nl));
	if (!nh || !nl) {
		free(nh);
		free(nl);
		return;
	}
	fs->hsize = old * 2;
	fs->htab = nh;
	fs->ltab = nl;
	for (i = 0; i < old; i++) {
		while (oh[i]) {
			struct inode *in = oh[i];
			size_t h = hash_of(fs, in->dev, in->ino);

			oh[i] = in->hnext;
			in->hnext = nh[h];
			nh[h] = in;
		}
		while (ol[i]) {
			struct ilink *l = ol[i];

			ol[i] = l->hnext;
			lt_insert(fs, l);
		}
	}
	free(oh);
	free(ol);
}

static void lt_remove(struct fs *fs, struct ilink *l)
{
	struct ilink **pp = &fs->ltab[lhash_of(fs, l->parent, l->name)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == l) {
			*pp = l->hnext;
			return;
		}
	}
}

static void lru_del(struct fs *fs, struct inode *in)
{
	in->lru_prev->lru_next = in->lru_next;
	in->lru_next->lru_prev = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
	fs->lru_count--;
}

static void lru_add_front(struct fs *fs, struct inode *in)
{
	in->lru_next = fs->lru.lru_next;
	in->lru_prev = &fs->lru;
	fs->lru.lru_next->lru_prev = in;
	fs->lru.lru_next = in;
	fs->lru_count++;
}

/* A zeroed inode of type with its type's part set up. */
static void init_inode(struct inode *in, mode_t type)
{
	memset(in, 0, sizeof(*in));
	in->type = (uint16_t)type;
	if (type == S_IFDIR) {
		in->dfd = -1;
	} else {
		in->fd = -1;
		/* Writers first (rwlock.h): a stream of parallel reads must
		 * not starve a write. No path takes in->rw twice, so this
		 * cannot deadlock. */
		rwlock_init(&in->rw);
	}
}

#define HDR_LOCK_BITS 6

/* A path holds at most one of these at a time and takes no lock under it
 * (inode.h), so sharing cannot deadlock; it can only make a thread wait for
 * another inode's short critical section. */
static pthread_mutex_t hdr_locks[1 << HDR_LOCK_BITS] = {
	[0 ... (1 << HDR_LOCK_BITS) - 1] = PTHREAD_MUTEX_INITIALIZER
};

pthread_mutex_t *inode_hdr_lock(const struct inode *in)
{
	uint64_t h = (uint64_t)(uintptr_t)in * 0x9e3779b97f4a7c15ULL;

	return &hdr_locks[h >> (64 - HDR_LOCK_BITS)];
}

/* The room for one link after the struct (inode.h, link_room). */
static struct ilink *link_slot(struct inode *in)
{
	return (struct ilink *)(in + 1);
}

/* A link of in with room for a name of n bytes. NULL on ENOMEM. */
static struct ilink *link_alloc(struct inode *in, size_t n)
{
	if (!in->link_used && n <= in->link_room) {
		in->link_used = true;
		return link_slot(in);
	}
	return malloc(sizeof(struct ilink) + n + 1);
}

static void link_free(struct inode *in, struct ilink *l)
{
	if (l == link_slot(in))
		in->link_used = false;
	else
		free(l);
}

int inode_table_init(struct fs *fs)
{
	struct stat st;

	pthread_mutex_init(&fs->lock, NULL);
	fs->hsize = 1 << 12; /* grows with the inodes (grow_tables) */
	fs->htab = calloc(fs->hsize, sizeof(*fs->htab));
	fs->ltab = calloc(fs->hsize, sizeof(*fs->ltab));
	if (!fs->htab || !fs->ltab)
		return -ENOMEM;
	init_inode(&fs->root, S_IFDIR);
	init_inode(&fs->lru, S_IFDIR);
	if (fstat(fs->root_fd, &st) < 0)
		return -errno;
	fs->root.dev = st.st_dev;
	fs->root.ino = st.st_ino;
	fs->root.nlookup = 1;
	fs->root.pins = 1;
	fs->lru.lru_next = fs->lru.lru_prev = &fs->lru;
	fs->lru_max = 512;
	return 0;
}

static void free_inode(struct fs *fs, struct inode *in)
{
	if (in->type == S_IFDIR) {
		if (in->lru_next)
			lru_del(fs, in);
		if (in->dfd >= 0)
			close(in->dfd);
		free(in->rpath);
	} else {
		if (in->fd >= 0)
			close(in->fd);
		file_forget_tail(in);
	}
	free(in);
}

static void unhash(struct fs *fs, struct inode *in)
{
	struct inode **pp = &fs->htab[hash_of(fs, in->dev, in->ino)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == in) {
			*pp = in->hnext;
			in->hnext = NULL;
			fs->count--;
			return;
		}
	}
}

/* Unhash in and put it on the work list of maybe_free_locked if nothing
 * holds it. */
static void push_unused(struct fs *fs, struct inode *in, struct inode **todo)
{
	if (in == &fs->root || in->nlookup || in->pins)
		return;
	unhash(fs, in);
	in->hnext = *todo;
	*todo = in;
}

/* Called with fs->lock held: free in if nothing holds it, then every
 * parent it was the last holder of. Iterative (a chain of parents may be
 * as deep as the tree): unhashed inodes to free form the work list,
 * through hnext. */
static void maybe_free_locked(struct fs *fs, struct inode *in)
{
	struct inode *todo = NULL, *p;
	struct ilink *l, *next;

	push_unused(fs, in, &todo);
	while ((in = todo)) {
		todo = in->hnext;
		for (l = in->links; l; l = next) {
			next = l->next;
			p = l->parent;
			lt_remove(fs, l);
			link_free(in, l);
			fs->lcount--;
			p->pins--;
			push_unused(fs, p, &todo);
		}
		free_inode(fs, in);
	}
}

void inode_table_fini(struct fs *fs)
{
	size_t i;

	if (!fs->htab)
		return;
	for (i = 0; i < fs->hsize; i++) {
		struct inode *in = fs->htab[i], *next;

		for (; in; in = next) {
			struct ilink *l, *ln;

			next = in->hnext;
			for (l = in->links; l; l = ln) {
				ln = l->next;
				link_free(in, l);
			}
			free_inode(fs, in);
		}
	}
	free(fs->htab);
	free(fs->ltab);
	fs->htab = NULL;
	fs->ltab = NULL;
	pthread_mutex_destroy(&fs->lock);
}

struct inode *inode_get(struct fs *fs, uint64_t nodeid)
{
	if (nodeid == FUSE_ROOT_ID)
		return &fs->root;
	return (struct inode *)(uintptr_t)nodeid;
}

uint64_t inode_nodeid(struct fs *fs, struct inode *in)
{
	if (in == &fs->root)
		return FUSE_ROOT_ID;
	return (uint64_t)(uintptr_t)in;
}

static struct inode *find_locked(struct fs *fs, dev_t dev, ino_t ino)
{
	struct inode *in;

	if (dev == fs->root.dev && ino == fs->root.ino)
		return &fs->root;
	for (in = fs->htab[hash_of(fs, dev, ino)]; in; in = in->hnext)
		if (in->dev == dev && in->ino == ino && !in->stale &&
		    in->kind == INODE_REAL)
			return in;
	return NULL;
}

/* The link (parent, name) of in, or NULL: from the inode's own list while
 * it is short (most have one link, stored beside the inode), else through
 * the hash table. fs->lock held. */
static struct ilink *own_link_locked(struct fs *fs, struct inode *in,
				     struct inode *parent, const char *name)
{
	struct ilink *l;
	unsigned k = 0;

	for (l = in->links; l && k < 4; l = l->next, k++)
		if (l->parent == parent && !strcmp(l->name, name))
			return l;
	if (!l)
		return NULL;
	for (l = fs->ltab[lhash_of(fs, parent, name)]; l; l = l->hnext)
		if (l->owner == in && l->parent == parent &&
		    !strcmp(l->name, name))
			return l;
	return NULL;
}

static void list_del(struct ilink *l)
{
	*l->pprev = l->next;
	if (l->next)
		l->next->pprev = l->pprev;
}

static void list_add_front(struct inode *in, struct ilink *l)
{
	l->next = in->links;
	if (l->next)
		l->next->pprev = &l->next;
	in->links = l;
	l->pprev = &in->links;
}

/* Remove the link (parent, name) of in. fs->lock held. */
static void del_link_locked(struct fs *fs, struct inode *in,
			    struct inode *parent, const char *name)
{
	struct ilink *l = own_link_locked(fs, in, parent, name);

	if (!l)
		return;
	if (l == in->links && in->type == S_IFDIR)
		fs->path_gen++;
	list_del(l);
	lt_remove(fs, l);
	link_free(in, l);
	fs->lcount--;
	parent->pins--;
	maybe_free_locked(fs, parent);
}

/* Make (parent, name) the first known link of in: the hash table finds it,
 * so a file with thousands of names costs no walk of its list. fs->lock
 * held. Returns -ENOMEM or 0. */
static int set_link_locked(struct fs *fs, struct inode *in,
			   struct inode *parent, const char *name)
{
	struct ilink *l;
	size_t n = strlen(name);

	if (in == &fs->root)
		return 0;
	l = own_link_locked(fs, in, parent, name);
	if (l) {
		if (l != in->links) {
			list_del(l);
			list_add_front(in, l);
			if (in->type == S_IFDIR)
				fs->path_gen++;
		}
		return 0;
	}
	l = link_alloc(in, n);
	if (!l)
		return -ENOMEM;
	if (in->type == S_IFDIR && in->links)
		fs->path_gen++;
	memcpy(l->name, name, n + 1);
	l->owner = in;
	l->parent = parent;
	parent->pins++;
	list_add_front(in, l);
	lt_insert(fs, l);
	fs->lcount++;
	grow_tables(fs);
	return 0;
}

/* A new inode of kind for st with one kernel reference and the link
 * (parent, name), in the table. A virtual one is there for teardown only:
 * find_locked skips it. fs->lock held. NULL on ENOMEM. */
static struct inode *new_locked(struct fs *fs, struct inode *parent,
				const char *name, const struct stat *st,
				unsigned char kind)
{
	/* The first link goes into the same allocation (link_room). */
	size_t n = strlen(name), room = n <= UCHAR_MAX ? n : 0;
	struct inode *in = malloc(sizeof(*in) + sizeof(struct ilink) + room + 1);
	size_t h;

	if (!in)
		return NULL;
	init_inode(in, kind == INODE_REAL ? st->st_mode & S_IFMT : S_IFREG);
	in->link_room = (unsigned char)room;
	in->dev = st->st_dev;
	in->ino = st->st_ino;
	in->kind = kind;
	in->nlookup = 1;
	if (set_link_locked(fs, in, parent, name) < 0) {
		free_inode(fs, in);
		return NULL;
	}
	h = hash_of(fs, in->dev, in->ino);
	in->hnext = fs->htab[h];
	fs->htab[h] = in;
	fs->count++;
	grow_tables(fs);
	return in;
}

/* -sharedstorage: the inode of the object st at (parent, name); a link of
 * that name to any other inode is stale and dropped. fs->lock held. */
static struct inode *find_name_locked(struct fs *fs, struct inode *parent,
				      const char *name, const struct stat *st)
{
	struct ilink *l;
	struct inode *in, *o;

	if (st->st_dev == fs->root.dev && st->st_ino == fs->root.ino)
		return &fs->root;
again:
	in = NULL;
	for (l = fs->ltab[lhash_of(fs, parent, name)]; l; l = l->hnext) {
		if (l->parent != parent || l->owner->kind != INODE_REAL ||
		    strcmp(l->name, name))
			continue;
		o = l->owner;
		if (!in && !o->stale && o->dev == st->st_dev &&
		    o->ino == st->st_ino &&
		    o->type == (st->st_mode & S_IFMT)) {
			in = o;
			continue;
		}
		/* Freeing o may free other links of the chain: rescan. */
		o->pins++;
		del_link_locked(fs, o, parent, name);
		o->pins--;
		maybe_free_locked(fs, o);
		goto again;
	}
	return in;
}

struct inode *inode_lookup_add(struct fs *fs, struct inode *parent,
			       const char *name, const struct stat *st)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	if (fs->opt.sharedstorage)
		in = find_name_locked(fs, parent, name, st);
	else
		in = find_locked(fs, st->st_dev, st->st_ino);
	if (in && in != &fs->root &&
	    (in->type != (st->st_mode & S_IFMT) ||
	     (!in->links && (in->type == S_IFDIR || !in->fd_refs)))) {
		/* The backing inode number was reused by an object of another
		 * type, or by a new object after the old one lost its last
		 * name (a file we hold open cannot be reused: then this is
		 * another hard link of it). Give the new object its own node
		 * ID: the kernel may still hold the old one, and a removed
		 * directory there refuses new entries. The old inode dies
		 * with its last reference; it stays in the table (for
		 * teardown) but is never found. */
		in->stale = true;
		in = NULL;
	}
	if (in) {
		in->nlookup++;
		if (set_link_locked(fs, in, parent, name) < 0)
			log_warn("out of memory updating inode link");
		pthread_mutex_unlock(&fs->lock);
		return in;
	}
	in = new_locked(fs, parent, name, st, INODE_REAL);
	pthread_mutex_unlock(&fs->lock);
	return in;
}

/* The inode of kind linked as (parent, name). fs->lock held. */
static struct inode *find_link_locked(struct fs *fs, struct inode *parent,
				      const char *name, unsigned char kind)
{
	struct ilink *l;

	for (l = fs->ltab[lhash_of(fs, parent, name)]; l; l = l->hnext)
		if (l->parent == parent && l->owner->kind == kind &&
		    !l->owner->stale && !strcmp(l->name, name))
			return l->owner;
	return NULL;
}

struct inode *inode_lookup_virtual(struct fs *fs, struct inode *parent,
				   const char *name, unsigned char kind,
				   const struct stat *st)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_link_locked(fs, parent, name, kind);
	if (in)
		in->nlookup++;
	else
		in = new_locked(fs, parent, name, st, kind);
	pthread_mutex_unlock(&fs->lock);
	return in;
}

void inode_forget(struct fs *fs, struct inode *in, uint64_t n)
{
	if (in == &fs->root)
		return;
	pthread_mutex_lock(&fs->lock);
	if (n > in->nlookup) {
		log_warn("forget of %llu references, inode has %llu",
			 (unsigned long long)n,
			 (unsigned long long)in->nlookup);
		n = in->nlookup;
	}
	in->nlookup -= n;
	maybe_free_locked(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

struct inode *inode_find_pin(struct fs *fs, dev_t dev, ino_t ino)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_locked(fs, dev, ino);
	if (in)
		in->pins++;
	pthread_mutex_unlock(&fs->lock);
	return in;
}

struct inode *inode_find_entry_pin(struct fs *fs, struct inode *parent,
				   const char *name, const struct stat *st)
{
	struct inode *in;

	if (!fs->opt.sharedstorage)
		return inode_find_pin(fs, st->st_dev, st->st_ino);
	in = inode_find_name_pin(fs, parent, name);
	if (in && (in->dev != st->st_dev || in->ino != st->st_ino)) {
		inode_unpin(fs, in);
		in = NULL;
	}
	return in;
}

struct inode *inode_find_name_pin(struct fs *fs, struct inode *parent,
				  const char *name)
{
	struct inode *in;

	pthread_mutex_lock(&fs->lock);
	in = find_link_locked(fs, parent, name, INODE_REAL);
	if (in)
		in->pins++;
	pthread_mutex_unlock(&fs->lock);
	return in;
}

void inode_pin(struct fs *fs, struct inode *in)
{
	pthread_mutex_lock(&fs->lock);
	in->pins++;
	pthread_mutex_unlock(&fs->lock);
}

void inode_unpin(struct fs *fs, struct inode *in)
{
	pthread_mutex_lock(&fs->lock);
	in->pins--;
	maybe_free_locked(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

void inode_move(struct fs *fs, struct inode *in, struct inode *oldp,
		const char *oldn, struct inode *newp, const char *newn)
{
	pthread_mutex_lock(&fs->lock);
	/* Pin first: removing the old link must not free in or newp. */
	in->pins++;
	if (set_link_locked(fs, in, newp, newn) < 0)
		log_warn("out of memory updating inode link");
	del_link_locked(fs, in, oldp, oldn);
	in->pins--;
	maybe_free_locked(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

void inode_unlink_name(struct fs *fs, struct inode *in, struct inode *parent,
		       const char *name)
{
	pthread_mutex_lock(&fs->lock);
	in->pins++;
	del_link_locked(fs, in, parent, name);
	in->pins--;
	maybe_free_locked(fs, in);
	pthread_mutex_unlock(&fs->lock);
}

int loc_get(struct fs *fs, struct inode *in, struct loc *l)
{
	int rc = 0;

	l->parent = NULL;
	pthread_mutex_lock(&fs->lock);
	if (in == &fs->root) {
		rc = -EINVAL;
	} else if (!in->links) {
		rc = -ESTALE;
	} else {
		size_t n = strlen(in->links->name);

		if (n >= sizeof(l->name)) {
			rc = -ENAMETOOLONG;
		} else {
			memcpy(l->name, in->links->name, n + 1);
			l->parent = in->links->parent;
			l->parent->pins++;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

void loc_put(struct fs *fs, struct loc *l)
{
	if (l->parent)
		inode_unpin(fs, l->parent);
	l->parent = NULL;
}

/* A change counts as busy from before its syscall until after the table
 * is updated, and bumps the generation before it stops being busy; a
 * reader checks busy before the generation at both ends. A change that
 * overlaps the reader's span is busy at one of its ends or has bumped the
 * generation in between; one that ended before it began is complete in
 * the backing and the table alike. (Sequentially consistent atomics.) */
void names_change_begin(struct fs *fs)
{
	atomic_fetch_add(&fs->names_busy, 1);
}

void names_change_end(struct fs *fs)
{
	atomic_fetch_add(&fs->names_gen, 1);
	atomic_fetch_sub(&fs->names_busy, 1);
}

bool names_steady_begin(struct fs *fs, unsigned long *gen)
{
	if (atomic_load(&fs->names_busy))
		return false;
	*gen = atomic_load(&fs->names_gen);
	return true;
}

bool names_steady_end(struct fs *fs, unsigned long gen)
{
	return !atomic_load(&fs->names_busy) &&
	       atomic_load(&fs->names_gen) == gen;
}

static void evict_locked(struct fs *fs)
{
	struct inode *in = fs->lru.lru_prev, *prev;

	for (; in != &fs->lru && fs->lru_count > fs->lru_max; in = prev) {
		prev = in->lru_prev;
		if (in->dfd_users)
			continue;
		lru_del(fs, in);
		close(in->dfd);
		in->dfd = -1;
	}
}

static void evict_all_idle_locked(struct fs *fs)
{
	unsigned max = fs->lru_max;

	fs->lru_max = 0;
	evict_locked(fs);
	fs->lru_max = max;
}

static int check_same(int fd, const struct inode *in)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_dev != in->dev || st.st_ino != in->ino)
		return -ESTALE;
	return 0;
}

int open_regular_checked_at(int dfd, const char *name, int flags,
			    struct stat *st)
{
	int fd = openreg_at(dfd, name, flags, false, st);

	return fd == -EFTYPE_NOTREG ? -EIO : fd;
}

/* fn(fs, in, first known name, its parent's fd, arg) until it finds the
 * name: one that is gone or holds another object now (another hard link
 * was used to remove or replace it; in reverse mode, the plain tree
 * changed) is dropped and the next one tried. None left: -ESTALE, and the
 * kernel looks the name up again. */
typedef int by_name_fn(struct inode *in, int pfd, const char *name,
		       void *arg);

static int by_names(struct fs *fs, struct inode *in, by_name_fn *fn,
		    void *arg)
{
	struct loc l;
	int pfd, rc = -ESTALE, tries;

	for (tries = 0; tries < 1024; tries++) {
		rc = loc_get(fs, in, &l);
		if (rc)
			return rc;
		pfd = dirfd_get(fs, l.parent);
		if (pfd < 0) {
			rc = pfd;
		} else {
			rc = fn(in, pfd, l.name, arg);
			dirfd_put(fs, l.parent);
		}
		if (rc == -ENOENT || rc == -ESTALE)
			inode_unlink_name(fs, in, l.parent, l.name);
		loc_put(fs, &l);
		if (rc != -ENOENT && rc != -ESTALE)
			return rc;
	}
	return -ESTALE;
}

static int open_name(struct inode *in, int pfd, const char *name, void *arg)
{
	int flags = *(int *)arg, fd, rc = 0;
	struct stat st;

	if (flags & O_PATH) {
		fd = openat(pfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		else if (fstat(fd, &st) < 0)
			rc = -errno;
	} else {
		fd = open_regular_checked_at(pfd, name, flags, &st);
	}
	if (fd < 0)
		rc = fd == -ELOOP ? -ESTALE : fd;
	else if (!rc && (st.st_dev != in->dev || st.st_ino != in->ino))
		rc = -ESTALE;
	if (rc && fd >= 0)
		close(fd);
	return rc ? rc : fd;
}

int inode_open(struct fs *fs, struct inode *in, int flags)
{
	return by_names(fs, in, open_name, &flags);
}

/* The cached fd of in with one more user, or -1. fs->lock held. */
static int take_cached_locked(struct fs *fs, struct inode *in)
{
	if (in == &fs->root)
		return fs->root_fd;
	if (in->type != S_IFDIR || in->dfd < 0)
		return -1;
	in->dfd_users++;
	if (fs->lru.lru_next != in) {
		lru_del(fs, in);
		lru_add_front(fs, in);
	}
	return in->dfd;
}

/* Open the directory in through its parent's fd pfd (held by the caller)
 * and cache it. Returns the fd with one user taken, -EAGAIN when in is
 * no longer in parent (moved meanwhile), or another negative errno. */
static int open_child_dir(struct fs *fs, struct inode *in,
			  struct inode *parent, int pfd)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char name[INODE_NAME_MAX];
	int fd, rc = 0;

	pthread_mutex_lock(&fs->lock);
	fd = take_cached_locked(fs, in);
	if (fd < 0) {
		if (!in->links)
			rc = -ESTALE;
		else if (in->links->parent != parent)
			rc = -EAGAIN;
		else if (strlen(in->links->name) >= sizeof(name))
			rc = -ENAMETOOLONG;
		else
			strcpy(name, in->links->name);
	}
	pthread_mutex_unlock(&fs->lock);
	if (fd >= 0 || rc)
		return fd >= 0 ? fd : rc;

	fd = openat(pfd, name, flags);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		/* Out of fds: give back every idle cached one, retry once. */
		pthread_mutex_lock(&fs->lock);
		evict_all_idle_locked(fs);
		pthread_mutex_unlock(&fs->lock);
		fd = openat(pfd, name, flags);
	}
	if (fd < 0)
		return -errno;
	rc = check_same(fd, in);
	if (rc) {
		close(fd);
		return rc;
	}
	pthread_mutex_lock(&fs->lock);
	if (in->dfd >= 0) {
		/* Another thread opened it meanwhile. */
		close(fd);
	} else {
		in->dfd = fd;
		lru_add_front(fs, in);
		evict_locked(fs);
	}
	in->dfd_users++;
	fd = in->dfd;
	pthread_mutex_unlock(&fs->lock);
	return fd;
}

static void unpin_all(struct fs *fs, struct inode **v, size_t n)
{
	pthread_mutex_lock(&fs->lock);
	while (n--) {
		v[n]->pins--;
		maybe_free_locked(fs, v[n]);
	}
	pthread_mutex_unlock(&fs->lock);
}

#define CHAIN_STACK 16
#define CHAIN_TRIES 8

/* Iterative at any depth: walk up from in to the nearest ancestor with a
 * cached fd (or the root), pinning the directories on the way, then open
 * them top-down, each through its parent's fd, caching every one (so that
 * the next walk near here is short). At most two of these fds are in use
 * at a time. */
int dirfd_get(struct fs *fs, struct inode *in)
{
	struct inode *stack[CHAIN_STACK], **chain = stack, **nc, *cur, *top;
	size_t n, cap = CHAIN_STACK, i;
	int fd, tries = 0, rc;

again:
	n = 0;
	rc = 0;
	pthread_mutex_lock(&fs->lock);
	fd = take_cached_locked(fs, in);
	for (cur = in; fd < 0;) {
		if (cur->type != S_IFDIR) {
			rc = -ENOTDIR;
			break;
		}
		if (!cur->links) {
			rc = -ESTALE;
			break;
		}
		if (n > fs->count) {
			rc = -ELOOP; /* a cycle: more links than inodes */
			break;
		}
		if (n == cap) {
			rc = -E2BIG; /* grow outside the lock, walk again */
			break;
		}
		cur->pins++;
		chain[n++] = cur;
		cur = cur->links->parent;
		fd = take_cached_locked(fs, cur);
	}
	/* The ancestor whose fd the walk starts from: a rename may move
	 * chain[n - 1] out of it meanwhile, and then nothing else holds it. */
	top = !rc && n ? cur : NULL;
	if (top)
		top->pins++;
	pthread_mutex_unlock(&fs->lock);
	if (rc) {
		unpin_all(fs, chain, n);
		if (rc != -E2BIG)
			goto out;
		nc = realloc(chain == stack ? NULL : chain,
			     2 * cap * sizeof(*chain));
		if (!nc) {
			rc = -ENOMEM;
			goto out;
		}
		chain = nc;
		cap *= 2;
		goto again;
	}
	for (i = n; i-- > 0;) {
		int cfd = open_child_dir(fs, chain[i], cur, fd);

		dirfd_put(fs, cur);
		if (cur == top)
			inode_unpin(fs, top);
		if (cfd < 0) {
			unpin_all(fs, chain, n);
			rc = cfd;
			if (rc == -EAGAIN && ++tries < CHAIN_TRIES)
				goto again;
			if (rc == -EAGAIN)
				rc = -ESTALE;
			goto out;
		}
		cur = chain[i];
		fd = cfd;
	}
	unpin_all(fs, chain, n);
	rc = fd;
out:
	if (chain != stack)
		free(chain);
	return rc;
}

void dirfd_put(struct fs *fs, struct inode *in)
{
	if (in == &fs->root)
		return;
	pthread_mutex_lock(&fs->lock);
	in->dfd_users--;
	if (fs->lru_count > fs->lru_max)
		evict_locked(fs);
	pthread_mutex_unlock(&fs->lock);
}

void dirfd_drop(struct fs *fs, struct inode *in)
{
	if (in == &fs->root || in->type != S_IFDIR)
		return;
	pthread_mutex_lock(&fs->lock);
	in->iv_valid = false;
	if (in->dfd >= 0 && in->dfd_users == 0) {
		lru_del(fs, in);
		close(in->dfd);
		in->dfd = -1;
	}
	pthread_mutex_unlock(&fs->lock);
}

static int stat_name(struct inode *in, int pfd, const char *name, void *arg)
{
	struct stat *st = arg;

	if (fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return st->st_dev != in->dev || st->st_ino != in->ino ? -ESTALE : 0;
}

int inode_stat(struct fs *fs, struct inode *in, struct stat *st)
{
	int fd, rc;

	if (in->type == S_IFDIR) {
		fd = dirfd_get(fs, in);
		if (fd < 0)
			return fd;
		rc = fstat(fd, st) < 0 ? -errno : 0;
		dirfd_put(fs, in);
		return rc;
	}
	rc = by_names(fs, in, stat_name, st);
	if (rc == -ESTALE || rc == -ENOENT) {
		/* Unlinked (or moved behind our back) but maybe still open. */
		rwlock_rdlock(&in->rw);
		if (in->fd >= 0)
			rc = fstat(in->fd, st) < 0 ? -errno : 0;
		rwlock_unlock(&in->rw);
	}
	return rc;
}
