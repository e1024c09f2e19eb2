// SPDX-License-Identifier: MIT
/*
 * The walk: every directory of the cipherdir, depth first, on a heap stack
 * (no recursion: a 30,000-level tree is fine). Each directory is opened
 * relative to its parent's fd with O_NOFOLLOW and checked by (dev, ino)
 * against what was listed; at most MAX_OPEN_DIRS directory fds stay open,
 * the deeper ones are reopened through ".." (checked the same way) on the
 * way back up. Nothing is ever opened that the listing did not say is a
 * directory, a regular file or a symlink, and regular files are opened
 * with O_NONBLOCK and checked with fstat before any read, so FIFOs, device
 * nodes and swapped-in symlinks cannot hang or redirect the walk.
 *
 * Per directory: its gocryptfs.diriv (spec §4.1), every name (§4.3), long
 * names and their sidecars (§4.5), leftovers (§4.1 rmdir, our own repair
 * temporaries), symlink targets (§4.9) and the directory's xattrs (§4.10).
 * Regular files go to the checkers (check.c), hard links once (once
 * through a path gocryptfs can see, if there is one). An object that
 * cannot be opened or listed is corrupt, as gocryptfs counts it, unless
 * it is EACCES and we are not root: then it is skipped.
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "common/secmem.h"
#include "fsck/internal.h"

#define MAX_OPEN_DIRS 64
#define XATTR_BUF 65536
#define PAUSE_MAX_S 120

struct frame {
	struct fnode *node;
	int fd;			/* -1: closed (deep), reopen via ".." */
	struct fdent *ents;
	size_t n, next;
	bool iv_ok;		/* names can be decrypted */
	uint8_t iv[NAMES_DIRIV_LEN];
};

int walk_openat(int dfd, const char *name, int flags)
{
	int fd = openat(dfd, name,
			flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	return fd < 0 ? -errno : fd;
}

/* Read at most cap bytes of the regular file name in dfd; 0 with *len, or
 * -errno (-EINVAL: not a regular file). */
static int read_small(int dfd, const char *name, void *buf, size_t cap,
		      size_t *len)
{
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	*len = 0;
	/* not even opened unless it is a regular file (a device node may
	 * act on open); checked again on the fd */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = walk_openat(dfd, name, O_RDONLY);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		rc = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
	} else {
		n = pread(fd, buf, cap, 0);
		if (n < 0)
			rc = -errno;
		else
			*len = (size_t)n;
	}
	close(fd);
	return rc;
}

int walk_read_diriv(int dfd, const char *name, uint8_t iv[static 16],
		    size_t *len)
{
	uint8_t buf[NAMES_DIRIV_LEN + 1];
	int rc = read_small(dfd, name, buf, sizeof(buf), len);

	if (rc)
		return rc;
	if (*len >= NAMES_DIRIV_LEN)
		memcpy(iv, buf, NAMES_DIRIV_LEN);
	if (*len != NAMES_DIRIV_LEN)
		return -EBADMSG;
	for (size_t i = 0; i < NAMES_DIRIV_LEN; i++)
		if (buf[i])
			return 0;
	return -EBADMSG; /* all zero (spec §4.1) */
}

int walk_read_sidecar(int dfd, const char *name, char *cname, size_t cap)
{
	size_t len;
	int rc;

	if (cap < NAMES_MAX_SIDECAR + 2)
		return -EINVAL;
	rc = read_small(dfd, name, cname, NAMES_MAX_SIDECAR + 1, &len);
	if (rc)
		return rc;
	if (len == 0 || len > NAMES_MAX_SIDECAR || memchr(cname, '\0', len))
		return -EBADMSG;
	cname[len] = '\0';
	return 0;
}

int walk_open_xattr_value(struct fctx *x, uint8_t *out, size_t *outlen,
			  const uint8_t *raw, size_t len)
{
	return names_decrypt_xattr_value(x->n, out, outlen, raw, len);
}

/* An xattr of ours that getxattr fails on: corrupt, as gocryptfs counts
 * it, unless it is EACCES and we are not root (skipped). */
static void xattr_unreadable(struct fctx *x, struct fnode *dir,
			     const char *cname, const char *pname, dev_t dev,
			     ino_t ino, const char *what, const char *xname,
			     const char *plain, int err)
{
	bool skip = err == -EACCES && geteuid() != 0;
	struct fproblem *pr = fproblem_new(skip ? FP_SKIPPED : FP_UNREADABLE,
					   dir, cname, pname);
	char q[600];

	if (!pr)
		return;
	pr->what = what;
	pr->dev = dev;
	pr->ino = ino;
	pr->xname = strdup(xname);
	fo_quote(q, sizeof(q), plain);
	fctx_problem(x, pr, "%sxattr %s cannot be read: %s",
		     skip ? "not checked: " : "", q, strerror(-err));
}

/* The xattrs of an object, through fd or, when path is not NULL, through
 * path (an object that cannot be opened: gocryptfs still reads them). */
static void check_xattrs(struct fctx *x, int fd, const char *path,
			 struct fnode *dir, const char *cname,
			 const char *pname, dev_t dev, ino_t ino,
			 const char *what)
{
	char *list = NULL, plain[NAMES_MAX_PLAIN + 1], q[600], acl[64];
	uint8_t *val = NULL, *pt = NULL;
	size_t pfx = strlen(NAMES_XATTR_PREFIX), dlen;
	ssize_t n, v;

	list = malloc(XATTR_BUF);
	val = malloc(XATTR_BUF);
	pt = malloc(XATTR_BUF);
	if (!list || !val || !pt)
		goto out;
	n = path ? listxattr(path, list, XATTR_BUF) :
		   flistxattr(fd, list, XATTR_BUF);
	if (n <= 0)
		goto out;
	for (char *p = list; p < list + n; p += strlen(p) + 1) {
		struct fproblem *pr;
		int rc;

		if (strncmp(p, NAMES_XATTR_PREFIX, pfx))
			continue; /* ACLs and foreign names: not ours */
		rc = names_decrypt_xattr(x->n, p, plain, sizeof(plain));
		if (rc == 0) {
			v = path ? getxattr(path, p, val, XATTR_BUF) :
				   fgetxattr(fd, p, val, XATTR_BUF);
			if (v < 0 && errno != ENODATA && errno != ENOTSUP) {
				xattr_unreadable(x, dir, cname, pname, dev,
						 ino, what, p, plain, -errno);
				continue;
			}
			if (v <= 0)
				continue; /* gone, or empty: nothing to open */
			if (!walk_open_xattr_value(x, pt, &dlen, val,
						   (size_t)v)) {
				secure_zero(pt, dlen);
				continue;
			}
		}
		pr = fproblem_new(rc ? FP_XNAME : FP_XVALUE, dir, cname,
				  pname);
		if (!pr)
			continue;
		pr->what = what;
		pr->dev = dev;
		pr->ino = ino;
		pr->xname = strdup(p);
		if (rc == 1) {
			/* an ACL name encrypted by old versions: gocryptfs
			 * ignores it and counts it as a corrupt name */
			fo_quote(q, sizeof(q), p);
			fo_quote(acl, sizeof(acl), plain);
			fctx_problem(x, pr, "xattr name %s is the ACL %s "
				     "encrypted (an old format: ignored)", q,
				     acl);
		} else if (rc) {
			fo_quote(q, sizeof(q), p);
			fctx_problem(x, pr, "xattr name %s does not decrypt",
				     q);
		} else {
			fo_quote(q, sizeof(q), plain);
			fctx_problem(x, pr, "value of xattr %s does not "
				     "decrypt", q);
		}
	}
out:
	free(list);
	free(val);
	free(pt);
}

void walk_check_xattrs(struct fctx *x, int fd, struct fnode *dir,
		       const char *cname, const char *pname, dev_t dev,
		       ino_t ino, const char *what)
{
	check_xattrs(x, fd, NULL, dir, cname, pname, dev, ino, what);
}

/* ---- listing and names ------------------------------------------------- */

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fdent *)a)->name,
		      ((const struct fdent *)b)->name);
}

void walk_free_ents(struct fdent *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].name);
		free(e[i].pname);
	}
	free(e);
}

/* Every entry but "." and "..", sorted by name. */
int walk_list_dir(int fd, struct fdent **out, size_t *nout)
{
	char buf[32768];
	struct fdent *e = NULL;
	size_t n = 0, cap = 0;
	ssize_t r;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((r = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < r;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 32;
				struct fdent *ne = realloc(e, nc * sizeof(*e));

				if (!ne) {
					rc = -ENOMEM;
					goto fail;
				}
				e = ne;
				cap = nc;
			}
			memset(&e[n], 0, sizeof(e[n]));
			e[n].name = strdup(d->d_name);
			if (!e[n].name) {
				rc = -ENOMEM;
				goto fail;
			}
			e[n++].type = d->d_type;
		}
	}
	if (r < 0) {
		rc = -errno;
		goto fail;
	}
	if (n)
		qsort(e, n, sizeof(*e), dent_cmp);
	*out = e;
	*nout = n;
	return 0;
fail:
	walk_free_ents(e, n);
	return rc;
}

static bool has_ent(const struct frame *f, const char *name)
{
	struct fdent key = { .name = (char *)(uintptr_t)name };

	if (!f->n)
		return false;
	return bsearch(&key, f->ents, f->n, sizeof(key), dent_cmp) != NULL;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* An entry problem in the directory of f. */
static void entry_problem(struct fctx *x, struct frame *f, enum fp_kind k,
			  const char *name, const char *pname,
			  const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void entry_problem(struct fctx *x, struct frame *f, enum fp_kind k,
			  const char *name, const char *pname,
			  const char *fmt, ...)
{
	struct fproblem *p = fproblem_new(k, f->node, name, pname);
	va_list ap;

	if (!p)
		return;
	va_start(ap, fmt);
	fctx_vproblem(x, p, fmt, ap);
	va_end(ap);
}

static void diriv_problem(struct fctx *x, struct frame *f, int rc, size_t len)
{
	struct fproblem *p = fproblem_new(FP_DIRIV, f->node, NULL,
					  f->node->pname);
	char why[96];

	if (!p)
		return;
	if (rc == -ENOENT)
		snprintf(why, sizeof(why), "is missing");
	else if (rc == -EBADMSG && len == NAMES_DIRIV_LEN)
		snprintf(why, sizeof(why), "is all zero");
	else if (rc == -EBADMSG)
		snprintf(why, sizeof(why), "has %zu byte%s instead of 16%s",
			 len, len == 1 ? "" : "s", len > 16 ? " or more" : "");
	else if (rc == -EINVAL || rc == -ELOOP)
		snprintf(why, sizeof(why), "is not a regular file");
	else
		snprintf(why, sizeof(why), "cannot be read: %s",
			 strerror(-rc));
	fctx_problem(x, p, NAMES_DIRIV_FILE " %s: no name in it can be "
		     "decrypted", why);
}

static void note(struct fctx *x, struct frame *f, const char *cname,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void note(struct fctx *x, struct frame *f, const char *cname,
		 const char *fmt, ...)
{
	struct fproblem *p;
	va_list ap;

	if (x->o->quiet)
		return;
	p = fproblem_new(FP_SKIPPED, f->node, cname, NULL);
	if (!p)
		return;
	p->counted = false;
	p->what = cname ? "entry" : "dir";
	va_start(ap, fmt);
	fctx_vproblem(x, p, fmt, ap);
	va_end(ap);
}

/* Names of one directory (spec §4.3, §4.5, §4.6). */
static void check_names(struct fctx *x, struct frame *f)
{
	char cname[NAMES_MAX_SIDECAR + 2], plain[NAMES_MAX_PLAIN + 1];
	char stored[NAMES_MAX_CNAME], side[NAME_MAX + 1];
	bool root = f->node->depth == 0, pt = x->np->plaintext;
	size_t tried = 0, failed = 0;

	for (size_t i = 0; i < f->n; i++) {
		struct fdent *e = &f->ents[i];
		const char *nm = e->name;
		uint8_t iv[NAMES_DIRIV_LEN];
		size_t len;
		int rc;

		if (root && !strcmp(nm, NAMES_CONF_FILE)) {
			e->skip = true;
			continue;
		}
		if (pt) {
			/* gocryptfs.conf.bak too: a user's file then */
			e->pname = strdup(nm);
			continue;
		}
		if (root && !strcmp(nm, FSCK_CONF_BAK)) {
			/* the backup -passwd -masterkey leaves: gocryptfs
			 * takes it for a name that does not decrypt (its
			 * contents are no file's: not checked) */
			e->skip = true;
			if (f->iv_ok)
				entry_problem(x, f, FP_NAME, nm, NULL, "%s",
					      "a backup of " NAMES_CONF_FILE
					      ", a name that does not "
					      "decrypt: -repair moves it to "
					      "the quarantine");
			continue;
		}
		if (x->np->diriv && !strcmp(nm, NAMES_DIRIV_FILE)) {
			e->skip = true;
			continue;
		}
		if (has_prefix(nm, FSCK_RMDIR_PREFIX)) {
			e->skip = true;
			if (!walk_read_diriv(f->fd, nm, iv, &len))
				fctx_add_iv(x, iv);
			entry_problem(x, f, FP_RMDIR, nm, NULL, "%s",
				      "leftover of an interrupted rmdir");
			continue;
		}
		if (has_prefix(nm, FSCK_TMP_PREFIX)) {
			e->skip = true;
			entry_problem(x, f, FP_TEMP, nm, NULL, "%s",
				      "leftover of an interrupted veilfs "
				      "-repair");
			continue;
		}
		if (has_prefix(nm, FSCK_PARK_PREFIX)) {
			/* a user's object: named again by the next -repair */
			entry_problem(x, f, FP_PARKED, nm, NULL, "%s",
				      "parked by an interrupted veilfs "
				      "-repair");
			continue;
		}
		if (names_is_sidecar(nm)) {
			size_t bl = strlen(nm) - strlen(NAMES_LONG_SUFFIX);
			char parked[NAME_MAX + 32];

			e->skip = true;
			snprintf(side, sizeof(side), "%.*s", (int)bl, nm);
			snprintf(parked, sizeof(parked), FSCK_PARK_PREFIX "%s",
				 side);
			if (!has_ent(f, side) && !has_ent(f, parked))
				entry_problem(x, f, FP_ORPHAN, nm, NULL, "%s",
					      "long-name .name file without "
					      "its entry");
			continue;
		}
		/* sync tools' conflict copies of a diriv: candidates */
		if (x->np->diriv && strstr(nm, "diriv") &&
		    !walk_read_diriv(f->fd, nm, iv, &len))
			fctx_add_iv(x, iv);
		if (!f->iv_ok)
			continue;
		tried++;
		if (names_is_long(nm)) {
			snprintf(side, sizeof(side), "%s" NAMES_LONG_SUFFIX,
				 nm);
			rc = walk_read_sidecar(f->fd, side, cname,
					       sizeof(cname));
			if (rc == -ENOENT) {
				failed++;
				entry_problem(x, f, FP_NOSIDECAR, nm, NULL,
					      "%s", "long name without its "
					      ".name file");
				continue;
			}
			if (rc) {
				failed++;
				entry_problem(x, f, FP_SIDECAR, nm, NULL,
					      "its .name file %s",
					      rc == -EBADMSG ?
						      "has an impossible size" :
					      rc == -EINVAL ?
						      "is not a regular file" :
						      "cannot be read");
				continue;
			}
			if (names_decrypt(x->n, f->iv, cname, strlen(cname),
					  plain, sizeof(plain))) {
				failed++;
				entry_problem(x, f, FP_NAME, nm, NULL, "%s",
					      "the name in its .name file "
					      "does not decrypt");
				continue;
			}
			if (names_store_name(x->n, cname, stored,
					     sizeof(stored)) < 0 ||
			    strcmp(stored, nm)) {
				/* gocryptfs cannot look it up: what is in
				 * it is hidden (no pname), as behind a name
				 * that does not decrypt */
				entry_problem(x, f, FP_HASH, nm, plain, "%s",
					      "stored under the wrong "
					      "long-name hash");
				continue;
			}
			e->pname = strdup(plain);
			continue;
		}
		if (names_decrypt(x->n, f->iv, nm, strlen(nm), plain,
				  sizeof(plain))) {
			failed++;
			entry_problem(x, f, FP_NAME, nm, NULL, "%s",
				      "name does not decrypt");
			continue;
		}
		e->pname = strdup(plain);
	}
	if (tried > 1 && failed == tried && x->np->diriv)
		note(x, f, NULL, "none of its %lu names decrypts under its "
		     NAMES_DIRIV_FILE " (copied from another directory?): "
		     "-repair searches for the right one",
		     (unsigned long)tried);
}

/* Everything about a directory just opened at f->fd. */
static int enter_dir(struct fctx *x, struct frame *f)
{
	size_t len = 0;
	int rc;

	__atomic_add_fetch(&x->ndirs, 1, __ATOMIC_RELAXED);
	/* before the listing: gocryptfs reads them even when that fails */
	walk_check_xattrs(x, f->fd, f->node, NULL, f->node->pname,
			  f->node->dev, f->node->ino, "dir");
	rc = walk_list_dir(f->fd, &f->ents, &f->n);
	if (rc)
		return rc;
	if (!x->np->plaintext && x->np->diriv) {
		rc = walk_read_diriv(f->fd, NAMES_DIRIV_FILE, f->iv, &len);
		if (!rc) {
			f->iv_ok = true;
			fctx_add_iv(x, f->iv);
		} else {
			if (len > NAMES_DIRIV_LEN)
				fctx_add_iv(x, f->iv); /* extra bytes */
			diriv_problem(x, f, rc, len);
		}
	} else {
		memset(f->iv, 0, sizeof(f->iv));
		f->iv_ok = true;
	}
	check_names(x, f);
	return 0;
}

/* ---- reopening ----------------------------------------------------------- */

int walk_reopen(struct fctx *x, const struct fnode *n)
{
	const struct fnode **chain;
	struct stat st;
	int fd, nfd;

	chain = malloc((n->depth + 1) * sizeof(*chain));
	if (!chain)
		return -ENOMEM;
	for (const struct fnode *d = n; d; d = d->parent)
		chain[d->depth] = d;
	/* a new open file description: its own directory offset */
	fd = walk_openat(x->rootfd, ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		goto out;
	for (unsigned i = 1; i <= n->depth; i++) {
		nfd = walk_openat(fd, chain[i]->cname, O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = nfd;
		if (fd < 0)
			goto out;
		if (fstat(fd, &st) || st.st_dev != chain[i]->dev ||
		    st.st_ino != chain[i]->ino) {
			close(fd);
			fd = -ESTALE;
			goto out;
		}
	}
out:
	free(chain);
	return fd;
}

/* The parent of the frame at child (whose fd is open) was closed: reopen
 * it through "..", or from the root if that is not the same directory. */
static int reopen_parent(struct fctx *x, struct frame *child,
			 struct frame *parent)
{
	struct stat st;
	int fd = walk_openat(child->fd, "..", O_RDONLY | O_DIRECTORY);

	if (fd >= 0 && !fstat(fd, &st) && st.st_dev == parent->node->dev &&
	    st.st_ino == parent->node->ino)
		return fd;
	if (fd >= 0)
		close(fd);
	return walk_reopen(x, parent->node);
}

/* ---- the walk ------------------------------------------------------------ */

static void skipped(struct fctx *x, struct frame *f, const char *name,
		    const char *pname, const char *what, const char *why,
		    int err)
{
	struct fproblem *p = fproblem_new(FP_SKIPPED, f->node, name, pname);

	if (!p)
		return;
	p->what = what;
	if (err)
		fctx_problem(x, p, "not checked: %s: %s", why,
			     strerror(-err));
	else
		fctx_problem(x, p, "not checked: %s", why);
}

/* An object that cannot be opened, listed or read: corrupt, as gocryptfs
 * counts it, unless it is EACCES and we are not root (then skipped: root
 * may read it, and gocryptfs says so too). */
static void unreadable(struct fctx *x, struct frame *f, const char *name,
		       const char *pname, const char *what, const char *why,
		       int err)
{
	struct fproblem *p;

	if (err == -EACCES && geteuid() != 0) {
		skipped(x, f, name, pname, what, why, err);
		return;
	}
	p = fproblem_new(FP_UNREADABLE, f->node, name, pname);
	if (!p)
		return;
	p->what = what;
	fctx_problem(x, p, "%s: %s", why, strerror(-err));
}

/* Can gocryptfs see the entry pname (NULL: its name does not decrypt) of
 * directory d? Not if a name on the way does not decrypt. */
static bool visible(const struct fnode *d, const char *pname)
{
	if (!pname)
		return false;
	for (; d && d->parent; d = d->parent)
		if (!d->pname)
			return false;
	return true;
}

static void check_symlink(struct fctx *x, struct frame *f, struct fdent *e)
{
	char buf[PATH_MAX + 1], out[PATH_MAX + 1];
	struct fproblem *p;
	struct stat st;
	ssize_t n = readlinkat(f->fd, e->name, buf, sizeof(buf) - 1);

	if (n < 0) {
		unreadable(x, f, e->name, e->pname, "symlink",
			   "cannot read the target", -errno);
		return;
	}
	if (!names_decrypt_symlink(x->n, buf, (size_t)n, out, sizeof(out)))
		return;
	p = fproblem_new(FP_SYMLINK, f->node, e->name, e->pname);
	if (!p)
		return;
	if (!fstatat(f->fd, e->name, &st, AT_SYMLINK_NOFOLLOW)) {
		p->dev = st.st_dev;
		p->ino = st.st_ino;
	}
	fctx_problem(x, p, "target does not decrypt");
}

static void pause_hook(struct fctx *x)
{
	struct timespec ts = { 0, 10 * 1000000L };

	fputs("fsck: test pause\n", x->o->err);
	fflush(x->o->err);
	for (int i = 0; i < PAUSE_MAX_S * 100 && !fctx_stopped(x); i++)
		nanosleep(&ts, NULL);
}

/* Hard links once; but a link gocryptfs cannot see does not stand for a
 * visible one that comes later: that one is checked (and counted) again.
 * true: seen already (or out of memory: not checked twice either). */
static bool link_seen(struct fctx *x, struct frame *f, struct fdent *e,
		      const struct stat *st)
{
	bool vis;

	if (st->st_nlink <= 1)
		return false;
	vis = visible(f->node, e->pname);
	if (idset_has(&x->links, st->st_dev, st->st_ino) ||
	    (!vis && idset_has(&x->hlinks, st->st_dev, st->st_ino)))
		return true;
	return idset_add(vis ? &x->links : &x->hlinks, st->st_dev,
			 st->st_ino) <= 0;
}

/* The file or directory e cannot be opened (err): gocryptfs reads its
 * xattrs first all the same (each one that fails counts too), so they
 * are read through an O_PATH fd, which needs no permission on it. */
static void closed_object(struct fctx *x, struct frame *f, struct fdent *e,
			  bool dir, int err)
{
	const char *what = dir ? "dir" : "file";
	char path[40];
	struct stat st;
	int fd = walk_openat(f->fd, e->name, O_PATH);

	if (fd >= 0 && !fstat(fd, &st) &&
	    (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode))) {
		if (!dir && link_seen(x, f, e, &st)) {
			close(fd);
			return;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		check_xattrs(x, -1, path, f->node, e->name, e->pname,
			     st.st_dev, st.st_ino, what);
	}
	if (fd >= 0)
		close(fd);
	unreadable(x, f, e->name, e->pname, what, "cannot open", err);
}

static void check_file(struct fctx *x, struct frame *f, struct fdent *e,
		       unsigned long *queued)
{
	struct stat st;
	int fd = walk_openat(f->fd, e->name, O_RDONLY);

	if (fd < 0) {
		closed_object(x, f, e, false, fd);
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		skipped(x, f, e->name, e->pname, "file",
			"changed while being checked", 0);
		return;
	}
	if (link_seen(x, f, e, &st)) {
		close(fd);
		return;
	}
	if (queue_file(x, fd, f->node, e->name, e->pname, st.st_dev,
		       st.st_ino, (uint64_t)st.st_size))
		return;
	if (++*queued == (unsigned long)x->pause_files)
		pause_hook(x);
}

/* Open the directory e of frame f as a new frame at nf; 1 to enter it,
 * 0 to pass it by, negative errno. */
static int open_child(struct fctx *x, struct frame *f, struct fdent *e,
		      struct frame *nf)
{
	uint8_t iv[NAMES_DIRIV_LEN];
	struct stat st;
	size_t len;
	int fd = walk_openat(f->fd, e->name, O_RDONLY | O_DIRECTORY), rc;

	memset(nf, 0, sizeof(*nf));
	nf->fd = -1;
	if (fd < 0) {
		closed_object(x, f, e, true, fd);
		return 0;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		unreadable(x, f, e->name, e->pname, "dir", "cannot stat", rc);
		return 0;
	}
	rc = idset_add(&x->dirs, st.st_dev, st.st_ino);
	if (rc <= 0) {
		close(fd);
		if (rc == 0)
			skipped(x, f, e->name, e->pname, "dir",
				"reached twice (a bind mount loop?)", 0);
		return rc;
	}
	if (!e->pname && !x->np->plaintext && x->np->diriv &&
	    walk_read_diriv(fd, NAMES_DIRIV_FILE, iv, &len) &&
	    !check_dir_ours(x, fd)) {
		/* no name, no IV and nothing in it written with our key:
		 * not a gocryptfs directory, as gocryptfs sees it too (it
		 * shows neither). With a file of ours in it, it is one of
		 * ours damaged twice: checked like one whose IV alone is
		 * lost, so -repair gives it an IV and its entries names. */
		close(fd);
		note(x, f, e->name, "not checked inside: a directory "
		     "without " NAMES_DIRIV_FILE " (made by another "
		     "program?)");
		return 0;
	}
	nf->node = fnode_new(f->node, e->name, e->pname, st.st_dev,
			     st.st_ino);
	if (!nf->node) {
		close(fd);
		return -ENOMEM;
	}
	nf->fd = fd;
	return 1;
}

static void drop_frame(struct frame *f)
{
	if (f->fd >= 0)
		close(f->fd);
	walk_free_ents(f->ents, f->n);
	fnode_put(f->node);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

int walk_tree(struct fctx *x)
{
	struct frame *st = NULL, *f;
	size_t depth = 0, cap = 0;
	unsigned long queued = 0;
	struct stat sb;
	int rc = 0;

	cap = 64;
	st = calloc(cap, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st[0].fd = fcntl(x->rootfd, F_DUPFD_CLOEXEC, 0);
	if (st[0].fd < 0 || fstat(st[0].fd, &sb)) {
		rc = -errno;
		goto out;
	}
	st[0].node = fnode_get(x->root);
	idset_add(&x->dirs, sb.st_dev, sb.st_ino);
	depth = 1;
	rc = enter_dir(x, &st[0]);
	if (rc)
		goto out;
	while (depth && !fctx_stopped(x)) {
		struct fdent *e;

		f = &st[depth - 1];
		if (f->next == f->n) {
			if (depth > 1 && st[depth - 2].fd < 0) {
				int pfd = reopen_parent(x, f, &st[depth - 2]);

				if (pfd < 0) {
					skipped(x, &st[depth - 2], NULL, NULL,
						"dir", "changed while being "
						"checked", pfd);
					st[depth - 2].next = st[depth - 2].n;
				}
				st[depth - 2].fd = pfd;
			}
			drop_frame(f);
			depth--;
			continue;
		}
		e = &f->ents[f->next++];
		if (e->skip)
			continue;
		if (e->type == DT_UNKNOWN) {
			if (fstatat(f->fd, e->name, &sb, AT_SYMLINK_NOFOLLOW))
				continue; /* vanished */
			e->type = S_ISDIR(sb.st_mode)	? DT_DIR :
				  S_ISREG(sb.st_mode)	? DT_REG :
				  S_ISLNK(sb.st_mode)	? DT_LNK :
							  DT_FIFO;
		}
		if (e->type == DT_REG) {
			check_file(x, f, e, &queued);
		} else if (e->type == DT_LNK) {
			check_symlink(x, f, e);
		} else if (e->type == DT_DIR) {
			struct frame nf;

			rc = open_child(x, f, e, &nf);
			if (rc < 0)
				goto out;
			if (rc == 0)
				continue;
			if (depth == cap) {
				struct frame *ns = realloc(st, 2 * cap *
							       sizeof(*st));

				if (!ns) {
					drop_frame(&nf);
					rc = -ENOMEM;
					goto out;
				}
				st = ns;
				cap *= 2;
			}
			st[depth++] = nf;
			/* bounded directory fds: close the oldest open */
			if (depth > MAX_OPEN_DIRS &&
			    st[depth - 1 - MAX_OPEN_DIRS].fd >= 0) {
				close(st[depth - 1 - MAX_OPEN_DIRS].fd);
				st[depth - 1 - MAX_OPEN_DIRS].fd = -1;
			}
			rc = enter_dir(x, &st[depth - 1]);
			if (rc) {
				/* f may have moved with st (realloc) */
				unreadable(x, &st[depth - 2], e->name,
					   e->pname, "dir", "cannot list", rc);
				drop_frame(&st[--depth]);
			}
		}
		/* FIFOs, sockets, devices: the name was all there is */
	}
	rc = 0;
out:
	while (depth)
		drop_frame(&st[--depth]);
	free(st);
	idset_fini(&x->hlinks);
	return rc;
}
