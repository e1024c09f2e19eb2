// SPDX-License-Identifier: MIT
/*
 * -repair: what the check recorded, fixed in place, one atomic step at a
 * time, each step preceded by a copy in the quarantine and a line in the
 * report (quarantine.c). A run killed at any point leaves a tree that the
 * next run repairs: half-written blocks still fail and are redone, our
 * temporaries have a prefix the next check recognises, and every rename is
 * RENAME_NOREPLACE.
 *
 * First the names, directory by directory, deepest first: the IV of a
 * directory whose names do not decrypt is searched among every diriv of
 * the cipherdir, the zero IV and those earlier runs quarantined (a sync tool
 * copies one from elsewhere); the one under which most names decrypt to
 * plausible names becomes its gocryptfs.diriv. Entries that still do not
 * decrypt are renamed under it, to their real name where another candidate
 * IV reveals it, otherwise to recovered-NNNN (contents do not depend on
 * names, so they survive). Entries that are not ours at all (no readable
 * byte, a directory without a diriv) go to the quarantine instead. Then
 * contents: bad blocks become holes (they read as zeros; a partial last
 * block becomes encrypted zeros, a fragment too short to hold data is cut
 * off), or with -repair-truncate the file is cut before its first bad
 * block; a damaged header that the check could restore is rewritten.
 * Then symlinks whose target does not decrypt, and xattrs, are removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/openreg.h"
#include "common/secmem.h"
#include "fsck/internal.h"

#define XBUF 65536
#define RENAME_TRIES 1000
#define CHUNK_FOR_REPAIR 1 /* check_blocks buffers: one block */
#define SAMPLE 64
#define FULL_SEARCH (1u << 20) /* name decryptions */

struct rctx {
	struct fctx *x;
	const struct fnode *cnode; /* the directory open at cfd */
	int cfd;
	uint8_t (*ivs)[NAMES_DIRIV_LEN]; /* candidates, unique */
	size_t nivs;
	struct fnode **nodes; /* every node problems refer to */
	size_t nnodes;
};

/* ---- messages ----------------------------------------------------------- */

/* The report line before an action (write-ahead). */
static void intent(struct rctx *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void intent(struct rctx *r, const char *fmt, ...)
{
	char *buf;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&buf, fmt, ap) < 0)
		buf = NULL;
	va_end(ap);
	qr_report(r->x, "%s", buf ? buf : "(out of memory)");
	free(buf);
}

/* The outcome on stdout (and in the report). */
static void outcome(struct rctx *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void outcome(struct rctx *r, int rc, const char *fmt, ...)
{
	char *buf;
	va_list ap;

	if (rc == -EINTR)
		return;
	va_start(ap, fmt);
	if (vasprintf(&buf, fmt, ap) < 0)
		buf = NULL;
	va_end(ap);
	if (!buf)
		return;
	if (rc) {
		qr_report(r->x, "  FAILED: %s", strerror(-rc));
		fo_line(r->x, "fsck: not repaired: %s: %s", buf,
			strerror(-rc));
	} else if (!r->x->o->quiet) {
		fo_line(r->x, "fsck: repaired: %s", buf);
	}
	free(buf);
}

static char *q(const char *s)
{
	static __thread char buf[4][1024];
	static __thread unsigned k;
	char *b = buf[k++ % 4];

	fo_quote(b, sizeof(buf[0]), s);
	return b;
}

/* ---- steps ------------------------------------------------------------- */

static int w_pwrite(struct fctx *x, int fd, const void *b, size_t n, off_t off)
{
	int rc = qr_step(x);

	if (rc)
		return rc;
	if (pwrite(fd, b, n, off) != (ssize_t)n)
		return errno ? -errno : -EIO;
	return 0;
}

static int w_truncate(struct fctx *x, int fd, off_t len)
{
	int rc = qr_step(x);

	if (rc)
		return rc;
	return ftruncate(fd, len) ? -errno : 0;
}

static int w_unlink(struct fctx *x, int dfd, const char *name, int flags)
{
	int rc = qr_step(x);

	if (rc)
		return rc;
	return unlinkat(dfd, name, flags) ? -errno : 0;
}

static int w_rename(struct fctx *x, int dfd, const char *from,
		    const char *to, unsigned flags)
{
	int rc = qr_step(x);

	if (rc)
		return rc;
	return renameat2(dfd, from, dfd, to, flags) ? -errno : 0;
}

/* A new file FSCK_TMP_PREFIX<random> in dfd holding buf, fsync'ed. */
static int write_tmp(struct fctx *x, int dfd, const void *buf, size_t len,
		     mode_t mode, char *name, size_t cap)
{
	uint8_t rnd[8];
	int fd, rc = qr_step(x);

	if (rc)
		return rc;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	snprintf(name, cap, FSCK_TMP_PREFIX "%02x%02x%02x%02x%02x%02x%02x%02x",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6],
		 rnd[7]);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd))
		rc = errno ? -errno : -EIO;
	close(fd);
	if (rc)
		unlinkat(dfd, name, 0);
	return rc;
}

/* ---- finding things ---------------------------------------------------- */

static int dir_fd(struct rctx *r, const struct fnode *n)
{
	if (r->cnode == n && r->cfd >= 0)
		return r->cfd;
	if (r->cfd >= 0)
		close(r->cfd);
	r->cnode = NULL;
	r->cfd = walk_reopen(r->x, n);
	if (r->cfd >= 0)
		r->cnode = n;
	return r->cfd;
}

/* The regular file of p, checked to be the one the check saw (and, with
 * same_size, of the size it had). */
static int open_file(struct rctx *r, const struct fproblem *p, int flags,
		     bool same_size)
{
	struct stat st;
	int dfd = dir_fd(r, p->dir), fd;

	if (dfd < 0)
		return dfd;
	fd = walk_openat(dfd, p->cname, flags);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_dev != p->dev ||
	    st.st_ino != p->ino ||
	    (same_size && (uint64_t)st.st_size != p->size)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static void mark_done_ino(struct fctx *x, dev_t dev, ino_t ino)
{
	for (struct fproblem *p = x->probs; p; p = p->next)
		if (p->ino == ino && p->dev == dev && p->ino)
			p->done = true;
}

static bool file_all_bad(struct fctx *x, dev_t dev, ino_t ino)
{
	for (struct fproblem *p = x->probs; p; p = p->next)
		if ((p->kind == FP_CONTENT || p->kind == FP_SHORT) &&
		    p->all_bad && p->ino == ino && p->dev == dev)
			return true;
	return false;
}

/* An entry of dir was renamed: problems and nodes follow it. */
static int follow_rename(struct rctx *r, const struct fnode *dir,
			 const char *from, const char *to)
{
	for (struct fproblem *p = r->x->probs; p; p = p->next) {
		if (p->dir == dir && p->cname && !strcmp(p->cname, from)) {
			char *s = strdup(to);

			if (!s)
				return -ENOMEM;
			free(p->cname);
			p->cname = s;
		}
	}
	for (size_t i = 0; i < r->nnodes; i++) {
		struct fnode *n = r->nodes[i];

		if (n->parent == dir && !strcmp(n->cname, from)) {
			char *s = strdup(to);

			if (!s)
				return -ENOMEM;
			free(n->cname);
			n->cname = s;
		}
	}
	return 0;
}

/* ---- quarantining entries --------------------------------------------- */

/* Copy the entry name of dfd to the quarantine and remove it; directories
 * are moved (same filesystem only). */
static int quarantine_entry(struct rctx *r, int dfd, const char *name,
			    const char *where)
{
	struct fctx *x = r->x;
	char target[4097], *qname = NULL;
	struct stat st;
	ssize_t n;
	int fd, rc;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (S_ISDIR(st.st_mode)) {
		intent(r, "move directory %s in %s to the quarantine", q(name),
		       where);
		rc = qr_move_dir(x, dfd, name, &qname);
		if (rc == -EXDEV)
			qr_report(x, "  the quarantine is on another "
				  "filesystem: left in place");
	} else if (S_ISREG(st.st_mode)) {
		fd = walk_openat(dfd, name, O_RDONLY);
		if (fd < 0)
			return fd;
		rc = qr_copy_file(x, fd, name, &qname);
		close(fd);
		if (!rc) {
			intent(r, "remove %s in %s (copy: %s)", q(name), where,
			       qname);
			rc = w_unlink(x, dfd, name, 0);
		}
	} else if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		rc = qr_save_symlink(x, target, name, &qname);
		if (!rc) {
			intent(r, "remove symlink %s in %s (copy: %s)", q(name),
			       where, qname);
			rc = w_unlink(x, dfd, name, 0);
		}
	} else {
		/* a FIFO, socket or device: no data, the node is the copy */
		rc = qr_save_node(x, &st, name, &qname);
		if (!rc) {
			intent(r, "remove %s in %s (copy: %s)", q(name), where,
			       qname);
			rc = w_unlink(x, dfd, name, 0);
		}
	}
	outcome(r, rc, "entry %s in %s moved to the quarantine%s%s", q(name),
		where, qname ? " as " : "", qname ? qname : "");
	if (!rc) {
		/* what was wrong with it went along (not if another hard
		 * link keeps the inode here) */
		if (S_ISDIR(st.st_mode) || st.st_nlink <= 1)
			mark_done_ino(x, st.st_dev, st.st_ino);
		rc = fsync(dfd) ? -errno : 0;
	}
	free(qname);
	return rc;
}

/* ---- directories ------------------------------------------------------- */

struct obj {
	char cur[NAME_MAX + 1];	 /* its name in the directory now */
	char orig[NAME_MAX + 1]; /* before it was parked */
	bool parked;
	char cname[NAMES_MAX_SIDECAR + 2]; /* the encrypted name; "" none */
	bool is_long;			   /* orig is a hashed long name */
	bool side_ok;			   /* its sidecar holds cname */
	char side[NAME_MAX + 8];	   /* its sidecar file; "" none */
	struct stat st;
};

static int iv_cmp(const void *a, const void *b)
{
	return memcmp(a, b, NAMES_DIRIV_LEN);
}

static int write_diriv(struct rctx *r, int dfd, const char *where,
		       const uint8_t *iv, const char *why)
{
	struct fctx *x = r->x;
	char tmp[64], target[4097], *qname = NULL;
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	if (!fstatat(dfd, NAMES_DIRIV_FILE, &st, AT_SYMLINK_NOFOLLOW)) {
		if (S_ISDIR(st.st_mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (S_ISREG(st.st_mode)) {
			fd = walk_openat(dfd, NAMES_DIRIV_FILE, O_RDONLY);
			if (fd < 0) {
				rc = fd;
				goto out;
			}
			rc = qr_copy_file(x, fd, NAMES_DIRIV_FILE, &qname);
			close(fd);
		} else if (S_ISLNK(st.st_mode)) {
			n = readlinkat(dfd, NAMES_DIRIV_FILE, target,
				       sizeof(target) - 1);
			if (n < 0) {
				rc = -errno;
				goto out;
			}
			target[n] = '\0';
			rc = qr_save_symlink(x, target, NAMES_DIRIV_FILE,
					     &qname);
		} else {
			rc = qr_save_node(x, &st, NAMES_DIRIV_FILE, &qname);
		}
		if (rc)
			goto out;
	}
	intent(r, "%s: write " NAMES_DIRIV_FILE " (%s)%s%s", where, why,
	       qname ? "; the old one: " : "", qname ? qname : "");
	rc = write_tmp(x, dfd, iv, NAMES_DIRIV_LEN, 0444, tmp, sizeof(tmp));
	if (!rc) {
		rc = w_rename(x, dfd, tmp, NAMES_DIRIV_FILE, 0);
		if (rc)
			unlinkat(dfd, tmp, 0);
	}
	if (!rc && fsync(dfd))
		rc = -errno;
out:
	outcome(r, rc, "%s: new " NAMES_DIRIV_FILE " (%s)", where, why);
	free(qname);
	return rc;
}

/* Is dir name in dfd a directory without a valid diriv and with nothing
 * of ours in it? */
static bool foreign_dir(struct fctx *x, int dfd, const char *name)
{
	uint8_t iv[NAMES_DIRIV_LEN];
	size_t len;
	bool r;
	int fd = walk_openat(dfd, name, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return false;
	/* without its IV it may still be ours (its name damaged too):
	 * moving it away would take its intact files out of the view */
	r = walk_read_diriv(fd, NAMES_DIRIV_FILE, iv, &len) != 0 &&
	    !check_dir_ours(x, fd);
	close(fd);
	return r;
}

/* A copy of the sidecar name in dfd in the quarantine: its bytes if it is
 * a regular file, else the same node (never opened: a device node's open
 * may act). -ENOENT when there is none. */
static int quarantine_side(struct fctx *x, int dfd, const char *name,
			   char **qname)
{
	struct stat st;
	int fd = openreg_at(dfd, name, O_RDONLY, false, &st), rc;

	*qname = NULL;
	if (fd == -EFTYPE_NOTREG)
		return qr_save_node(x, &st, name, qname);
	if (fd < 0)
		return fd;
	rc = qr_copy_file(x, fd, name, qname);
	close(fd);
	return rc;
}

/* Quarantine o's sidecar (after o got another name). */
static int drop_sidecar(struct rctx *r, int dfd, struct obj *o)
{
	char *qname = NULL;
	int rc;

	if (!o->side[0])
		return 0;
	rc = quarantine_side(r->x, dfd, o->side, &qname);
	if (rc == -ENOENT)
		return 0;
	if (!rc) {
		intent(r, "remove the old %s (copy: %s)", q(o->side), qname);
		rc = w_unlink(r->x, dfd, o->side, 0);
	}
	free(qname);
	if (!rc)
		o->side[0] = '\0';
	return rc;
}

static int rename_cur(struct rctx *r, int dfd, const struct fnode *dir,
		      struct obj *o, const char *to)
{
	int rc = w_rename(r->x, dfd, o->cur, to, RENAME_NOREPLACE);

	if (!rc)
		rc = follow_rename(r, dir, o->cur, to);
	if (!rc)
		snprintf(o->cur, sizeof(o->cur), "%s", to);
	return rc;
}

/* Before a directory gets another IV, every entry that is to be renamed
 * is parked under FSCK_PARK_PREFIX<name>, a name that can never decrypt:
 * otherwise a run killed in between would leave names of the old IV that
 * may decrypt (to garbage) under the new one. */
static int park_obj(struct rctx *r, int dfd, const struct fnode *dir,
		    const char *where, struct obj *o, unsigned *seq)
{
	char to[NAME_MAX + 1];
	int rc = snprintf(to, sizeof(to), FSCK_PARK_PREFIX "%s", o->cur);

	if (rc < 0 || (size_t)rc >= sizeof(to)) /* too long to keep its name */
		snprintf(to, sizeof(to), FSCK_PARK_PREFIX "#%u", (*seq)++);
	intent(r, "park %s in %s as %s", q(o->cur), where, q(to));
	rc = rename_cur(r, dfd, dir, o, to);
	if (!rc)
		o->parked = true; /* a step on the way: not shown */
	else
		outcome(r, rc, "entry %s in %s parked", q(o->orig), where);
	return rc;
}

/* Rename object o of the directory open at dfd to plaintext name real
 * under iv (a hashed long name gets its sidecar first). *next numbers the
 * recovered-NNNN names used on collisions. */
static int rename_obj(struct rctx *r, int dfd, const struct fnode *dir,
		      const char *where, struct obj *o, const uint8_t *iv,
		      char *real, size_t realcap, unsigned *next,
		      const char *how)
{
	struct fctx *x = r->x;
	char newc[NAMES_MAX_CNAME], stored[NAMES_MAX_CNAME], tmp[64];
	char side[NAMES_MAX_CNAME + 8], got[NAMES_MAX_SIDECAR + 2];
	char was[NAME_MAX + 1];
	struct stat st;
	int rc = 0, lg;

	snprintf(was, sizeof(was), "%s", o->orig);
	for (int t = 0; t < RENAME_TRIES; t++) {
		rc = names_encrypt(x->n, iv, real, newc, sizeof(newc));
		if (rc)
			goto out;
		lg = names_store_name(x->n, newc, stored, sizeof(stored));
		if (lg < 0) {
			rc = lg;
			goto out;
		}
		if (!fstatat(dfd, stored, &st, AT_SYMLINK_NOFOLLOW) ||
		    !strcmp(stored, o->cur)) {
			/* taken: another name */
			snprintf(real, realcap, FSCK_RECOVERED "%04u",
				 (*next)++);
			continue;
		}
		intent(r, "rename %s in %s to %s (ciphertext %s): %s",
		       q(o->cur), where, q(real), q(stored), how);
		if (lg) {
			snprintf(side, sizeof(side), "%s" NAMES_LONG_SUFFIX,
				 stored);
			rc = write_tmp(x, dfd, newc, strlen(newc), 0444, tmp,
				       sizeof(tmp));
			if (rc)
				goto out;
			rc = w_rename(x, dfd, tmp, side, RENAME_NOREPLACE);
			if (rc == -EEXIST &&
			    !walk_read_sidecar(dfd, side, got, sizeof(got)) &&
			    !strcmp(got, newc))
				rc = 0; /* the same sidecar is there */
			if (rc) {
				unlinkat(dfd, tmp, 0);
				if (rc != -EEXIST)
					goto out;
				snprintf(real, realcap, FSCK_RECOVERED "%04u",
					 (*next)++);
				continue;
			}
			unlinkat(dfd, tmp, 0);
		}
		rc = rename_cur(r, dfd, dir, o, stored);
		if (rc == -EEXIST) {
			snprintf(real, realcap, FSCK_RECOVERED "%04u",
				 (*next)++);
			continue;
		}
		if (!rc && (!lg || strcmp(o->side, side)))
			rc = drop_sidecar(r, dfd, o); /* not the one it kept */
		goto out;
	}
	rc = -EEXIST;
out:
	outcome(r, rc, "entry %s in %s is now %s (a %s; %s)", q(was), where,
		q(real), S_ISDIR(o->st.st_mode) ? "directory" :
		S_ISREG(o->st.st_mode) ? "file" :
		S_ISLNK(o->st.st_mode) ? "symlink" : "special file", how);
	return rc;
}

static bool has_ent(struct fdent *e, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(e[i].name, name))
			return true;
	return false;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* The entries of a directory that are objects (not internal, not junk);
 * junk (leftovers, orphan sidecars) is quarantined on the way. */
static size_t collect(struct rctx *r, int dfd, const struct fnode *node,
		      const char *where, struct fdent *ents, size_t n,
		      struct obj *objs, unsigned *fails)
{
	struct fctx *x = r->x;
	char side[NAME_MAX + 8];
	bool root = node->depth == 0;
	size_t no = 0;

	for (size_t i = 0; i < n; i++) {
		const char *nm = ents[i].name;
		struct obj *o = &objs[no];

		if (root && !strcmp(nm, NAMES_CONF_FILE))
			continue;
		if (x->np->diriv && !strcmp(nm, NAMES_DIRIV_FILE))
			continue;
		/* junk: leftovers, and the backup of the config, which
		 * gocryptfs takes for a name that does not decrypt (names
		 * are only collected when encrypted: a user's file
		 * otherwise); kept in the quarantine, never renamed into
		 * the plaintext view */
		if ((root && !strcmp(nm, FSCK_CONF_BAK)) ||
		    has_prefix(nm, FSCK_RMDIR_PREFIX) ||
		    has_prefix(nm, FSCK_TMP_PREFIX)) {
			if (quarantine_entry(r, dfd, nm, where))
				(*fails)++;
			continue;
		}
		if (names_is_sidecar(nm)) {
			snprintf(side, sizeof(side), FSCK_PARK_PREFIX "%.*s",
				 (int)(strlen(nm) - strlen(NAMES_LONG_SUFFIX)),
				 nm);
			/* its entry, or its entry parked */
			if (!has_ent(ents, n,
				     side + strlen(FSCK_PARK_PREFIX)) &&
			    !has_ent(ents, n, side) &&
			    quarantine_entry(r, dfd, nm, where))
				(*fails)++;
			continue;
		}
		memset(o, 0, sizeof(*o));
		if (fstatat(dfd, nm, &o->st, AT_SYMLINK_NOFOLLOW))
			continue;
		snprintf(o->cur, sizeof(o->cur), "%s", nm);
		o->parked = has_prefix(nm, FSCK_PARK_PREFIX);
		snprintf(o->orig, sizeof(o->orig), "%s",
			 o->parked ? nm + strlen(FSCK_PARK_PREFIX) : nm);
		if (names_is_long(o->orig)) {
			o->is_long = true;
			snprintf(side, sizeof(side), "%s" NAMES_LONG_SUFFIX,
				 o->orig);
			if (has_ent(ents, n, side))
				snprintf(o->side, sizeof(o->side), "%s", side);
			o->side_ok = o->side[0] &&
				     !walk_read_sidecar(dfd, side, o->cname,
							sizeof(o->cname));
			if (!o->side_ok)
				o->cname[0] = '\0';
		} else if (o->orig[0] != '#') {
			snprintf(o->cname, sizeof(o->cname), "%s", o->orig);
		}
		no++;
	}
	return no;
}

/* o decrypts under iv and is stored as it should be. */
static bool fits(struct fctx *x, const struct obj *o, const uint8_t *iv,
		 bool plausible, char *plain, size_t cap)
{
	char stored[NAMES_MAX_CNAME];

	if (!o->cname[0] || names_decrypt(x->n, iv, o->cname,
					  strlen(o->cname), plain, cap))
		return false;
	if (plausible && !fo_plausible(plain, strlen(plain)))
		return false;
	return names_store_name(x->n, o->cname, stored, sizeof(stored)) >= 0 &&
	       !strcmp(stored, o->cur);
}

/* Not ours at all (nothing readable in it): quarantined, not renamed. */
static bool stranger(struct rctx *r, int dfd, const struct obj *o)
{
	struct fctx *x = r->x;

	if (S_ISREG(o->st.st_mode))
		return file_all_bad(x, o->st.st_dev, o->st.st_ino) ||
		       (o->st.st_size > 0 &&
			o->st.st_size < CONTENT_HEADER_LEN);
	if (S_ISDIR(o->st.st_mode))
		return x->np->diriv && foreign_dir(x, dfd, o->cur);
	if (S_ISLNK(o->st.st_mode)) {
		char t[4097], d[4097];
		ssize_t tl = readlinkat(dfd, o->cur, t, sizeof(t) - 1);

		return tl < 0 || names_decrypt_symlink(x->n, t, (size_t)tl, d,
						       sizeof(d));
	}
	return false;
}

/* Every entry of directory node: returns 0 when all of them are fine
 * now. */
static int repair_dir(struct rctx *r, const struct fnode *node)
{
	struct fctx *x = r->x;
	struct fdent *ents = NULL;
	struct obj *objs = NULL;
	bool *fine = NULL, *short_ok = NULL, full_search;
	size_t n = 0, no = 0, len, unfit = 0;
	uint8_t cur[NAMES_DIRIV_LEN], target[NAMES_DIRIV_LEN];
	char plain[NAMES_MAX_PLAIN + 1], *where;
	bool cur_ok = false, new_iv = false;
	unsigned next = 1, v, fails = 0, seq = 1;
	const char *why = NULL;
	char whybuf[96];
	int dfd, rc;

	where = fo_object("dir", node, NULL, node->pname);
	if (!where)
		return -ENOMEM;
	dfd = dir_fd(r, node);
	if (dfd < 0) {
		rc = dfd;
		outcome(r, rc, "%s", where);
		goto out;
	}
	if (x->np->plaintext) {
		rc = 0; /* names need no repair */
		goto out;
	}
	rc = walk_list_dir(dfd, &ents, &n);
	if (rc)
		goto out;
	objs = calloc(n ? n : 1, sizeof(*objs));
	fine = calloc(n ? n : 1, sizeof(*fine));
	short_ok = calloc(r->nivs ? r->nivs : 1, sizeof(*short_ok));
	if (!objs || !fine || !short_ok) {
		rc = -ENOMEM;
		goto out;
	}
	if (x->np->diriv)
		cur_ok = !walk_read_diriv(dfd, NAMES_DIRIV_FILE, cur, &len);
	else
		memset(cur, 0, sizeof(cur)), cur_ok = true;
	no = collect(r, dfd, node, where, ents, n, objs, &fails);
	if (fctx_stopped(x))
		goto done;

	/* the IV (spec §4.1, §4.7): the one most names decrypt under */
	memcpy(target, cur, sizeof(target));
	if (x->np->diriv) {
		unsigned best = 0, cs = 0;
		size_t bi = 0;

		for (size_t i = 0; cur_ok && i < no; i++)
			cs += fits(x, &objs[i], cur, true, plain,
				   sizeof(plain));
		/* candidates that fit one of a sample of names: every
		 * diriv of a large cipherdir against every name of a large
		 * directory would take long */
		for (size_t i = 0; i < r->nivs; i++) {
			size_t tried = 0;

			short_ok[i] = false;
			if (cur_ok && !memcmp(r->ivs[i], cur, sizeof(cur)))
				continue;
			for (size_t k = 0; k < no && tried < SAMPLE &&
					   !short_ok[i]; k++) {
				if (!objs[k].cname[0])
					continue;
				tried++;
				short_ok[i] = fits(x, &objs[k], r->ivs[i], true,
						   plain, sizeof(plain));
			}
		}
		for (size_t i = 0; i < r->nivs; i++) {
			if (!short_ok[i])
				continue;
			v = 0;
			for (size_t k = 0; k < no; k++)
				v += fits(x, &objs[k], r->ivs[i], true, plain,
					  sizeof(plain));
			if (v > best) {
				best = v;
				bi = i;
			}
		}
		if (best && (!cur_ok || best > cs)) {
			snprintf(whybuf, sizeof(whybuf), "an IV found "
				 "elsewhere, under which %u name%s decrypt%s",
				 best, best == 1 ? "" : "s",
				 best == 1 ? "s" : "");
			memcpy(target, r->ivs[bi], sizeof(target));
			why = whybuf;
		} else if (!cur_ok) {
			if (getrandom(target, sizeof(target), 0) !=
			    (ssize_t)sizeof(target)) {
				rc = -EIO;
				goto out;
			}
			why = "a fresh IV: no IV found decrypts its names";
		}
		new_iv = why != NULL;
	}

	/* what stays; under a new IV only plausible names (a random name
	 * decrypts to a valid one now and then) */
	for (size_t i = 0; i < no; i++) {
		fine[i] = !objs[i].parked &&
			  fits(x, &objs[i], target, new_iv, plain,
			       sizeof(plain));
		if (fine[i] && sscanf(plain, FSCK_RECOVERED "%u", &v) == 1 &&
		    v >= next)
			next = v + 1;
		unfit += !fine[i];
	}
	/* every candidate for every entry left, unless that is a lot */
	full_search = unfit * r->nivs <= FULL_SEARCH;
	if (new_iv) {
		for (size_t i = 0; i < no && !fctx_stopped(x); i++)
			if (!fine[i] && !objs[i].parked &&
			    park_obj(r, dfd, node, where, &objs[i], &seq))
				fails++;
		if (fails || fctx_stopped(x))
			goto done;
		rc = write_diriv(r, dfd, where, target, why);
		if (rc)
			goto out;
	}

	for (size_t i = 0; i < no && !fctx_stopped(x); i++) {
		struct obj *o = &objs[i];
		char real[NAMES_MAX_PLAIN + 1] = "";
		const char *how = NULL;

		if (fine[i])
			continue;
		/* a parked entry did not fit a plausible name under this
		 * IV when an earlier run parked it: one of an IV that run
		 * made up may still decrypt, to garbage, now and then */
		if (o->cname[0] &&
		    !names_decrypt(x->n, target, o->cname, strlen(o->cname),
				   plain, sizeof(plain)) &&
		    ((!new_iv && !o->parked) ||
		     fo_plausible(plain, strlen(plain)))) {
			snprintf(real, sizeof(real), "%s", plain);
			how = o->parked ? "its name" :
				"its name, stored under the wrong hash";
		} else if (o->cname[0]) {
			for (size_t k = 0; k < r->nivs && !real[0]; k++) {
				if (!memcmp(r->ivs[k], target,
					    sizeof(target)) ||
				    (!short_ok[k] && !full_search))
					continue;
				if (!names_decrypt(x->n, r->ivs[k], o->cname,
						   strlen(o->cname), plain,
						   sizeof(plain)) &&
				    fo_plausible(plain, strlen(plain))) {
					snprintf(real, sizeof(real), "%s",
						 plain);
					how = "its name, decrypted under an "
					      "IV found elsewhere";
				}
			}
		}
		if (!real[0] && stranger(r, dfd, o)) {
			/* nothing of it is readable: not a lost file but a
			 * stranger (or past saving) */
			if (quarantine_entry(r, dfd, o->cur, where))
				fails++;
			if (o->side[0] && quarantine_entry(r, dfd, o->side,
							   where))
				fails++;
			continue;
		}
		if (!real[0]) {
			snprintf(real, sizeof(real), FSCK_RECOVERED "%04u",
				 next++);
			how = o->is_long && !o->side_ok ?
				      "a recovery name: its long name is lost" :
				      "a recovery name: its name does not "
				      "decrypt";
		}
		if (rename_obj(r, dfd, node, where, o, target, real,
			       sizeof(real), &next, how))
			fails++;
	}
done:
	rc = fctx_stopped(x) ? -EINTR : fails ? -EIO : 0;
	if (!rc && fsync(dfd))
		rc = -errno;
out:
	walk_free_ents(ents, n);
	free(objs);
	free(fine);
	free(short_ok);
	free(where);
	return rc;
}

/* ---- contents ------------------------------------------------------------ */

static int repair_content(struct rctx *r, struct fproblem *p, const char *obj)
{
	struct fctx *x = r->x;
	uint8_t hdr[CONTENT_HEADER_LEN], id[CONTENT_FILE_ID_LEN];
	uint8_t *zero = NULL, *ct = NULL, *pt = NULL;
	uint64_t *bad = NULL, fb;
	size_t nbad = 0, cap = 0;
	char *qname = NULL, blocks[512] = "", what[700] = "";
	uint64_t body = p->size - CONTENT_HEADER_LEN;
	uint64_t full = body / x->cbs, tail = body % x->cbs;
	int fd, rc;

	fd = open_file(r, p, O_RDWR, true);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	zero = calloc(1, x->cbs);
	ct = malloc((CHUNK_FOR_REPAIR) * x->cbs);
	pt = malloc((CHUNK_FOR_REPAIR) * CONTENT_PLAIN_BS);
	if (!zero || !ct || !pt) {
		rc = -ENOMEM;
		goto out;
	}
	if (p->hdr != HDR_LOST) {
		/* what is still bad now */
		if (p->hdr == HDR_FIXABLE) {
			memcpy(id, p->hdr_fix + 2, sizeof(id));
		} else if (pread(fd, hdr, sizeof(hdr), 0) != sizeof(hdr) ||
			   content_header_parse(hdr, id)) {
			rc = -ESTALE;
			goto out;
		}
		for (size_t i = 0; i < p->nbad; i++) {
			rc = check_blocks(x, fd, p->size, id, p->bad[i],
					  p->bad[i] + 1, ct, pt, &bad, &nbad,
					  &cap);
			if (rc)
				goto out;
		}
		if (!nbad && p->hdr == HDR_OK) {
			p->done = true; /* nothing left to do */
			goto out;
		}
	}
	rc = qr_copy_file(x, fd, p->cname, &qname);
	if (rc)
		goto out;
	fo_blocks(blocks, sizeof(blocks), bad, nbad);
	if (x->o->truncate) {
		fb = p->hdr == HDR_LOST ? 0 : nbad ? bad[0] : p->nblocks;
		if (fb < p->nblocks)
			snprintf(what, sizeof(what), "%scut to its %llu good "
				 "block%s before the first bad one",
				 p->hdr == HDR_FIXABLE && fb ?
					 "header restored; " : "",
				 (unsigned long long)fb, fb == 1 ? "" : "s");
		else
			snprintf(what, sizeof(what), "header restored");
		intent(r, "%s: %s (copy: %s)", obj, what, qname);
		if (p->hdr == HDR_FIXABLE && fb > 0)
			rc = w_pwrite(x, fd, p->hdr_fix, CONTENT_HEADER_LEN, 0);
		if (!rc && fb < p->nblocks)
			rc = w_truncate(x, fd, fb ? (off_t)(CONTENT_HEADER_LEN +
							   fb * x->cbs)
						  : 0);
	} else if (p->hdr == HDR_LOST) {
		/* nothing decrypts: zeros of the same size */
		snprintf(what, sizeof(what), "its header was lost: it now "
			 "reads as %llu zero bytes",
			 (unsigned long long)content_cipher_to_plain_size(
				 x->c, tail > x->oh ? p->size :
				 CONTENT_HEADER_LEN + full * x->cbs, NULL));
		intent(r, "%s: %s (copy: %s)", obj, what, qname);
		content_header_new(x->c, hdr, id);
		rc = w_pwrite(x, fd, hdr, sizeof(hdr), 0);
		if (!rc)
			rc = w_truncate(x, fd, CONTENT_HEADER_LEN);
		if (!rc && full)
			rc = w_truncate(x, fd, (off_t)(CONTENT_HEADER_LEN +
						       full * x->cbs));
		if (!rc && tail > x->oh) {
			rc = content_encrypt_blocks(x->c, ct, zero,
						    tail - x->oh, full, id);
			if (!rc)
				rc = w_pwrite(x, fd, ct, tail,
					      (off_t)(CONTENT_HEADER_LEN +
						      full * x->cbs));
		}
	} else {
		snprintf(what, sizeof(what), "%s%s%s%s",
			 p->hdr == HDR_FIXABLE ? "header restored" : "",
			 p->hdr == HDR_FIXABLE && nbad ? "; " : "",
			 nbad ? "now reads as zeros at block " : "", blocks);
		if (nbad && bad[nbad - 1] >= full && tail <= x->oh)
			snprintf(what + strlen(what),
				 sizeof(what) - strlen(what),
				 " (the fragment of block %llu cut off)",
				 (unsigned long long)bad[nbad - 1]);
		intent(r, "%s: %s (copy: %s)", obj, what, qname);
		if (p->hdr == HDR_FIXABLE)
			rc = w_pwrite(x, fd, p->hdr_fix, CONTENT_HEADER_LEN, 0);
		for (size_t i = 0; i < nbad && !rc; i++) {
			uint64_t b = bad[i];
			off_t off = (off_t)(CONTENT_HEADER_LEN + b * x->cbs);

			if (b < full) {
				/* a hole: reads as 4096 zeros (§3.4) */
				rc = w_pwrite(x, fd, zero, x->cbs, off);
			} else if (tail > x->oh) {
				rc = content_encrypt_blocks(x->c, ct, zero,
							    tail - x->oh, b,
							    id);
				if (!rc)
					rc = w_pwrite(x, fd, ct, tail, off);
			} else {
				/* a fragment with no data: cut it off (to
				 * empty if nothing is left) */
				rc = w_truncate(x, fd, b ? off : 0);
			}
		}
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (!rc)
		p->done = true;
out:
	if (p->done || rc)
		outcome(r, rc, "%s: %s%s%s", obj,
			what[0] ? what : "already fine",
			qname ? "; original in the quarantine as " : "",
			qname ? qname : "");
	if (fd >= 0)
		close(fd);
	free(qname);
	free(zero);
	free(ct);
	if (pt)
		secure_zero(pt, CHUNK_FOR_REPAIR * CONTENT_PLAIN_BS);
	free(pt);
	free(bad);
	return rc;
}

/* 1..17 bytes, or header only: to an empty file. */
static int repair_empty(struct rctx *r, struct fproblem *p, const char *obj)
{
	struct fctx *x = r->x;
	char *qname = NULL;
	int fd = open_file(r, p, O_RDWR, true), rc;

	if (fd < 0) {
		rc = fd;
		goto out;
	}
	rc = qr_copy_file(x, fd, p->cname, &qname);
	if (!rc) {
		intent(r, "%s: truncate to empty (copy: %s)", obj, qname);
		rc = w_truncate(x, fd, 0);
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (!rc)
		p->done = true;
out:
	outcome(r, rc, "%s: now an empty file%s%s", obj,
		qname ? "; original in the quarantine as " : "",
		qname ? qname : "");
	if (fd >= 0)
		close(fd);
	free(qname);
	return rc;
}

static int repair_symlink(struct rctx *r, struct fproblem *p, const char *obj)
{
	struct fctx *x = r->x;
	char t[4097], d[4097], *qname = NULL, side[NAME_MAX + 1];
	struct stat st;
	ssize_t n;
	int dfd = dir_fd(r, p->dir), rc;

	if (dfd < 0) {
		rc = dfd;
		goto out;
	}
	if (fstatat(dfd, p->cname, &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISLNK(st.st_mode) || st.st_ino != p->ino) {
		rc = -ESTALE;
		goto out;
	}
	n = readlinkat(dfd, p->cname, t, sizeof(t) - 1);
	if (n < 0) {
		rc = -errno;
		goto out;
	}
	t[n] = '\0';
	if (!names_decrypt_symlink(x->n, t, (size_t)n, d, sizeof(d))) {
		p->done = true;
		rc = 0;
		goto out;
	}
	rc = qr_save_symlink(x, t, p->cname, &qname);
	if (rc)
		goto out;
	intent(r, "%s: remove (its target cannot be decrypted; copy: %s)",
	       obj, qname);
	rc = w_unlink(x, dfd, p->cname, 0);
	if (!rc && names_is_long(p->cname)) {
		free(qname);
		qname = NULL;
		snprintf(side, sizeof(side), "%s" NAMES_LONG_SUFFIX, p->cname);
		rc = quarantine_side(x, dfd, side, &qname);
		if (!rc) {
			intent(r, "remove its %s (copy: %s)", q(side), qname);
			rc = w_unlink(x, dfd, side, 0);
		} else if (rc == -ENOENT) {
			rc = 0;
		}
	}
	if (!rc && fsync(dfd))
		rc = -errno;
	if (!rc)
		p->done = true;
out:
	outcome(r, rc, "%s: removed (kept in the quarantine)", obj);
	free(qname);
	return rc;
}

static int repair_xattr(struct rctx *r, struct fproblem *p, const char *obj)
{
	struct fctx *x = r->x;
	char plain[NAMES_MAX_PLAIN + 1], *qname = NULL, *label = NULL;
	uint8_t *raw = malloc(XBUF), *out = malloc(XBUF);
	size_t dlen;
	ssize_t n;
	int fd = -1, rc;
	bool bad;

	if (!raw || !out) {
		rc = -ENOMEM;
		goto out;
	}
	if (p->cname) {
		fd = open_file(r, p, O_RDONLY, false);
	} else {
		fd = dir_fd(r, p->dir);
		fd = fd < 0 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	n = fgetxattr(fd, p->xname, raw, XBUF);
	if (n < 0) {
		rc = errno == ENODATA ? 0 : -errno;
		if (!rc)
			p->done = true;
		goto out;
	}
	rc = names_decrypt_xattr(x->n, p->xname, plain, sizeof(plain));
	/* 1 for one of ours: an ACL name encrypted by old versions */
	bad = rc < 0 ||
	      (rc == 1 && has_prefix(p->xname, NAMES_XATTR_PREFIX)) ||
	      (rc == 0 && n > 0 &&
	       walk_open_xattr_value(x, out, &dlen, raw, (size_t)n));
	rc = 0;
	if (!bad) {
		p->done = true;
		goto out;
	}
	if (asprintf(&label, "%s.xattr", p->cname ? p->cname : "dir") < 0) {
		label = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = qr_save_bytes(x, raw, (size_t)n, label, &qname);
	if (rc)
		goto out;
	intent(r, "%s: remove xattr %s (value: %s)", obj, q(p->xname), qname);
	rc = qr_step(x);
	if (!rc && fremovexattr(fd, p->xname))
		rc = -errno;
	if (!rc)
		p->done = true;
out:
	outcome(r, rc, "%s: xattr %s removed%s%s", obj, q(p->xname),
		qname ? "; its value is in the quarantine as " : "",
		qname ? qname : "");
	if (fd >= 0)
		close(fd);
	free(label);
	free(qname);
	free(raw);
	if (out)
		secure_zero(out, XBUF);
	free(out);
	return rc;
}

/* ---- the pass ---------------------------------------------------------- */

/* The same problem of the same object was repaired already: a file
 * checked through a hidden hard link and again through a visible one. */
static bool twin_done(struct fctx *x, const struct fproblem *p)
{
	for (struct fproblem *o = x->probs; o; o = o->next)
		if (o != p && o->done && o->kind == p->kind && p->ino &&
		    o->ino == p->ino && o->dev == p->dev &&
		    (!p->xname || (o->xname && !strcmp(o->xname, p->xname))))
			return true;
	return false;
}

static bool name_kind(enum fp_kind k)
{
	return k == FP_DIRIV || k == FP_NAME || k == FP_NOSIDECAR ||
	       k == FP_SIDECAR || k == FP_HASH || k == FP_ORPHAN ||
	       k == FP_RMDIR || k == FP_TEMP || k == FP_PARKED;
}

static int node_depth_cmp(const void *a, const void *b)
{
	const struct fnode *x = *(struct fnode *const *)a;
	const struct fnode *y = *(struct fnode *const *)b;

	return x->depth < y->depth ? 1 : x->depth > y->depth ? -1 : 0;
}

static int add_node(struct fnode ***arr, size_t *n, size_t *cap,
		    struct fnode *d)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i] == d)
			return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		struct fnode **na = realloc(*arr, nc * sizeof(*na));

		if (!na)
			return -ENOMEM;
		*arr = na;
		*cap = nc;
	}
	(*arr)[(*n)++] = d;
	return 0;
}

int repair_all(struct fctx *x, struct fsck_result *res)
{
	struct rctx r = { .x = x, .cfd = -1 };
	struct fnode **dirs = NULL;
	size_t ndirs = 0, capd = 0, capn = 0;
	int rc = 0;

	fo_line(x, "fsck: repairing; the quarantine and the report are in "
		"%s", q(qr_path(x)));
	qr_collect_ivs(x);
	/* unique candidates, and the zero IV (deterministic names) */
	{
		static const uint8_t zero[NAMES_DIRIV_LEN];

		fctx_add_iv(x, zero);
		if (x->nivs)
			qsort(x->ivs, x->nivs, sizeof(*x->ivs), iv_cmp);
		for (size_t i = 0; i < x->nivs; i++)
			if (!i || memcmp(x->ivs[i], x->ivs[r.nivs - 1],
					 NAMES_DIRIV_LEN))
				memmove(x->ivs[r.nivs++], x->ivs[i],
					NAMES_DIRIV_LEN);
		r.ivs = x->ivs;
	}
	for (struct fproblem *p = x->probs; p && !rc; p = p->next) {
		for (struct fnode *d = p->dir; d && !rc; d = d->parent)
			rc = add_node(&r.nodes, &r.nnodes, &capn, d);
		if (!rc && name_kind(p->kind))
			rc = add_node(&dirs, &ndirs, &capd, p->dir);
	}
	if (rc)
		goto out;

	/* names, deepest directories first */
	if (ndirs)
		qsort(dirs, ndirs, sizeof(*dirs), node_depth_cmp);
	for (size_t i = 0; i < ndirs && !fctx_stopped(x); i++) {
		if (repair_dir(&r, dirs[i]))
			continue;
		for (struct fproblem *p = x->probs; p; p = p->next)
			if (p->dir == dirs[i] && name_kind(p->kind))
				p->done = true;
	}

	/* contents, symlinks, xattrs */
	for (struct fproblem *p = x->probs; p && !fctx_stopped(x);
	     p = p->next) {
		char *obj;

		if (p->done || name_kind(p->kind) || p->kind == FP_SKIPPED)
			continue;
		if (twin_done(x, p)) {
			p->done = true;
			continue;
		}
		obj = fo_object(p->what, p->dir, p->cname, p->pname);
		if (!obj) {
			rc = -ENOMEM;
			break;
		}
		if (p->kind == FP_UNREADABLE) {
			/* nothing here to rewrite: its permissions or the
			 * storage under it are wrong */
			qr_report(x, "%s: cannot be read: left as it is", obj);
			fo_line(x, "fsck: not repaired: %s: it cannot be read",
				obj);
		} else if (p->kind == FP_CONTENT)
			repair_content(&r, p, obj);
		else if (p->kind == FP_SHORT || p->kind == FP_HDRONLY)
			repair_empty(&r, p, obj);
		else if (p->kind == FP_SYMLINK)
			repair_symlink(&r, p, obj);
		else if (p->kind == FP_XNAME || p->kind == FP_XVALUE)
			repair_xattr(&r, p, obj);
		free(obj);
	}
out:
	for (struct fproblem *p = x->probs; p; p = p->next) {
		if (!p->counted || p->kind == FP_SKIPPED)
			continue;
		if (p->done)
			res->repaired++;
		else
			res->unrepaired++;
	}
	qr_report(x, "repaired %lu of %lu problems%s", res->repaired,
		  res->repaired + res->unrepaired,
		  fctx_stopped(x) ? " (interrupted)" : "");
	if (r.cfd >= 0)
		close(r.cfd);
	free(r.nodes);
	free(dirs);
	return fctx_stopped(x) ? -EINTR : rc;
}
