// SPDX-License-Identifier: MIT
/*
 * fsx: a model-based random-operation tester in the spirit of the classic
 * fsx. A seeded random sequence of pwrite (1 B - 300 KiB, offsets biased to
 * 4 KiB block edges), truncate up and down, fallocate, reads, close/reopen,
 * writes through a hard link and renames is applied both to a file under
 * TESTDIR (the veilfs mount) and to a reference file under REFDIR (a plain
 * disk). After every step the sizes must match and the bytes of the touched
 * range (widened to block edges) must match; the whole file is compared
 * periodically, at every reopen and at the end. Before each comparison the
 * test file is read through a second, O_DIRECT descriptor (or, where that
 * is refused, after dropping its page cache with POSIX_FADV_DONTNEED), so
 * reads go to the filesystem daemon, not to the kernel's cached copy.
 *
 * With -p N, N processes run: process i runs its own sequence (seed + i) on
 * its own file pair, and all of them also write disjoint ranges of one
 * shared file whose range edges fall inside 4 KiB blocks, so two writers
 * share a block (a read-modify-write race if the daemon does not serialise
 * writers per inode). The shared file is checked against a reference at the
 * end.
 *
 * Exit 0 on success, 1 on a mismatch (the seed and a repro line are
 * printed), 2 on usage or setup errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BS 4096
#define MAX_WRITE (300 * 1024)
#define HIST 32

struct opts {
	uint64_t seed;
	unsigned long nops;
	uint64_t maxlen;     /* largest file size the sequence creates */
	unsigned full_every; /* full compare every n ops */
	bool nofallocate;
	bool nolink;
	bool norename;
	bool verbose;
	bool nodirect;
	unsigned nproc;
	const char *testdir;
	const char *refdir;
	const char *argv0;
};

struct fsx {
	const struct opts *o;
	uint64_t rng;
	unsigned id;
	char tname[2][4096]; /* alternate names used by rename */
	char rname[2][4096];
	char tbuf_name[4200];
	int cur;	     /* which of the two names is live */
	int tfd, rfd;
	int dfd;	     /* O_DIRECT fd of the test file, or -1 */
	unsigned long opno;
	char hist[HIST][128];
	uint8_t *buf, *tbuf, *rbuf;
	uint64_t nwrite, ntrunc, nfalloc, nread, nreopen, nlink, nrename;
};

static uint64_t rnd(struct fsx *f)
{
	/* splitmix64: fast and good enough for test sequences */
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(struct fsx *f, uint64_t n)
{
	return n ? rnd(f) % n : 0;
}

/* Log-uniform length in [1, max]: many tiny writes, some huge ones. */
static uint64_t rnd_len(struct fsx *f, uint64_t max)
{
	uint64_t r = rnd_below(f, 8);

	if (r == 0) { /* multiples of the block size, -1 / 0 / +1 */
		uint64_t l = (rnd_below(f, max / BS) + 1) * BS - 1 +
			     rnd_below(f, 3);

		return l > max ? max : l;
	}
	{
		unsigned bits = 1 + (unsigned)rnd_below(f, 64 - __builtin_clzll(max));
		uint64_t lim = bits >= 63 ? max : (1ULL << bits);

		if (lim > max)
			lim = max;
		return 1 + rnd_below(f, lim);
	}
}

/* Offset in [0, lim], often on or next to a block edge. */
static uint64_t rnd_off(struct fsx *f, uint64_t lim)
{
	uint64_t off;

	if (rnd_below(f, 3) == 0) {
		off = rnd_below(f, lim / BS + 1) * BS;
		off += rnd_below(f, 5);
		off = off >= 2 ? off - 2 : off;
	} else {
		off = rnd_below(f, lim + 1);
	}
	return off > lim ? lim : off;
}

static void hist_add(struct fsx *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void hist_add(struct fsx *f, const char *fmt, ...)
{
	va_list ap;
	char *h = f->hist[f->opno % HIST];

	va_start(ap, fmt);
	vsnprintf(h, sizeof(f->hist[0]), fmt, ap);
	va_end(ap);
	if (f->o->verbose)
		fprintf(stderr, "fsx[%u] %lu: %s\n", f->id, f->opno, h);
}

static void fail(struct fsx *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void fail(struct fsx *f, const char *fmt, ...)
{
	va_list ap;
	unsigned long i, first;

	fprintf(stderr, "fsx[%u]: FAILURE at op %lu: ", f->id, f->opno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nfsx[%u]: last operations:\n", f->id);
	first = f->opno >= HIST - 1 ? f->opno - (HIST - 1) : 0;
	for (i = first; i <= f->opno; i++)
		fprintf(stderr, "  %lu: %s\n", i, f->hist[i % HIST]);
	fprintf(stderr,
		"fsx[%u]: seed %" PRIu64 " (process seed %" PRIu64 ")\n"
		"fsx: repro: %s -S %" PRIu64 " -N %lu -l %" PRIu64 "%s%s%s%s"
		" -p %u -v TESTDIR REFDIR\n",
		f->id, f->o->seed, f->o->seed + f->id, f->o->argv0, f->o->seed,
		f->opno + 1, f->o->maxlen, f->o->nodirect ? " -D" : "",
		f->o->nofallocate ? " -F" : "",
		f->o->nolink ? " -L" : "", f->o->norename ? " -R" : "",
		f->o->nproc);
	fflush(stderr);
	exit(1);
}

static void die_setup(const char *what, const char *path)
{
	fprintf(stderr, "fsx: %s '%s': %s\n", what, path, strerror(errno));
	exit(2);
}

/* Full-length pread; returns bytes read or -errno. */
static ssize_t pread_all(int fd, uint8_t *b, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, b + done, len - done, off + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

static ssize_t pwrite_all(int fd, const uint8_t *b, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, b + done, len - done, off + done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += n;
	}
	return done;
}

static uint64_t fsize(struct fsx *f, int fd, const char *which)
{
	struct stat st;

	if (fstat(fd, &st))
		fail(f, "fstat %s: %s", which, strerror(errno));
	return st.st_size;
}

static void drop_cache(int fd)
{
	/* Make the next read ask the daemon (FUSE pages are clean). */
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void check_size(struct fsx *f)
{
	uint64_t ts = fsize(f, f->tfd, "test"), rs = fsize(f, f->rfd, "ref");

	if (ts != rs)
		fail(f, "size mismatch: test %" PRIu64 " ref %" PRIu64, ts, rs);
}

/* Compare [off, off+len) of both files, in chunks. */
static void check_range(struct fsx *f, uint64_t off, uint64_t len)
{
	const size_t chunk = 1 << 20;

	drop_cache(f->tfd);
	while (len > 0) {
		size_t n = len < chunk ? len : chunk;
		ssize_t tn = pread_all(f->dfd >= 0 ? f->dfd : f->tfd, f->tbuf, n,
				       off);
		ssize_t rn = pread_all(f->rfd, f->rbuf, n, off);

		if (tn < 0)
			fail(f, "read test [%" PRIu64 ", +%zu): %s", off, n,
			     strerror(-tn));
		if (rn < 0)
			fail(f, "read ref: %s", strerror(-rn));
		if (tn != rn)
			fail(f, "short read at %" PRIu64 ": test %zd ref %zd",
			     off, tn, rn);
		if (memcmp(f->tbuf, f->rbuf, tn)) {
			size_t i = 0;

			while (f->tbuf[i] == f->rbuf[i])
				i++;
			fail(f,
			     "content mismatch at offset %" PRIu64
			     " (block %" PRIu64 "+%" PRIu64
			     "): test 0x%02x ref 0x%02x",
			     off + i, (off + i) / BS, (off + i) % BS,
			     f->tbuf[i], f->rbuf[i]);
		}
		if ((size_t)tn < n)
			break;
		off += n;
		len -= n;
	}
}

/* Compare the range an op touched, widened by one block on each side. */
static void check_touched(struct fsx *f, uint64_t off, uint64_t len)
{
	uint64_t a = off / BS * BS, b = (off + len + BS - 1) / BS * BS;

	a = a >= BS ? a - BS : 0;
	b += BS;
	check_size(f);
	check_range(f, a, b - a);
}

static void check_all(struct fsx *f)
{
	check_size(f);
	check_range(f, 0, fsize(f, f->rfd, "ref") + BS);
}

static void fill(struct fsx *f, uint8_t *b, size_t len)
{
	size_t i = 0;
	uint8_t pat = (uint8_t)rnd(f);

	/* mostly random bytes; sometimes runs of zeros (they look like holes
	 * to nobody but are worth a try) */
	if (rnd_below(f, 16) == 0) {
		memset(b, 0, len);
		return;
	}
	while (i + 8 <= len) {
		uint64_t r = rnd(f);

		memcpy(b + i, &r, 8);
		i += 8;
	}
	for (; i < len; i++)
		b[i] = pat++;
}

static void do_write(struct fsx *f, int tfd, int rfd, const char *how)
{
	uint64_t len = rnd_len(f, MAX_WRITE);
	uint64_t off = rnd_off(f, f->o->maxlen - len);
	ssize_t tn, rn;

	fill(f, f->buf, len);
	hist_add(f, "write%s off %" PRIu64 " len %" PRIu64, how, off, len);
	tn = pwrite_all(tfd, f->buf, len, off);
	rn = pwrite_all(rfd, f->buf, len, off);
	if (tn != rn)
		fail(f, "write: test %zd (%s) ref %zd", tn,
		     tn < 0 ? strerror(-tn) : "ok", rn);
	f->nwrite++;
	check_touched(f, off, len);
}

static void do_truncate(struct fsx *f)
{
	uint64_t cur = fsize(f, f->rfd, "ref"), sz;
	int tr, rr;

	switch (rnd_below(f, 4)) {
	case 0:
		sz = cur ? rnd_below(f, cur) : 0; /* down */
		break;
	case 1:
		sz = cur + rnd_len(f, MAX_WRITE); /* up */
		break;
	case 2:
		sz = rnd_below(f, 3) == 0 ? 0 : rnd_off(f, f->o->maxlen);
		break;
	default: /* near the current end, within the last block */
		sz = cur - cur % BS + rnd_below(f, BS + 1);
		break;
	}
	if (sz > f->o->maxlen)
		sz = f->o->maxlen;
	hist_add(f, "truncate %" PRIu64 " -> %" PRIu64, cur, sz);
	tr = ftruncate(f->tfd, sz) ? -errno : 0;
	rr = ftruncate(f->rfd, sz) ? -errno : 0;
	if (tr != rr)
		fail(f, "truncate: test %d (%s) ref %d", tr, strerror(-tr), rr);
	f->ntrunc++;
	check_touched(f, sz < cur ? sz : cur, sz < cur ? cur - sz : sz - cur);
}

static void do_fallocate(struct fsx *f)
{
	uint64_t len = rnd_len(f, MAX_WRITE);
	uint64_t off = rnd_off(f, f->o->maxlen - len);
	int mode = rnd_below(f, 2) ? FALLOC_FL_KEEP_SIZE : 0;
	uint64_t cur = fsize(f, f->rfd, "ref");
	int tr, rr;

	hist_add(f, "fallocate%s off %" PRIu64 " len %" PRIu64 " (size %"
		 PRIu64 ")", mode ? " keep_size" : "", off, len, cur);
	tr = fallocate(f->tfd, mode, off, len) ? -errno : 0;
	rr = fallocate(f->rfd, mode, off, len) ? -errno : 0;
	if (tr != rr)
		fail(f, "fallocate: test %d (%s) ref %d (%s)", tr,
		     strerror(-tr), rr, strerror(-rr));
	f->nfalloc++;
	check_touched(f, cur < off ? cur : off, off + len - (cur < off ? cur : off));
}

static void do_read(struct fsx *f)
{
	uint64_t len = rnd_len(f, MAX_WRITE);
	uint64_t off = rnd_off(f, f->o->maxlen);

	hist_add(f, "read off %" PRIu64 " len %" PRIu64, off, len);
	f->nread++;
	check_size(f);
	check_range(f, off, len);
}

static int open_rw(struct fsx *f, const char *path, int flags)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | flags, 0644);

	if (fd < 0)
		fail(f, "open '%s': %s", path, strerror(errno));
	return fd;
}

/* A second descriptor with O_DIRECT: its reads bypass the page cache and
 * are not serialised by page locks, so they reach the daemon while other
 * requests on the same blocks are in flight. -1 if not supported. */
static int open_direct(const struct opts *o, const char *path)
{
	if (o->nodirect)
		return -1;
	return open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
}

static void do_reopen(struct fsx *f)
{
	hist_add(f, "close/reopen %s", f->tname[f->cur]);
	if (close(f->tfd))
		fail(f, "close test: %s", strerror(errno));
	close(f->rfd);
	if (f->dfd >= 0)
		close(f->dfd);
	f->tfd = open_rw(f, f->tname[f->cur], 0);
	f->rfd = open_rw(f, f->rname[f->cur], 0);
	f->dfd = open_direct(f->o, f->tname[f->cur]);
	f->nreopen++;
	check_all(f);
}

/* Write through a second name of the same inode, then drop the link
 * (gocryptfs #724: sizes right after link). */
static void do_link(struct fsx *f)
{
	char tl[4200], rl[4200];
	struct stat st;
	int tfd, rfd;
	uint64_t rs;

	snprintf(tl, sizeof(tl), "%s.link", f->tname[f->cur]);
	snprintf(rl, sizeof(rl), "%s.link", f->rname[f->cur]);
	hist_add(f, "link + write through link");
	if (link(f->tname[f->cur], tl))
		fail(f, "link test: %s", strerror(errno));
	if (link(f->rname[f->cur], rl))
		fail(f, "link ref: %s", strerror(errno));
	rs = fsize(f, f->rfd, "ref");
	if (stat(tl, &st))
		fail(f, "stat link: %s", strerror(errno));
	if ((uint64_t)st.st_size != rs || st.st_nlink != 2)
		fail(f, "after link: size %jd nlink %ju, want %" PRIu64 " 2",
		     (intmax_t)st.st_size, (uintmax_t)st.st_nlink, rs);
	tfd = open_rw(f, tl, 0);
	rfd = open_rw(f, rl, 0);
	f->opno++;
	do_write(f, tfd, rfd, " (via link)");
	close(tfd);
	close(rfd);
	if (unlink(tl) || unlink(rl))
		fail(f, "unlink link: %s", strerror(errno));
	f->nlink++;
	if (stat(f->tname[f->cur], &st))
		fail(f, "stat after unlink: %s", strerror(errno));
	if ((uint64_t)st.st_size != fsize(f, f->rfd, "ref") ||
	    st.st_nlink != 1)
		fail(f, "after unlink of link: size %jd nlink %ju",
		     (intmax_t)st.st_size, (uintmax_t)st.st_nlink);
	check_all(f);
}

static void do_rename(struct fsx *f)
{
	int nxt = !f->cur;
	struct stat st;

	hist_add(f, "rename %s -> %s", f->tname[f->cur], f->tname[nxt]);
	if (rename(f->tname[f->cur], f->tname[nxt]))
		fail(f, "rename test: %s", strerror(errno));
	if (rename(f->rname[f->cur], f->rname[nxt]))
		fail(f, "rename ref: %s", strerror(errno));
	f->cur = nxt;
	f->nrename++;
	if (stat(f->tname[f->cur], &st))
		fail(f, "stat after rename: %s", strerror(errno));
	if ((uint64_t)st.st_size != fsize(f, f->rfd, "ref"))
		fail(f, "size after rename %jd", (intmax_t)st.st_size);
	check_size(f);
}

static void fsx_init(struct fsx *f, const struct opts *o, unsigned id)
{
	memset(f, 0, sizeof(*f));
	f->o = o;
	f->id = id;
	f->rng = o->seed + id;
	for (int i = 0; i < 2; i++) {
		snprintf(f->tname[i], sizeof(f->tname[i]), "%s/fsx%u.%c",
			 o->testdir, id, "ab"[i]);
		snprintf(f->rname[i], sizeof(f->rname[i]), "%s/fsx%u.%c",
			 o->refdir, id, "ab"[i]);
		unlink(f->tname[i]);
		unlink(f->rname[i]);
		snprintf(f->tbuf_name, sizeof(f->tbuf_name), "%s.link",
			 f->tname[i]);
		unlink(f->tbuf_name);
		snprintf(f->tbuf_name, sizeof(f->tbuf_name), "%s.link",
			 f->rname[i]);
		unlink(f->tbuf_name);
	}
	f->buf = malloc(MAX_WRITE);
	f->rbuf = malloc(1 << 20);
	/* O_DIRECT wants an aligned buffer */
	if (posix_memalign((void **)&f->tbuf, 4096, 1 << 20))
		f->tbuf = NULL;
	if (!f->buf || !f->tbuf || !f->rbuf) {
		fprintf(stderr, "fsx: out of memory\n");
		exit(2);
	}
	f->tfd = open_rw(f, f->tname[0], O_CREAT | O_EXCL);
	f->rfd = open_rw(f, f->rname[0], O_CREAT | O_EXCL);
	f->dfd = open_direct(o, f->tname[0]);
}

static void fsx_run(struct fsx *f)
{
	for (f->opno = 0; f->opno < f->o->nops; f->opno++) {
		uint64_t r = rnd_below(f, 100);

		if (r < 45)
			do_write(f, f->tfd, f->rfd, "");
		else if (r < 60)
			do_truncate(f);
		else if (r < 68 && !f->o->nofallocate)
			do_fallocate(f);
		else if (r < 88)
			do_read(f);
		else if (r < 93)
			do_reopen(f);
		else if (r < 96 && !f->o->nolink)
			do_link(f);
		else if (r < 99 && !f->o->norename)
			do_rename(f);
		else
			do_read(f);
		if (f->o->full_every && f->opno % f->o->full_every == 0)
			check_all(f);
	}
	hist_add(f, "final check");
	do_reopen(f);
	fprintf(stderr,
		"fsx[%u]: %lu ops ok (seed %" PRIu64 "): %" PRIu64 " writes, %"
		PRIu64 " truncates, %" PRIu64 " fallocates, %" PRIu64
		" reads, %" PRIu64 " reopens, %" PRIu64 " links, %" PRIu64
		" renames\n",
		f->id, f->o->nops, f->o->seed + f->id, f->nwrite, f->ntrunc,
		f->nfalloc, f->nread, f->nreopen, f->nlink, f->nrename);
	close(f->tfd);
	close(f->rfd);
	if (f->dfd >= 0)
		close(f->dfd);
	for (int i = 0; i < 2; i++) {
		unlink(f->tname[i]);
		unlink(f->rname[i]);
	}
}

/*
 * Shared-file part of -p: process i owns [i*R, (i+1)*R) with R not a
 * multiple of the block size, writes random pieces of it and checks them,
 * keeping its own model in memory; at the end it writes its model into the
 * reference shared file at the same place.
 */
#define SHARED_R (3 * BS + 1000)

static void shared_run(struct fsx *f, const char *tpath, const char *rpath,
		       unsigned long nops)
{
	uint8_t model[SHARED_R];
	uint8_t *got = f->tbuf; /* aligned */
	uint64_t base = (uint64_t)f->id * SHARED_R;
	int tfd = open_rw(f, tpath, 0), rfd;
	int dfd = open_direct(f->o, tpath);

	memset(model, 0, sizeof(model));
	for (unsigned long i = 0; i < nops; i++) {
		uint64_t off = rnd_below(f, SHARED_R);
		uint64_t len = 1 + rnd_below(f, SHARED_R - off);
		ssize_t n;

		/* favour the edges shared with the neighbours */
		if (rnd_below(f, 2)) {
			off = rnd_below(f, 2) ? 0 : SHARED_R - 1 - rnd_below(f, 64);
			len = 1 + rnd_below(f, SHARED_R - off);
		}
		f->opno = i;
		fill(f, model + off, len);
		hist_add(f, "shared write off %" PRIu64 " len %" PRIu64,
			 base + off, len);
		n = pwrite_all(tfd, model + off, len, base + off);
		if (n != (ssize_t)len)
			fail(f, "shared write: %s", n < 0 ? strerror(-n) : "short");
		if (dfd >= 0 || rnd_below(f, 4) == 0) {
			drop_cache(tfd);
			n = pread_all(dfd >= 0 ? dfd : tfd, got, SHARED_R, base);
			if (n != SHARED_R)
				fail(f, "shared read: %zd", n);
			if (memcmp(got, model, SHARED_R))
				fail(f, "shared file: own range corrupted");
		}
	}
	close(tfd);
	if (dfd >= 0)
		close(dfd);
	rfd = open_rw(f, rpath, 0);
	if (pwrite_all(rfd, model, SHARED_R, base) != SHARED_R)
		fail(f, "shared ref write");
	close(rfd);
}

static int compare_files(const char *a, const char *b)
{
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	static uint8_t ba[1 << 16], bb[1 << 16];
	off_t off = 0;
	int rc = 1;

	if (fa < 0 || fb < 0)
		goto out;
	drop_cache(fa);
	for (;;) {
		ssize_t na = pread_all(fa, ba, sizeof(ba), off);
		ssize_t nb = pread_all(fb, bb, sizeof(bb), off);

		if (na != nb || na < 0) {
			fprintf(stderr, "fsx: shared file: read %zd vs %zd at %jd\n",
				na, nb, (intmax_t)off);
			goto out;
		}
		if (memcmp(ba, bb, na)) {
			size_t i = 0;

			while (ba[i] == bb[i])
				i++;
			fprintf(stderr,
				"fsx: shared file mismatch at %jd (block %jd)\n",
				(intmax_t)(off + i), (intmax_t)((off + i) / BS));
			goto out;
		}
		if (na == 0)
			break;
		off += na;
	}
	rc = 0;
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return rc;
}

static int run_multi(struct opts *o)
{
	char tpath[4200], rpath[4200];
	unsigned failed = 0;
	int fd;

	snprintf(tpath, sizeof(tpath), "%s/fsx.shared", o->testdir);
	snprintf(rpath, sizeof(rpath), "%s/fsx.shared", o->refdir);
	unlink(tpath);
	unlink(rpath);
	fd = open(tpath, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)o->nproc * SHARED_R))
		die_setup("create", tpath);
	close(fd);
	fd = open(rpath, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)o->nproc * SHARED_R))
		die_setup("create", rpath);
	close(fd);

	for (unsigned i = 0; i < o->nproc; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die_setup("fork", "");
		if (pid == 0) {
			struct fsx f;

			fsx_init(&f, o, i);
			/* all processes start with the shared file at the
			 * same time, then run their own sequences */
			shared_run(&f, tpath, rpath,
				   o->nops / 4 > 200 ? o->nops / 4 : 200);
			fsx_run(&f);
			free(f.buf);
			free(f.tbuf);
			free(f.rbuf);
			_exit(0);
		}
	}
	for (unsigned i = 0; i < o->nproc; i++) {
		int st;

		if (wait(&st) < 0)
			break;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	if (failed) {
		fprintf(stderr, "fsx: %u of %u processes failed (seed %" PRIu64
			")\n", failed, o->nproc, o->seed);
		return 1;
	}
	if (compare_files(tpath, rpath)) {
		fprintf(stderr, "fsx: shared file differs (seed %" PRIu64 ")\n",
			o->seed);
		return 1;
	}
	unlink(tpath);
	unlink(rpath);
	fprintf(stderr, "fsx: %u processes ok (seed %" PRIu64 ")\n", o->nproc,
		o->seed);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fsx [-S seed] [-N ops] [-l maxlen] [-c full_every] "
		"[-p nproc] [-D] [-F] [-L] [-R] [-v] TESTDIR REFDIR\n"
		"  -D no O_DIRECT reads, -F no fallocate, -L no hard links,\n"
		"  -R no renames\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {
		.nops = 20000,
		.maxlen = 1536 * 1024,
		.full_every = 500,
		.nproc = 1,
	};
	int c;

	o.argv0 = argv[0];
	o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	while ((c = getopt(argc, argv, "S:N:l:c:p:DFLRv")) != -1) {
		switch (c) {
		case 'S':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'N':
			o.nops = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			o.maxlen = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			o.full_every = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			o.nproc = strtoul(optarg, NULL, 0);
			break;
		case 'D':
			o.nodirect = true;
			break;
		case 'F':
			o.nofallocate = true;
			break;
		case 'L':
			o.nolink = true;
			break;
		case 'R':
			o.norename = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2 || o.maxlen < 2 * MAX_WRITE || o.nproc < 1 ||
	    o.nproc > 64)
		usage();
	o.testdir = argv[optind];
	o.refdir = argv[optind + 1];
	fprintf(stderr, "fsx: seed %" PRIu64 ", %lu ops, %u process(es)\n",
		o.seed, o.nops, o.nproc);
	if (o.nproc > 1)
		return run_multi(&o);
	{
		struct fsx f;

		fsx_init(&f, &o, 0);
		fsx_run(&f);
		free(f.buf);
		free(f.tbuf);
		free(f.rbuf);
	}
	return 0;
}
