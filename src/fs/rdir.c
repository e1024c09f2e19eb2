// SPDX-License-Identifier: MIT
/*
 * The namespace of the reverse view (spec §5.2, §5.3, §5.5, §5.6): paths
 * and directory IVs derived from the inode table's links, view names from
 * plaintext names, lookups back from view names (long names by encrypting
 * what the directory holds), listings with the virtual gocryptfs.diriv and
 * .name files, the config shown as gocryptfs.conf, exclusion, and symlink
 * targets. Every syscall is relative to a directory fd of the table with
 * O_NOFOLLOW / AT_SYMLINK_NOFOLLOW; nothing here writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ignore.h"
#include "common/log.h"
#include "fs/file.h"
#include "fs/rpriv.h"

/* Inode numbers as gocryptfs shows them: the low 48 bits of the backing
 * number (of what a virtual file describes), above them the number of a
 * namespace: one per device and kind of entry, numbered in the order they
 * are first shown, 0 for the real entries of the root's device. */
#define INO_NS_SHIFT 48
#define INO_NS_MAX 0xffff

static const uint8_t zero_iv[NAMES_DIRIV_LEN];

static bool conf_mapped(const struct fs *fs, const struct inode *dir)
{
	return dir == &fs->root && rfs_of(fs)->opt.map_conf;
}

static bool has_diriv(const struct fs *fs)
{
	return !fs->plaintext && fs->diriv;
}

int rname_encrypt(struct fs *fs, struct inode *dir, const uint8_t *iv,
		  const char *name, char *stored, char *cname)
{
	const char *as = NULL;

	if (conf_mapped(fs, dir)) {
		/* spec §5.6: the config, and a plaintext name it would
		 * shadow */
		if (!strcmp(name, RFS_CONF_NAME))
			as = NAMES_CONF_FILE;
		else if (fs->plaintext && !strcmp(name, NAMES_CONF_FILE))
			as = rfs_of(fs)->collision;
	}
	if (as) {
		snprintf(stored, RFS_VNAME_MAX, "%s", as);
		snprintf(cname, NAMES_MAX_CNAME, "%s", as);
		return 0;
	}
	if (names_encrypt(fs->names, iv, name, cname, NAMES_MAX_CNAME))
		return -EINVAL;
	return names_store_name(fs->names, cname, stored, RFS_VNAME_MAX);
}

char *rpath_join(const char *dir, size_t dlen, const char *name)
{
	size_t nlen = strlen(name);
	char *p = malloc(dlen + 1 + nlen + 1);

	if (!p)
		return NULL;
	memcpy(p, dir, dlen);
	if (dlen)
		p[dlen++] = '/';
	memcpy(p + dlen, name, nlen + 1);
	return p;
}

bool rpath_excluded(struct fs *fs, const struct rpath *rp, const char *name)
{
	const struct ignore *ig = rfs_of(fs)->opt.exclude;
	char *p;
	bool r;

	if (!ig || (!rp->plen && rfs_of(fs)->opt.map_conf &&
		    !strcmp(name, RFS_CONF_NAME)))
		return false;
	p = rpath_join(rp->plain, rp->plen, name);
	/* Out of memory: hide rather than show what may be excluded. */
	if (!p)
		return true;
	r = ignore_match(ig, p, strlen(p));
	free(p);
	return r;
}

void rpath_put(struct rpath *rp)
{
	free(rp->buf);
	rp->buf = NULL;
}

/* Fill rp from a "plain\0cipher\0" buffer it takes over. */
static void rpath_set(struct rpath *rp, char *buf, const uint8_t *iv)
{
	rp->buf = buf;
	rp->plain = buf;
	rp->plen = strlen(buf);
	rp->cipher = buf + rp->plen + 1;
	rp->clen = strlen(rp->cipher);
	memcpy(rp->iv, iv, NAMES_DIRIV_LEN);
}

static char *buf_dup(const char *buf)
{
	size_t a = strlen(buf) + 1, b = strlen(buf + a) + 1;
	char *d = malloc(a + b);

	if (d)
		memcpy(d, buf, a + b);
	return d;
}

/* A directory keeps its paths (for the next lookup in it) only while they
 * are at most this long together: a chain of directories thousands deep
 * would otherwise keep memory growing with the square of its depth. */
#define RPATH_CACHE_MAX 16384

/* One directory on the way down from the nearest one whose paths are
 * known: its location (parent pinned) and its inode. */
struct rstep {
	struct loc l;
	struct inode *in;
};

/* Appends "/" (unless s is empty) and name to the string s of *len bytes
 * in a buffer of *cap. */
static int str_append(char **s, size_t *len, size_t *cap, const char *name)
{
	size_t n = strlen(name), need = *len + 1 + n + 1;
	char *p;

	if (need > *cap) {
		size_t c = *cap ? *cap : 256;

		while (c < need)
			c *= 2;
		p = realloc(*s, c);
		if (!p)
			return -ENOMEM;
		*s = p;
		*cap = c;
	}
	if (*len)
		(*s)[(*len)++] = '/';
	memcpy(*s + *len, name, n + 1);
	*len += n;
	return 0;
}

/* "plain\0cipher\0" of the two strings. */
static char *buf_join(const char *plain, size_t plen, const char *cipher,
		      size_t clen)
{
	char *d = malloc(plen + 1 + clen + 1);

	if (d) {
		memcpy(d, plain, plen);
		d[plen] = '\0';
		memcpy(d + plen + 1, cipher, clen);
		d[plen + 1 + clen] = '\0';
	}
	return d;
}

/* Iterative at any depth: walk up to the root or the nearest directory
 * whose paths are cached, then down again, encrypting each name under
 * its parent's IV and deriving each directory's IV from its cipher path
 * (spec §5.3), caching what is short enough on the way. */
int rpath_get(struct fs *fs, struct inode *dir, struct rpath *rp)
{
	char stored[RFS_VNAME_MAX], cname[NAMES_MAX_CNAME];
	struct rstep *steps = NULL, *ns;
	struct names_pathiv_ctx *ph = NULL;
	struct inode *cur = dir;
	size_t n = 0, scap = 0, plen, clen, pcap, ccap, i;
	char *top = NULL, *plain = NULL, *cipher = NULL, *copy;
	uint8_t iv[NAMES_DIRIV_LEN];
	unsigned gen;
	int rc = 0;

	memset(rp, 0, sizeof(*rp));
	/* paths computed from a snapshot older than a rename are not kept */
	pthread_mutex_lock(&fs->lock);
	gen = fs->path_gen;
	pthread_mutex_unlock(&fs->lock);
	for (;;) {
		if (cur == &fs->root) {
			top = calloc(1, 2);
			memcpy(iv, rfs_of(fs)->root_iv, sizeof(iv));
			if (!top)
				rc = -ENOMEM;
			break;
		}
		pthread_mutex_lock(&fs->lock);
		if (cur->rpath && cur->rgen == fs->path_gen) {
			top = buf_dup(cur->rpath);
			memcpy(iv, cur->iv, sizeof(iv));
			if (!top)
				rc = -ENOMEM;
		} else if (n > fs->count) {
			rc = -ELOOP; /* more steps than inodes: a cycle */
		}
		pthread_mutex_unlock(&fs->lock);
		if (top || rc)
			break;
		if (n == scap) {
			scap = scap ? 2 * scap : 16;
			ns = realloc(steps, scap * sizeof(*steps));
			if (!ns) {
				rc = -ENOMEM;
				break;
			}
			steps = ns;
		}
		rc = loc_get(fs, cur, &steps[n].l);
		if (rc)
			break;
		steps[n].in = cur;
		cur = steps[n++].l.parent;
	}
	if (rc)
		goto out;
	if (!n) {
		rpath_set(rp, top, iv);
		top = NULL;
		goto out;
	}
	/* top is "plain\0cipher\0": take the two strings over */
	plen = strlen(top);
	clen = strlen(top + plen + 1);
	pcap = plen + 1;
	ccap = clen + 1;
	cipher = malloc(ccap);
	if (!cipher) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(cipher, top + plen + 1, clen + 1);
	plain = top;
	top = NULL;
	if (has_diriv(fs)) {
		ph = names_pathiv_begin(cipher, clen);
		if (!ph) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (i = n; i-- > 0;) {
		rc = rname_encrypt(fs, steps[i].l.parent, iv, steps[i].l.name,
				   stored, cname);
		if (rc < 0)
			goto out;
		rc = str_append(&plain, &plen, &pcap, steps[i].l.name);
		if (!rc)
			rc = str_append(&cipher, &clen, &ccap, stored);
		if (rc)
			goto out;
		memcpy(iv, zero_iv, sizeof(iv));
		if (ph) {
			rc = names_pathiv_add(ph, stored);
			if (!rc)
				rc = names_pathiv_get(ph, iv,
						      NAMES_PATHIV_DIRIV);
			if (rc)
				goto out;
		}
		if (plen + clen + 2 > RPATH_CACHE_MAX)
			continue;
		copy = buf_join(plain, plen, cipher, clen);
		pthread_mutex_lock(&fs->lock);
		if (copy && fs->path_gen == gen) {
			free(steps[i].in->rpath);
			steps[i].in->rpath = copy;
			steps[i].in->rgen = gen;
			memcpy(steps[i].in->iv, iv, sizeof(iv));
			copy = NULL;
		}
		pthread_mutex_unlock(&fs->lock);
		free(copy);
	}
	top = buf_join(plain, plen, cipher, clen);
	if (!top) {
		rc = -ENOMEM;
		goto out;
	}
	rpath_set(rp, top, iv);
	top = NULL;
	rc = 0;
out:
	for (i = 0; i < n; i++)
		loc_put(fs, &steps[i].l);
	free(steps);
	free(top);
	free(plain);
	free(cipher);
	names_pathiv_end(ph);
	return rc;
}

int rentry_get(struct fs *fs, struct inode *in, struct rentry *e)
{
	char stored[RFS_VNAME_MAX], cname[NAMES_MAX_CNAME];
	struct rpath rp;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = loc_get(fs, in, &e->loc);
	if (rc)
		return rc;
	rc = rpath_get(fs, e->loc.parent, &rp);
	if (rc)
		goto out;
	rc = rname_encrypt(fs, e->loc.parent, rp.iv, e->loc.name, stored,
			   cname);
	if (rc >= 0) {
		e->cipher = rpath_join(rp.cipher, rp.clen, stored);
		rc = e->cipher ? 0 : -ENOMEM;
		if (e->cipher)
			e->base = e->cipher + strlen(e->cipher) - strlen(stored);
	}
	rpath_put(&rp);
out:
	if (rc)
		rentry_put(fs, e);
	return rc;
}

void rentry_put(struct fs *fs, struct rentry *e)
{
	free(e->cipher);
	e->cipher = NULL;
	loc_put(fs, &e->loc);
}

bool rdir_is_conf(struct fs *fs, const struct inode *in)
{
	bool r;

	if (!rfs_of(fs)->opt.map_conf || in->kind != INODE_REAL ||
	    in->type != S_IFREG)
		return false;
	pthread_mutex_lock(&fs->lock);
	r = in->links && in->links->parent == &fs->root &&
	    !strcmp(in->links->name, RFS_CONF_NAME);
	pthread_mutex_unlock(&fs->lock);
	return r;
}

/* The entry of directory dfd whose view name is the long name want; its
 * backing name goes to name (INODE_NAME_MAX). dir: the directory's inode,
 * or NULL if not the root. Returns 0 or -ENOENT. */
/* Long names find_long remembers of one directory, at most (about 20 MiB
 * of names); a larger directory is scanned for each lookup. */
#define LONGS_MAX 65536

static int long_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rfs_long *)a)->stored,
		      ((const struct rfs_long *)b)->stored);
}

static void longs_free(struct rfs_long *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].stored);
	free(e);
}

void rdir_longs_fini(struct rfs *r)
{
	longs_free(r->longs.e, r->longs.n);
	r->longs.e = NULL;
	r->longs.n = 0;
	r->longs.valid = false;
	pthread_mutex_destroy(&r->longs.lock);
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* The remembered scan is of this directory as it is now (st), under iv. */
static bool longs_match(const struct rfs_longs *c, const struct stat *st,
			const uint8_t *iv)
{
	return c->valid && c->dev == st->st_dev && c->ino == st->st_ino &&
	       same_time(c->mtime, st->st_mtim) &&
	       same_time(c->ctime, st->st_ctim) &&
	       !memcmp(c->iv, iv, sizeof(c->iv));
}

static int longs_find(struct rfs *r, const struct stat *st, const uint8_t *iv,
		      const char *want, char *name)
{
	struct rfs_long key = { .stored = (char *)want }, *hit;
	int rc = -ENOENT;

	pthread_mutex_lock(&r->longs.lock);
	if (longs_match(&r->longs, st, iv) && r->longs.n) {
		hit = bsearch(&key, r->longs.e, r->longs.n, sizeof(key),
			      long_cmp);
		if (hit) {
			snprintf(name, INODE_NAME_MAX, "%s", hit->plain);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&r->longs.lock);
	return rc;
}

/* Adds stored -> plain to *e (n entries, cap); false when out of room or
 * memory (the scan is then not remembered). */
static bool longs_add(struct rfs_long **e, size_t *n, size_t *cap,
		      const char *stored, const char *plain)
{
	size_t sl = strlen(stored), pl = strlen(plain);
	struct rfs_long *ne;
	char *s;

	if (*n == LONGS_MAX)
		return false;
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;

		ne = realloc(*e, c * sizeof(**e));
		if (!ne)
			return false;
		*e = ne;
		*cap = c;
	}
	s = malloc(sl + 1 + pl + 1);
	if (!s)
		return false;
	memcpy(s, stored, sl + 1);
	memcpy(s + sl + 1, plain, pl + 1);
	(*e)[*n].stored = s;
	(*e)[(*n)++].plain = s + sl + 1;
	return true;
}

/* The plain name of the hashed long name want in dir (dfd, IV iv): each
 * plain name long enough is encrypted and hashed until one matches. A
 * scan remembers every long name of the directory, so that looking up
 * many of them one by one (no listing first) costs one scan, not one
 * each; a name not remembered is looked for by a new scan, so a
 * directory changed within its timestamps' granularity is still right
 * (and a remembered name that is gone fails the caller's fstatat). */
static int find_long(struct fs *fs, struct inode *dir, int dfd,
		     const uint8_t *iv, const char *want, char *name)
{
	char stored[RFS_VNAME_MAX], cname[NAMES_MAX_CNAME];
	unsigned max = names_params(fs->names)->longnamemax;
	struct rfs *r = rfs_of(fs);
	struct rfs_long *e = NULL;
	size_t n = 0, cap = 0;
	struct stat before, after;
	bool keep = fstat(dfd, &before) == 0;
	struct dirent *de;
	DIR *d;
	int rc;

	if (keep && !longs_find(r, &before, iv, want, name))
		return 0;
	rc = fe_dir_stream(dfd, &d);
	if (rc)
		return rc;
	rc = -ENOENT;
	while ((de = readdir(d))) {
		/* only names whose encryption is long enough are hashed */
		if (names_encrypted_len(fs->names, strlen(de->d_name)) <= max)
			continue;
		if (rname_encrypt(fs, dir, iv, de->d_name, stored, cname) != 1)
			continue;
		if (rc && !strcmp(stored, want)) {
			snprintf(name, INODE_NAME_MAX, "%s", de->d_name);
			rc = 0;
			if (!keep)
				break;
		}
		if (keep && !longs_add(&e, &n, &cap, stored, de->d_name))
			keep = false;
	}
	closedir(d);
	/* remembered only if the directory did not change meanwhile */
	if (keep && fstat(dfd, &after) == 0 &&
	    after.st_ino == before.st_ino &&
	    same_time(after.st_mtim, before.st_mtim) &&
	    same_time(after.st_ctim, before.st_ctim)) {
		if (n) /* e may be NULL then */
			qsort(e, n, sizeof(*e), long_cmp);
		pthread_mutex_lock(&r->longs.lock);
		longs_free(r->longs.e, r->longs.n);
		r->longs.e = e;
		r->longs.n = n;
		r->longs.valid = true;
		r->longs.dev = before.st_dev;
		r->longs.ino = before.st_ino;
		r->longs.mtime = before.st_mtim;
		r->longs.ctime = before.st_ctim;
		memcpy(r->longs.iv, iv, sizeof(r->longs.iv));
		pthread_mutex_unlock(&r->longs.lock);
		e = NULL;
		n = 0;
	}
	longs_free(e, n);
	return rc;
}

/* View name -> backing name (INODE_NAME_MAX) and kind, in dir (fd dfd,
 * paths rp). Returns 0 or -ENOENT. */
static int find_backing(struct fs *fs, struct inode *dir, int dfd,
			const struct rpath *rp, const char *vname, char *name,
			unsigned char *kind)
{
	char lname[RFS_VNAME_MAX];
	size_t len = strlen(vname);

	*kind = INODE_REAL;
	if (conf_mapped(fs, dir)) {
		if (!strcmp(vname, NAMES_CONF_FILE)) {
			strcpy(name, RFS_CONF_NAME);
			return 0;
		}
		if (fs->plaintext && !strcmp(vname, rfs_of(fs)->collision)) {
			strcpy(name, NAMES_CONF_FILE);
			return 0;
		}
	}
	if (fs->plaintext) {
		if (!names_valid_plain(vname, len) ||
		    (conf_mapped(fs, dir) && !strcmp(vname, RFS_CONF_NAME)))
			return -ENOENT;
		strcpy(name, vname);
		return 0;
	}
	if (names_is_sidecar(vname)) {
		len -= strlen(NAMES_LONG_SUFFIX);
		if (len >= sizeof(lname))
			return -ENOENT;
		memcpy(lname, vname, len);
		lname[len] = '\0';
		if (!names_is_long(lname))
			return -ENOENT;
		*kind = INODE_VNAME;
		return find_long(fs, dir, dfd, rp->iv, lname, name);
	}
	if (names_is_long(vname))
		return find_long(fs, dir, dfd, rp->iv, vname, name);
	/* an unhashed form of a long name is not in the view */
	if (len > names_params(fs->names)->longnamemax ||
	    names_decrypt(fs->names, rp->iv, vname, len, name,
			  NAMES_MAX_PLAIN + 1))
		return -ENOENT;
	if (conf_mapped(fs, dir) && !strcmp(name, RFS_CONF_NAME))
		return -ENOENT;
	return 0;
}

/* A directory on another filesystem under -one-file-system: empty. */
static bool foreign(struct fs *fs, const struct inode *dir)
{
	return rfs_of(fs)->opt.one_file_system && dir->dev != fs->root.dev;
}

int rdir_lookup(struct fs *fs, struct inode *dir, const char *vname,
		struct inode **out, struct stat *st)
{
	char name[INODE_NAME_MAX];
	unsigned char kind;
	struct rpath rp;
	int dfd, rc;

	*out = NULL;
	if (dir->kind != INODE_REAL || dir->type != S_IFDIR)
		return -ENOTDIR;
	rc = rpath_get(fs, dir, &rp);
	if (rc)
		return rc;
	dfd = dirfd_get(fs, dir);
	if (dfd < 0) {
		rpath_put(&rp);
		return dfd;
	}
	if (has_diriv(fs) && !strcmp(vname, NAMES_DIRIV_FILE)) {
		if (fstat(dfd, st) < 0) {
			rc = -errno;
			goto out;
		}
		*out = inode_lookup_virtual(fs, dir, "", INODE_VDIRIV, st);
		rc = *out ? 0 : -ENOMEM;
		goto out;
	}
	if (foreign(fs, dir)) {
		rc = -ENOENT;
		goto out;
	}
	rc = find_backing(fs, dir, dfd, &rp, vname, name, &kind);
	if (rc)
		goto out;
	/* spec §5.6: direct access to an excluded entry */
	if (rpath_excluded(fs, &rp, name)) {
		rc = -EPERM;
		goto out;
	}
	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		goto out;
	}
	if (kind == INODE_REAL)
		*out = inode_lookup_add(fs, dir, name, st);
	else
		*out = inode_lookup_virtual(fs, dir, name, kind, st);
	rc = *out ? 0 : -ENOMEM;
out:
	dirfd_put(fs, dir);
	rpath_put(&rp);
	return rc;
}

int rdir_stat(struct fs *fs, struct inode *in, struct stat *st)
{
	struct loc l;
	int dfd, rc;

	if (in->kind == INODE_REAL) {
		if (in->type == S_IFREG) {
			rc = file_fstat(fs, in, st);
			if (rc != -EBADF)
				return rc;
		}
		return inode_stat(fs, in, st);
	}
	rc = loc_get(fs, in, &l);
	if (rc)
		return rc;
	dfd = dirfd_get(fs, l.parent);
	if (dfd < 0) {
		rc = dfd;
	} else {
		if (in->kind == INODE_VDIRIV)
			rc = fstat(dfd, st);
		else
			rc = fstatat(dfd, l.name, st, AT_SYMLINK_NOFOLLOW);
		rc = rc < 0 ? -errno : 0;
		dirfd_put(fs, l.parent);
	}
	loc_put(fs, &l);
	return rc;
}

uint64_t rdir_ino(struct fs *fs, dev_t dev, uint64_t ino, unsigned char kind)
{
	struct rfs *r = rfs_of(fs);
	struct rfs_ns *nn;
	size_t i;

	/* namespace 0, the common case, needs no lock */
	if (dev == fs->root.dev && kind == INODE_REAL)
		return ino & ((1ull << INO_NS_SHIFT) - 1);
	pthread_mutex_lock(&r->lock);
	if (!r->nns && (r->ns = malloc(sizeof(*r->ns)))) {
		r->ns[0].dev = fs->root.dev;
		r->ns[0].kind = INODE_REAL;
		r->nns = 1;
	}
	for (i = 0; i < r->nns; i++)
		if (r->ns[i].dev == dev && r->ns[i].kind == kind)
			break;
	if (i == r->nns && i < INO_NS_MAX &&
	    (nn = realloc(r->ns, (i + 1) * sizeof(*nn)))) {
		r->ns = nn;
		r->ns[i].dev = dev;
		r->ns[i].kind = kind;
		r->nns++;
	}
	pthread_mutex_unlock(&r->lock);
	if (i > INO_NS_MAX)
		i = INO_NS_MAX;
	return (uint64_t)i << INO_NS_SHIFT |
	       (ino & ((1ull << INO_NS_SHIFT) - 1));
}

/* spec §5.6: a virtual file copies the attributes of what it describes. */
static void virtualize(struct fs *fs, struct stat *st, uint64_t size,
		       unsigned char kind)
{
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	st->st_rdev = 0;
	st->st_ino = (ino_t)rdir_ino(fs, st->st_dev, st->st_ino, kind);
}

void rdir_fix_attr(struct fs *fs, const struct inode *in, struct stat *st)
{
	size_t len = 0;

	switch ((enum inode_kind)in->kind) {
	case INODE_VDIRIV:
		virtualize(fs, st, NAMES_DIRIV_LEN, in->kind);
		return;
	case INODE_VNAME:
		pthread_mutex_lock(&fs->lock);
		if (in->links)
			len = strlen(in->links->name);
		pthread_mutex_unlock(&fs->lock);
		virtualize(fs, st, names_encrypted_len(fs->names, len),
			   in->kind);
		return;
	case INODE_REAL:
		break;
	}
	st->st_ino = (ino_t)rdir_ino(fs, st->st_dev, st->st_ino, INODE_REAL);
	if (S_ISREG(st->st_mode)) {
		if (!rdir_is_conf(fs, in))
			st->st_size = (off_t)content_plain_to_cipher_size(
				fs->content, (uint64_t)st->st_size);
	} else if (S_ISLNK(st->st_mode)) {
		size_t l = names_symlink_cipher_len(fs->names,
						    (size_t)st->st_size);

		/* gocryptfs shows 0 for a target it cannot show (§4.9) */
		st->st_size = l > RFS_LINK_MAX ? 0 : (off_t)l;
	}
}

int rdir_readlink(struct fs *fs, struct inode *in, char *buf, size_t cap)
{
	uint8_t nonce[NAMES_DIRIV_LEN];
	struct rentry e;
	char target[PATH_MAX + 1], *x = NULL;
	ssize_t n;
	int pfd, rc;

	rc = rentry_get(fs, in, &e);
	if (rc)
		return rc;
	pfd = dirfd_get(fs, e.loc.parent);
	if (pfd < 0) {
		rc = pfd;
		goto out;
	}
	n = readlinkat(pfd, e.loc.name, target, sizeof(target) - 1);
	rc = n < 0 ? -errno : 0;
	dirfd_put(fs, e.loc.parent);
	if (rc)
		goto out;
	if (cap > RFS_LINK_MAX + 1)
		cap = RFS_LINK_MAX + 1;
	/* spec §5.5: READLINK derives the nonce from the cipher path
	 * followed by its own last component (a gocryptfs quirk kept for
	 * byte-identical output) */
	x = rpath_join(e.cipher, strlen(e.cipher), e.base);
	if (!x) {
		rc = -ENOMEM;
		goto out;
	}
	rc = names_pathiv(nonce, x, strlen(x), NAMES_PATHIV_SYMLINK);
	if (!rc)
		rc = names_encrypt_symlink_nonce(fs->names, target, (size_t)n,
						 nonce, buf, cap);
out:
	free(x);
	rentry_put(fs, &e);
	return rc;
}

/* The virtual entries of a listing, after the real ones as gocryptfs has
 * them. Their d_ino is the backing number (READDIRPLUS replies carry the
 * view's, numbered in reply order, see rdir_ino). */
static int add_virtual(struct fs *fs, struct dir_list *dl,
		       const struct dir_list *longs, const struct stat *dst)
{
	char side[RFS_VNAME_MAX + sizeof(NAMES_LONG_SUFFIX)];
	int rc = 0;

	if (has_diriv(fs))
		rc = dir_list_add(dl, NAMES_DIRIV_FILE, "", dst->st_ino,
				  DT_REG, INODE_VDIRIV);
	for (size_t i = 0; !rc && i < longs->n; i++) {
		snprintf(side, sizeof(side), "%s%s", longs->ents[i].name,
			 NAMES_LONG_SUFFIX);
		rc = dir_list_add(dl, side, longs->ents[i].stored,
				  longs->ents[i].ino, DT_REG, INODE_VNAME);
	}
	return rc;
}

struct list_arg {
	struct fs *fs;
	struct inode *dir;
	struct rpath rp;
	struct dir_list longs; /* long names: view name, backing name */
};

static int list_one(void *arg, const struct dirent *de, struct dir_list *dl)
{
	char stored[RFS_VNAME_MAX], cname[NAMES_MAX_CNAME];
	struct list_arg *a = arg;
	int rc;

	if (rpath_excluded(a->fs, &a->rp, de->d_name))
		return 0;
	rc = rname_encrypt(a->fs, a->dir, a->rp.iv, de->d_name, stored, cname);
	if (rc < 0) {
		log_warn("directory inode %ju: cannot encrypt a name: %s",
			 (uintmax_t)a->dir->ino, strerror(-rc));
		return 0;
	}
	if (rc == 1)
		rc = dir_list_add(&a->longs, stored, de->d_name, de->d_ino,
				  DT_REG, INODE_VNAME);
	if (!rc)
		rc = dir_list_add(dl, stored, de->d_name, de->d_ino,
				  de->d_type, INODE_REAL);
	return rc;
}

int rdir_list_load(struct fs *fs, struct inode *dir, struct dir_list *dl)
{
	struct list_arg a = { .fs = fs, .dir = dir };
	struct stat dst;
	int dfd, rc;

	memset(dl, 0, sizeof(*dl));
	dfd = dirfd_get(fs, dir);
	if (dfd < 0)
		return dfd;
	rc = rpath_get(fs, dir, &a.rp);
	if (!rc && fstat(dfd, &dst) < 0)
		rc = -errno;
	if (!rc && foreign(fs, dir)) {
		rc = dir_list_add(dl, ".", ".", dst.st_ino, DT_DIR, INODE_REAL);
		if (!rc)
			rc = dir_list_add(dl, "..", "..", dst.st_ino, DT_DIR,
					  INODE_REAL);
	} else if (!rc) {
		rc = fe_list_backing(dfd, dl, list_one, &a);
	}
	if (!rc)
		rc = add_virtual(fs, dl, &a.longs, &dst);
	dir_list_free(&a.longs);
	rpath_put(&a.rp);
	dirfd_put(fs, dir);
	if (rc)
		dir_list_free(dl);
	return rc;
}

int rdir_list_entry(struct fs *fs, struct inode *dir, int dfd,
		    const struct dir_ent *d, struct inode **in,
		    struct stat *st)
{
	int rc = d->kind == INODE_VDIRIV ?
			 fstat(dfd, st) :
			 fstatat(dfd, d->stored, st, AT_SYMLINK_NOFOLLOW);

	if (rc < 0)
		return 1; /* vanished meanwhile */
	if (d->kind == INODE_REAL)
		*in = inode_lookup_add(fs, dir, d->stored, st);
	else
		*in = inode_lookup_virtual(fs, dir, d->stored, d->kind, st);
	return *in ? 0 : -ENOMEM;
}

int rdir_virtual_content(struct fs *fs, struct inode *in, char *buf,
			 size_t *len)
{
	char stored[RFS_VNAME_MAX];
	struct rpath rp;
	struct loc l;
	int rc;

	rc = loc_get(fs, in, &l);
	if (rc)
		return rc;
	rc = rpath_get(fs, l.parent, &rp);
	if (rc)
		goto out;
	if (in->kind == INODE_VDIRIV) {
		memcpy(buf, rp.iv, NAMES_DIRIV_LEN);
		*len = NAMES_DIRIV_LEN;
	} else {
		rc = rname_encrypt(fs, l.parent, rp.iv, l.name, stored, buf);
		rc = rc < 0 ? rc : 0;
		*len = rc ? 0 : strlen(buf);
	}
	rpath_put(&rp);
out:
	loc_put(fs, &l);
	return rc;
}

/* ---- path translation for a control socket (rfs.h) ----------------------- */

/* The next component of *p ('/'-separated); 0 at the end, -EINVAL for an
 * empty one, "." or "..". */
static int next_comp(const char **p, char *out, size_t cap)
{
	const char *s = *p, *e = strchr(s, '/');
	size_t n = e ? (size_t)(e - s) : strlen(s);

	if (!*s)
		return 0;
	if (!n || n >= cap || (n == 1 && s[0] == '.') ||
	    (n == 2 && s[0] == '.' && s[1] == '.'))
		return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	*p = e ? e + 1 : s + n;
	if (e && !e[1])
		return -EINVAL; /* trailing slash */
	return 1;
}

/* The common walk: plain (forward) or cipher (!forward) path in; the other
 * one out. */
/* Make *dfd, the directory plain[0, *done), the directory plain (a path of
 * plaintext names below the root, '/' between them), one component at a
 * time with O_NOFOLLOW. */
static int descend(int *dfd, const char *plain, size_t *done)
{
	char comp[INODE_NAME_MAX];
	const char *s, *e;
	size_t n;
	int nfd;

	while (plain[*done]) {
		s = plain + *done;
		if (*s == '/') {
			(*done)++;
			continue;
		}
		e = strchr(s, '/');
		n = e ? (size_t)(e - s) : strlen(s);
		if (n >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, s, n);
		comp[n] = '\0';
		nfd = openat(*dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);
		if (nfd < 0)
			return -errno;
		close(*dfd);
		*dfd = nfd;
		*done += n;
	}
	return 0;
}

static int translate(struct fs *fs, const char *in, bool forward, char **out)
{
	char comp[RFS_VNAME_MAX], name[INODE_NAME_MAX];
	char stored[RFS_VNAME_MAX], cname[NAMES_MAX_CNAME];
	struct rpath rp = { 0 };
	char *plain = strdup(""), *cipher = strdup(""), *t;
	size_t opened = 0; /* the part of plain that dfd is */
	int dfd = -1, rc;

	*out = NULL;
	if (!plain || !cipher) {
		rc = -ENOMEM;
		goto out;
	}
	if (in[0] == '/') {
		rc = -EINVAL;
		goto out;
	}
	memcpy(rp.iv, rfs_of(fs)->root_iv, sizeof(rp.iv));
	dfd = dup(fs->root_fd);
	if (dfd < 0) {
		rc = -errno;
		goto out;
	}
	while ((rc = next_comp(&in, comp, sizeof(comp))) == 1) {
		unsigned char kind = INODE_REAL;
		/* gocryptfs translates names only: no config mapping here */
		struct inode *dir = NULL;

		rp.plain = plain;
		rp.plen = strlen(plain);
		if (forward) {
			if (strlen(comp) >= sizeof(name)) {
				rc = -EINVAL;
				break;
			}
			strcpy(name, comp);
		} else {
			/* Only a long name is looked for in the directory: a
			 * path of short names needs none of its directories
			 * to exist (as in gocryptfs). */
			rc = 0;
			if (!fs->plaintext && (names_is_long(comp) ||
					       names_is_sidecar(comp)))
				rc = descend(&dfd, plain, &opened);
			if (!rc)
				rc = find_backing(fs, dir, dfd, &rp, comp, name,
						  &kind);
			if (rc)
				break;
			if (kind != INODE_REAL) {
				rc = -EINVAL;
				break;
			}
		}
		if (rpath_excluded(fs, &rp, name)) {
			rc = -EPERM;
			break;
		}
		rc = rname_encrypt(fs, dir, rp.iv, name, stored, cname);
		if (rc < 0)
			break;
		t = rpath_join(plain, strlen(plain), name);
		free(plain);
		plain = t;
		t = rpath_join(cipher, strlen(cipher), stored);
		free(cipher);
		cipher = t;
		if (!plain || !cipher) {
			rc = -ENOMEM;
			break;
		}
		memset(rp.iv, 0, sizeof(rp.iv));
		if (has_diriv(fs))
			rc = names_pathiv(rp.iv, cipher, strlen(cipher),
					  NAMES_PATHIV_DIRIV);
		if (rc < 0)
			break;
	}
	if (!rc) {
		*out = forward ? cipher : plain;
		if (forward)
			cipher = NULL;
		else
			plain = NULL;
	}
out:
	if (dfd >= 0)
		close(dfd);
	free(plain);
	free(cipher);
	return rc;
}

int rfs_encrypt_path(struct fs *fs, const char *plain, char **out)
{
	return translate(fs, plain, true, out);
}

int rfs_decrypt_path(struct fs *fs, const char *cipher, char **out)
{
	int rc = translate(fs, cipher, false, out);

	/* gocryptfs answers every failure of the way back with ENOENT */
	return rc && rc != -ENOMEM ? -ENOENT : rc;
}
