// SPDX-License-Identifier: MIT
/*
 * Encrypted extended attributes (spec §4.10). The backing object is reached
 * through a descriptor we hold (a directory's, an open file's) or else
 * with an O_PATH|O_NOFOLLOW fd relative to its parent, addressed as
 * /proc/self/fd/N, which names that exact inode. Symlinks carry no user
 * attributes on Linux, so they have none here either.
 */
#include <errno.h>
#include <linux/limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/secmem.h"
#include "fs/file.h"
#include "fs/inode.h"
#include "fs/xattr.h"

#define XATTR_VAL_MAX 65536
#define XATTR_NAME_BUF 512
/* "This object has no attributes" is believed as long as the kernel caches
 * attributes (fs_cache_timeout): the kernel caches no xattrs, and `ls -l`
 * asks every file for its ACL each time it runs. */

static bool is_acl(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool xnone_cached(const struct fs *fs, struct inode *in)
{
	bool r;

	if (fs_cache_timeout(fs) <= 0)
		return false;
	pthread_mutex_lock(inode_hdr_lock(in));
	r = in->xnone_until && in->xnone_gen == in->xgen && !in->xbusy &&
	    now_ns() < in->xnone_until;
	pthread_mutex_unlock(inode_hdr_lock(in));
	return r;
}

/* The generation to pass to xnone_store, or -1 while a change runs. */
static long xgen_snapshot(struct inode *in)
{
	long g;

	pthread_mutex_lock(inode_hdr_lock(in));
	g = in->xbusy ? -1 : (long)in->xgen;
	pthread_mutex_unlock(inode_hdr_lock(in));
	return g;
}

static void xnone_store(const struct fs *fs, struct inode *in, long g)
{
	pthread_mutex_lock(inode_hdr_lock(in));
	if (g >= 0 && (unsigned)g == in->xgen && !in->xbusy) {
		in->xnone_gen = in->xgen;
		in->xnone_until =
			now_ns() + (uint64_t)(fs_cache_timeout(fs) * 1e9);
	}
	pthread_mutex_unlock(inode_hdr_lock(in));
}

/* Around a setxattr/removexattr: start (busy) or end (!busy). */
static void xchange(struct inode *in, bool busy)
{
	pthread_mutex_lock(inode_hdr_lock(in));
	in->xgen++;
	if (busy)
		in->xbusy++;
	else
		in->xbusy--;
	in->xnone_until = 0;
	pthread_mutex_unlock(inode_hdr_lock(in));
}

static bool shown_name(const char *p)
{
	return is_acl(p) || !strncmp(p, NAMES_XATTR_PREFIX,
				     strlen(NAMES_XATTR_PREFIX));
}

/* Whether a listxattr answer (n bytes of names) has a name we show. */
static bool any_shown(const char *names, size_t n)
{
	for (const char *p = names; p < names + n; p += strlen(p) + 1)
		if (shown_name(p))
			return true;
	return false;
}

/* A descriptor of in's backing inode, so that no name is resolved (an
 * open file may be unlinked or replaced): the root's, a directory's cached
 * one, an open file's (with its rw lock held, so that it stays open), used
 * with f*xattr; or else one opened O_PATH by name, which f*xattr refuses,
 * used through the path /proc/self/fd/N. Release with xref_put. */
struct xref {
	char path[64];		/* for an O_PATH fd, else "" */
	int io_fd;		/* for f*xattr, or -1: use path */
	int fd;			/* ours to close, or -1 */
	struct inode *dir;	/* its cached directory fd is used */
	struct inode *file;	/* its open fd is used, rw held */
};

static int xref_get(struct fs *fs, struct inode *in, struct xref *x)
{
	int fd;

	x->fd = x->io_fd = -1;
	x->path[0] = '\0';
	x->dir = x->file = NULL;
	if (in == &fs->root) {
		fd = fs->root_fd;
	} else if (in->type == S_IFDIR) {
		fd = dirfd_get(fs, in);
		if (fd < 0)
			return fd;
		x->dir = in;
	} else {
		if (in->type == S_IFREG) {
			rwlock_rdlock(&in->rw);
			if (in->fd >= 0)
				x->file = in;
			else
				rwlock_unlock(&in->rw);
		}
		fd = x->file ? in->fd : inode_open(fs, in, O_PATH);
		if (fd < 0)
			return fd;
		if (!x->file) {
			x->fd = fd;
			snprintf(x->path, sizeof(x->path), "/proc/self/fd/%d",
				 fd);
			return 0;
		}
	}
	x->io_fd = fd;
	return 0;
}

static ssize_t x_get(const struct xref *x, const char *name, void *buf,
		     size_t cap)
{
	return x->io_fd >= 0 ? fgetxattr(x->io_fd, name, buf, cap) :
			       getxattr(x->path, name, buf, cap);
}

static ssize_t x_list(const struct xref *x, char *buf, size_t cap)
{
	return x->io_fd >= 0 ? flistxattr(x->io_fd, buf, cap) :
			       listxattr(x->path, buf, cap);
}

static void xref_put(struct fs *fs, struct xref *x)
{
	if (x->fd >= 0)
		close(x->fd);
	if (x->dir)
		dirfd_put(fs, x->dir);
	if (x->file)
		rwlock_unlock(&x->file->rw);
	x->fd = x->io_fd = -1;
	x->dir = x->file = NULL;
}

/* Whether x has no attribute we show, from one listxattr (false when
 * in doubt); if so, remember it for in. Asked before any getxattr: nearly
 * every object has none (ls -l asks every file for its ACL), and a list
 * answers for every name with one syscall, where a getxattr that finds
 * nothing needs a listxattr after it to say so for the next name. */
static bool none_shown(const struct fs *fs, struct inode *in,
		       const struct xref *x, long g)
{
	char names[4096];
	ssize_t n = x_list(x, names, sizeof(names));

	if (n < 0 || any_shown(names, (size_t)n))
		return false;
	xnone_store(fs, in, g);
	return true;
}

/* listxattrat(2) (Linux 6.13; no wrapper in glibc 2.36): the same number
 * on every architecture. */
#ifndef SYS_listxattrat
#define SYS_listxattrat 465
#endif
static atomic_bool no_listxattrat; /* ENOSYS, or refused (seccomp) */

/* none_shown for an object other than a directory without opening it:
 * listxattrat by its name in its parent's (cached) fd; two syscalls with
 * the fstatat that checks the name is that object, instead of an O_PATH
 * open, fstat, a listxattr through /proc and close. Only where we are the
 * only writer, so that a name changes only through our renames and
 * unlinks, and only when none ran meanwhile (names_steady_*). Returns 1
 * when no name is shown, 0 when one is, -1 when it cannot tell this way:
 * the caller then takes the usual way. */
static int none_shown_by_name(struct fs *fs, struct inode *in, long g)
{
	char names[4096];
	struct stat st;
	struct loc l;
	unsigned long gen;
	ssize_t n;
	int pfd;
	int none = -1;

	if (!fs->sole_writer || in == &fs->root || in->type == S_IFDIR ||
	    atomic_load_explicit(&no_listxattrat, memory_order_relaxed))
		return -1;
	if (!names_steady_begin(fs, &gen))
		return -1;
	if (loc_get(fs, in, &l))
		return -1;
	pfd = dirfd_get(fs, l.parent);
	if (pfd < 0) {
		loc_put(fs, &l);
		return -1;
	}
	n = syscall(SYS_listxattrat, pfd, l.name, AT_SYMLINK_NOFOLLOW, names,
		    sizeof(names));
	if (n < 0 && (errno == ENOSYS || errno == EPERM))
		atomic_store(&no_listxattrat, true);
	if (n >= 0 &&
	    fstatat(pfd, l.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == in->dev && st.st_ino == in->ino &&
	    names_steady_end(fs, gen))
		none = !any_shown(names, (size_t)n);
	dirfd_put(fs, l.parent);
	loc_put(fs, &l);
	if (none == 1)
		xnone_store(fs, in, g);
	return none;
}

/* getxattr of name, or listxattr (name NULL), of path: into small (cap
 * bytes) first, since the kernel allocates (and zeroes) as much as asked
 * for and nearly everything fits (nearly every getxattr answer is ENODATA:
 * ls -l); else into *big (XATTR_VAL_MAX bytes, caller frees). *raw gets the
 * buffer used. Returns the length or -errno. */
static ssize_t small_first(const struct xref *x, const char *name,
			   void *small, size_t cap, void **big, void **raw)
{
	ssize_t n;

	*raw = small;
	n = name ? x_get(x, name, small, cap) : x_list(x, small, cap);
	if (n < 0 && errno == ERANGE) {
		*big = malloc(XATTR_VAL_MAX);
		if (!*big)
			return -ENOMEM;
		*raw = *big;
		n = name ? x_get(x, name, *big, XATTR_VAL_MAX) :
			   x_list(x, *big, XATTR_VAL_MAX);
	}
	return n < 0 ? -errno : n;
}

/* After a change of a regular file's attributes: file_restamp. */
static void restamp(struct fs *fs, struct inode *in, const struct xref *x)
{
	struct stat st;
	int fd = x->file ? in->fd : x->fd;

	if (in->type == S_IFREG && fd >= 0 && fstat(fd, &st) == 0)
		file_restamp(fs, in, &st);
}

static int enc_xname(struct fs *fs, const char *name, char *out, size_t cap)
{
	if (!*name)
		return -EINVAL;
	if (is_acl(name)) {
		if (strlen(name) >= cap)
			return -ERANGE;
		strcpy(out, name);
		return 0;
	}
	return names_encrypt_xattr(fs->names, name, out, cap);
}

static int get_one(struct fs *fs, struct inode *in, const char *name,
		   char *buf, size_t size, size_t *len)
{
	char xname[XATTR_NAME_BUF];
	uint8_t small[4096], *pt = NULL;
	void *big = NULL, *raw;
	size_t dlen;
	ssize_t n = 0;
	struct xref x = { .fd = -1, .io_fd = -1 };
	int rc, by_name;
	long g;

	/* Asked before every write; only a -suid mount can make use of
	 * file capabilities (spec §4.10). */
	if (!fs->opt.suid && !strcmp(name, "security.capability"))
		return -EOPNOTSUPP;
	if (in->type == S_IFLNK || xnone_cached(fs, in))
		return -ENODATA;
	rc = enc_xname(fs, name, xname, sizeof(xname));
	if (rc)
		return rc;
	/* encrypted, too long for any backing filesystem: none can have it
	 * (the backing would answer ERANGE, "buffer too small", to which a
	 * caller that retries with a bigger one never finds an end) */
	if (strlen(xname) > XATTR_NAME_MAX)
		return -ENODATA;
	g = xgen_snapshot(in);
	by_name = none_shown_by_name(fs, in, g);
	if (by_name == 1)
		return -ENODATA;
	rc = xref_get(fs, in, &x);
	if (rc)
		return rc;
	/* The list was read already when it showed a name. */
	if (by_name < 0 && none_shown(fs, in, &x, g)) {
		rc = -ENODATA;
		goto out;
	}
	n = small_first(&x, xname, small, sizeof(small), &big, &raw);
	if (n < 0) {
		rc = (int)n;
		n = 0;
		goto out;
	}
	pt = malloc(XATTR_VAL_MAX);
	if (!pt) {
		rc = -ENOMEM;
		goto out;
	}
	if (is_acl(name)) {
		memcpy(pt, raw, (size_t)n);
		dlen = (size_t)n;
	} else if (n == 0) {
		dlen = 0;
	} else {
		rc = names_decrypt_xattr_value(fs->names, pt, &dlen, raw,
					       (size_t)n);
		if (rc) {
			if (rc == -EBADMSG) {
				log_warn("inode %ju: corrupt xattr value",
					 (uintmax_t)in->ino);
				rc = -EIO;
			}
			goto out;
		}
	}
	*len = dlen;
	if (size) {
		if (size < dlen)
			rc = -ERANGE;
		else
			memcpy(buf, pt, dlen);
	}
out:
	if (pt) {
		secure_zero(pt, (size_t)n); /* plaintext never exceeds n */
		free(pt);
	}
	free(big);
	xref_put(fs, &x);
	return rc;
}

int xattr_get(struct fs *fs, struct inode *in, const char *name, char *buf,
	      size_t size, size_t *len)
{
	int rc = get_one(fs, in, name, buf, size, len);

	return rc == -ENODATA ? xattr_absent(name) : rc;
}

/* ls -l asks every file for its SELinux label, which files on a FUSE mount
 * do not have unless a user set one. "Not supported" instead of "no such
 * attribute" makes ls (and libselinux) stop asking on this filesystem: one
 * request per file less, half of an ls -l's. A label that is there is
 * returned as ever. The POSIX ACL stays "no such attribute": getfacl shows
 * the ACL the mode makes on that answer and fails on the other. */
int xattr_absent(const char *name)
{
	return strcmp(name, "security.selinux") ? -ENODATA : -EOPNOTSUPP;
}

int xattr_set(struct fs *fs, struct inode *in, const char *name,
	      const char *value, size_t size, int flags)
{
	char xname[XATTR_NAME_BUF];
	uint8_t *ct = NULL;
	size_t clen = 0;
	const void *v = value;
	struct xref x = { .fd = -1, .io_fd = -1 };
	int rc;

	if (in->type == S_IFLNK)
		return -EPERM;
	rc = enc_xname(fs, name, xname, sizeof(xname));
	if (rc)
		return rc;
	if (!is_acl(name) && size) {
		clen = size + content_msg_overhead(fs->content);
		ct = malloc(clen);
		if (!ct)
			return -ENOMEM;
		rc = content_seal_msg(fs->content, ct, (const uint8_t *)value,
				      size);
		if (rc)
			goto out;
		v = ct;
	} else {
		clen = size;
	}
	rc = xref_get(fs, in, &x);
	if (rc)
		goto out;
	xchange(in, true);
	if ((x.io_fd >= 0 ? fsetxattr(x.io_fd, xname, v, clen, flags) :
			    setxattr(x.path, xname, v, clen, flags)) < 0)
		rc = -errno;
	else
		restamp(fs, in, &x);
	xchange(in, false);
out:
	free(ct);
	xref_put(fs, &x);
	return rc;
}

int xattr_remove(struct fs *fs, struct inode *in, const char *name)
{
	char xname[XATTR_NAME_BUF];
	struct xref x = { .fd = -1, .io_fd = -1 };
	int rc;

	if (in->type == S_IFLNK)
		return -ENODATA;
	rc = enc_xname(fs, name, xname, sizeof(xname));
	if (rc)
		return rc;
	rc = xref_get(fs, in, &x);
	if (rc)
		return rc;
	xchange(in, true);
	if ((x.io_fd >= 0 ? fremovexattr(x.io_fd, xname) :
			    removexattr(x.path, xname)) < 0)
		rc = -errno;
	else
		restamp(fs, in, &x);
	xchange(in, false);
	xref_put(fs, &x);
	return rc;
}

int xattr_list(struct fs *fs, struct inode *in, char *buf, size_t size,
	       size_t *len)
{
	char name[XATTR_NAME_BUF], small[4096];
	void *big = NULL, *raw;
	char *p, *end;
	size_t out = 0, nl;
	ssize_t n;
	struct xref x = { .fd = -1, .io_fd = -1 };
	int rc;
	bool any = false;
	long g;

	*len = 0;
	if (in->type == S_IFLNK || xnone_cached(fs, in))
		return 0;
	g = xgen_snapshot(in);
	if (none_shown_by_name(fs, in, g) == 1)
		return 0;
	rc = xref_get(fs, in, &x);
	if (rc)
		return rc;
	n = small_first(&x, NULL, small, sizeof(small), &big, &raw);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	end = (char *)raw + n;
	for (p = raw; p < end; p += strlen(p) + 1) {
		const char *shown = name;

		any = any || shown_name(p);
		if (is_acl(p)) {
			shown = p;
		} else if (!strncmp(p, NAMES_XATTR_PREFIX,
				    strlen(NAMES_XATTR_PREFIX))) {
			rc = names_decrypt_xattr(fs->names, p, name,
						 sizeof(name));
			if (rc < 0)
				log_warn("inode %ju: hiding corrupt xattr "
					 "name",
					 (uintmax_t)in->ino);
			if (rc || is_acl(name))
				continue;
		} else {
			continue;
		}
		nl = strlen(shown) + 1;
		if (size) {
			if (out + nl > size) {
				rc = -ERANGE;
				goto out;
			}
			memcpy(buf + out, shown, nl);
		}
		out += nl;
	}
	rc = 0;
	*len = out;
	if (!any)
		xnone_store(fs, in, g);
out:
	free(big);
	xref_put(fs, &x);
	return rc;
}
