// SPDX-License-Identifier: MIT
/*
 * The quarantine of -repair: a directory outside the cipherdir (default
 * <CIPHERDIR>.veilfs-quarantine/<UTC time>/, or -quarantine DIR/<UTC
 * time>/) that receives a copy of everything a repair changes or removes,
 * before the change, each copy fsync'ed; and report.txt in it, one line per
 * action, written and fsync'ed before the action. Copies are numbered
 * (0001-<ciphertext name>) and the report maps them to their places in the
 * cipherdir. Nothing in the quarantine is ever read back by a mount.
 *
 * Every state-changing step of a repair passes qr_step, which is also where
 * the VEILFS_FSCK_TEST hooks stop or kill the run (tests of crash safety).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "fsck/internal.h"

#define REPORT_NAME "report.txt"
#define COPY_CHUNK (1u << 20)
#define QNAME_MAX 200

struct quarantine {
	int dfd;
	char *path;
	char *top;
	FILE *report;
	unsigned seq;
};

int qr_step(struct fctx *x)
{
	long s = ++x->steps;

	if (x->kill_step && s == x->kill_step)
		raise(SIGKILL);
	if (x->int_step && s == x->int_step)
		raise(SIGINT);
	return fctx_stopped(x) ? -EINTR : 0;
}

/* CIPHERDIR without trailing slashes + suffix. */
static char *default_top(const char *dir)
{
	size_t n = strlen(dir);
	char *s;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (asprintf(&s, "%.*s.veilfs-quarantine", (int)n, dir) < 0)
		return NULL;
	return s;
}

/* Whether the existing path is the cipherdir or inside it (resolved). */
static bool within(const char *path, const char *cipherdir)
{
	char a[PATH_MAX], b[PATH_MAX];
	size_t n;

	if (!realpath(path, a) || !realpath(cipherdir, b))
		return false;
	n = strlen(b);
	return !strcmp(b, "/") ||
	       (!strncmp(a, b, n) && (a[n] == '/' || a[n] == '\0'));
}

/* The quarantine must not be inside the cipherdir (a mount would show
 * it, as undecryptable names). Judged by its parent, which exists, before
 * it is made; qr_open checks the directory itself once it exists (the
 * cipherdir itself, or a symlink into it). */
static bool inside(const char *top, const char *cipherdir)
{
	char *copy = strdup(top);
	size_t n;
	bool r;

	if (!copy)
		return true;
	n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	r = within(strrchr(copy, '/') ? dirname(copy) : ".", cipherdir);
	free(copy);
	return r;
}

int qr_open(struct fctx *x, char *err, size_t errlen)
{
	struct quarantine *q = calloc(1, sizeof(*q));
	char stamp[32], run[48];
	time_t now = time(NULL);
	struct tm tm;
	int tfd = -1, rfd = -1, rc = 0;

	if (!q)
		return -ENOMEM;
	q->dfd = -1;
	q->top = x->o->quarantine ? strdup(x->o->quarantine)
				  : default_top(x->o->cipherdir);
	if (!q->top) {
		rc = -ENOMEM;
		goto fail;
	}
	if (inside(q->top, x->o->cipherdir))
		goto inside;
	if (mkdir(q->top, 0700) && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "cannot create the quarantine directory "
			 "'%s': %s (choose another with -quarantine DIR)",
			 q->top, strerror(errno));
		goto fail;
	}
	if (within(q->top, x->o->cipherdir))
		goto inside;
	{
		char *abs = realpath(q->top, NULL);

		if (abs) {
			free(q->top);
			q->top = abs;
		}
	}
	tfd = open(q->top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the quarantine directory "
			 "'%s': %s", q->top, strerror(errno));
		goto fail;
	}
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (unsigned i = 1;; i++) {
		if (i == 1)
			snprintf(run, sizeof(run), "%s", stamp);
		else
			snprintf(run, sizeof(run), "%s-%u", stamp, i);
		if (!mkdirat(tfd, run, 0700))
			break;
		if (errno != EEXIST || i > 1000) {
			rc = -errno;
			snprintf(err, errlen, "cannot create a directory in "
				 "'%s': %s", q->top, strerror(errno));
			goto fail;
		}
	}
	fsync(tfd);
	q->dfd = openat(tfd, run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	if (q->dfd < 0 || asprintf(&q->path, "%s/%s", q->top, run) < 0) {
		rc = q->dfd < 0 ? -errno : -ENOMEM;
		q->path = NULL;
		snprintf(err, errlen, "cannot open '%s/%s'", q->top, run);
		goto fail;
	}
	rfd = openat(q->dfd, REPORT_NAME, O_WRONLY | O_CREAT | O_EXCL |
		     O_APPEND | O_CLOEXEC, 0600);
	if (rfd < 0 || !(q->report = fdopen(rfd, "a"))) {
		rc = -errno;
		if (rfd >= 0)
			close(rfd);
		snprintf(err, errlen, "cannot create '%s/%s': %s", q->path,
			 REPORT_NAME, strerror(-rc));
		goto fail;
	}
	close(tfd);
	x->qr = q;
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S UTC", &tm);
	qr_report(x, "veilfs %s -fsck -repair%s of %s, started %s",
		  VEILFS_VERSION, x->o->truncate ? "-truncate" : "",
		  x->o->cipherdir, stamp);
	qr_report(x, "quarantine: %s", q->path);
	qr_report(x, "Each copy below was written (and fsync'ed) before the "
		  "change it names; restore one by copying it back.");
	return 0;
inside:
	rc = -EINVAL;
	snprintf(err, errlen, "the quarantine directory '%s' is inside "
		 "CIPHERDIR: choose one outside with -quarantine DIR", q->top);
fail:
	if (tfd >= 0)
		close(tfd);
	if (q->dfd >= 0)
		close(q->dfd);
	free(q->top);
	free(q->path);
	free(q);
	return rc;
}

const char *qr_path(struct fctx *x)
{
	return x->qr ? x->qr->path : "";
}

void qr_close(struct fctx *x, struct fsck_result *r)
{
	struct quarantine *q = x->qr;

	if (!q)
		return;
	r->quarantine = strdup(q->path);
	if (asprintf(&r->report, "%s/%s", q->path, REPORT_NAME) < 0)
		r->report = NULL;
	fclose(q->report);
	close(q->dfd);
	free(q->top);
	free(q->path);
	free(q);
	x->qr = NULL;
}

void qr_report(struct fctx *x, const char *fmt, ...)
{
	struct quarantine *q = x->qr;
	va_list ap;

	if (!q)
		return;
	va_start(ap, fmt);
	vfprintf(q->report, fmt, ap);
	va_end(ap);
	fputc('\n', q->report);
	fflush(q->report);
	fdatasync(fileno(q->report));
}

/* The next copy's name: NNNN-<name, cut>. */
static char *next_name(struct quarantine *q, const char *cname)
{
	char *s;

	if (asprintf(&s, "%04u-%.*s", ++q->seq, QNAME_MAX, cname) < 0)
		return NULL;
	return s;
}

/* The step and the name of the next copy. */
static int begin(struct fctx *x, const char *what, char **qname)
{
	int rc = qr_step(x);

	*qname = NULL;
	if (rc)
		return rc;
	*qname = next_name(x->qr, what);
	return *qname ? 0 : -ENOMEM;
}

static int copy_range(int in, int out, off_t off, off_t end, uint8_t **buf)
{
	while (off < end) {
		size_t len = (size_t)(end - off) < COPY_CHUNK ?
				     (size_t)(end - off) : COPY_CHUNK;
		off_t oi = off, oo = off;
		ssize_t n = copy_file_range(in, &oi, out, &oo, len, 0);

		if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == ENOSYS || errno == EOPNOTSUPP)) {
			if (!*buf && !(*buf = malloc(COPY_CHUNK)))
				return -ENOMEM;
			n = pread(in, *buf, len, off);
			if (n > 0 && pwrite(out, *buf, (size_t)n, off) != n)
				return errno ? -errno : -EIO;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* shrank while being copied */
		off += n;
	}
	return 0;
}

/* Copy every extended attribute of in to out. One the copy cannot take (a
 * quarantine on a filesystem without user attributes) is an error: the
 * original is then left where it is, never removed without its encrypted
 * attributes. */
static int copy_xattrs(int in, int out)
{
	char *list = NULL, *val = NULL, *nv;
	ssize_t n, v;
	size_t cap = 0;
	int rc = 0;

	n = flistxattr(in, NULL, 0);
	if (n <= 0)
		return n < 0 && errno != ENOTSUP ? -errno : 0;
	list = malloc((size_t)n);
	if (!list)
		return -ENOMEM;
	n = flistxattr(in, list, (size_t)n);
	if (n < 0)
		rc = -errno; /* ERANGE: it grew meanwhile */
	for (char *p = list; !rc && p < list + n; p += strlen(p) + 1) {
		v = fgetxattr(in, p, NULL, 0);
		if (v > 0 && (size_t)v > cap) {
			nv = realloc(val, (size_t)v);
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			val = nv;
			cap = (size_t)v;
		}
		if (v > 0)
			v = fgetxattr(in, p, val, cap);
		if (v < 0 || fsetxattr(out, p, val, (size_t)v, 0))
			rc = -errno;
	}
	free(list);
	free(val);
	return rc;
}

int qr_copy_file(struct fctx *x, int fd, const char *cname, char **qname)
{
	struct quarantine *q = x->qr;
	uint8_t *buf = NULL;
	struct stat st;
	off_t off = 0;
	int out = -1, rc;

	*qname = NULL;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL; /* qr_save_node's, never a copy of bytes */
	rc = begin(x, cname, qname);
	if (rc)
		return rc;
	out = openat(q->dfd, *qname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		     O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	/* data ranges only: holes stay holes */
	while (off < st.st_size) {
		off_t d = lseek(fd, off, SEEK_DATA), h;

		if (d < 0 && errno == ENXIO)
			break;
		if (d < 0)
			d = off;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || h > st.st_size)
			h = st.st_size;
		rc = copy_range(fd, out, d, h, &buf);
		if (rc)
			goto out;
		off = h;
	}
	if (ftruncate(out, st.st_size)) {
		rc = -errno;
		goto out;
	}
	rc = copy_xattrs(fd, out);
	if (rc)
		goto out;
	if (fchown(out, st.st_uid, st.st_gid))
		(void)0; /* not root: the copy is ours */
	(void)fchmod(out, st.st_mode & 07777);
	if (fsync(out) || fsync(q->dfd))
		rc = -errno;
out:
	free(buf);
	if (out >= 0)
		close(out);
	if (rc) {
		if (*qname)
			unlinkat(q->dfd, *qname, 0);
		free(*qname);
		*qname = NULL;
	}
	return rc;
}

int qr_save_symlink(struct fctx *x, const char *target, const char *cname,
		    char **qname)
{
	struct quarantine *q = x->qr;
	int rc = begin(x, cname, qname);

	if (rc)
		return rc;
	if (symlinkat(target, q->dfd, *qname) || fsync(q->dfd)) {
		rc = -errno;
		free(*qname);
		*qname = NULL;
	}
	return rc;
}

int qr_save_node(struct fctx *x, const struct stat *st, const char *cname,
		 char **qname)
{
	struct quarantine *q = x->qr;
	int rc = begin(x, cname, qname);

	if (rc)
		return rc;
	if (mknodat(q->dfd, *qname, st->st_mode & (S_IFMT | 07777),
		    st->st_rdev) ||
	    fsync(q->dfd)) {
		rc = -errno;
		free(*qname);
		*qname = NULL;
	}
	return rc;
}

int qr_save_bytes(struct fctx *x, const void *buf, size_t len,
		  const char *what, char **qname)
{
	struct quarantine *q = x->qr;
	int out, rc = begin(x, what, qname);

	if (rc)
		return rc;
	out = openat(q->dfd, *qname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		     O_CLOEXEC, 0600);
	if (out < 0 || (len && write(out, buf, len) != (ssize_t)len) ||
	    fsync(out) || fsync(q->dfd))
		rc = errno ? -errno : -EIO;
	if (out >= 0)
		close(out);
	if (rc) {
		free(*qname);
		*qname = NULL;
	}
	return rc;
}

int qr_move_dir(struct fctx *x, int dfd, const char *cname, char **qname)
{
	struct quarantine *q = x->qr;
	int rc = begin(x, cname, qname);

	if (rc)
		return rc;
	if (renameat(dfd, cname, q->dfd, *qname) || fsync(q->dfd) ||
	    fsync(dfd)) {
		rc = -errno;
		free(*qname);
		*qname = NULL;
	}
	return rc;
}

/* 16-byte files named *diriv* in the runs of the quarantine (earlier
 * repairs kept the dirivs they replaced there). */
void qr_collect_ivs(struct fctx *x)
{
	struct quarantine *q = x->qr;
	struct dirent *r, *e;
	DIR *top, *run;
	int tfd, rfd;

	if (!q)
		return;
	tfd = open(q->top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0 || !(top = fdopendir(tfd))) {
		if (tfd >= 0)
			close(tfd);
		return;
	}
	while ((r = readdir(top))) {
		if (r->d_name[0] == '.')
			continue;
		rfd = walk_openat(dirfd(top), r->d_name,
				  O_RDONLY | O_DIRECTORY);
		if (rfd < 0)
			continue;
		run = fdopendir(rfd);
		if (!run) {
			close(rfd);
			continue;
		}
		while ((e = readdir(run))) {
			uint8_t iv[NAMES_DIRIV_LEN];
			size_t len;

			if (strstr(e->d_name, "diriv") &&
			    !walk_read_diriv(dirfd(run), e->d_name, iv, &len))
				fctx_add_iv(x, iv);
		}
		closedir(run);
	}
	closedir(top);
}
