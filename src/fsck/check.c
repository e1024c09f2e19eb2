// SPDX-License-Identifier: MIT
/*
 * File contents (spec §3): a queue of regular files opened by the walker
 * and a few checker threads. A checker reads the header, then the blocks in
 * chunks of about 1 MiB, skipping holes with SEEK_DATA/SEEK_HOLE (whole
 * all-zero blocks are holes, not errors, §3.4), and collects every block
 * that fails to authenticate. Files larger than SEG_BLOCKS blocks are cut
 * into segments that any idle checker takes, so one huge file uses every
 * core too. The aead batch pool is off for fsck (cli/fsck.c): the checkers
 * are the parallelism.
 *
 * A damaged header is tried with version 2 and with each single flipped
 * bit against the first blocks with data, then against a sample spread
 * over the rest of the file; if one of those authenticates, the blocks are
 * checked under it and -repair can restore it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secmem.h"
#include "fsck/internal.h"

#define CHUNK_BYTES (1u << 20)
#define SEG_BLOCKS 16384u /* about 64 MiB of ciphertext */
#define QUEUE_FILES 64u

struct ffile {
	int fd;
	struct fnode *dir;
	char *cname, *pname;
	dev_t dev;
	ino_t ino;
	uint64_t size, nblocks;
	uint8_t id[CONTENT_FILE_ID_LEN];
	enum fp_hdr hdr;
	uint8_t hdr_fix[CONTENT_HEADER_LEN];
	pthread_mutex_t lock; /* protects pending, bad, nbad, capbad, rerr */
	unsigned pending;
	uint64_t *bad;
	size_t nbad, capbad;
	int rerr;	/* first read error (negative errno) */
};

struct fitem {
	struct fitem *next;
	struct ffile *f;
	uint64_t b0, b1;
	bool first;	/* the whole file: read the header, cut segments */
};

struct fqueue {
	pthread_mutex_t lock;	/* protects everything below */
	pthread_cond_t more, room;
	struct fitem *segs;	/* segments of started files: first */
	struct fitem *fhead, *ftail;
	size_t nfiles;
	unsigned starting;	/* files being started: may add segments */
	bool closed;
	pthread_t th[64];
	unsigned nth;
	struct fctx *x;
};

uint64_t check_nblocks(const struct fctx *x, uint64_t size)
{
	if (size <= CONTENT_HEADER_LEN)
		return 0;
	return (size - CONTENT_HEADER_LEN + x->cbs - 1) / x->cbs;
}

static int add_bad(uint64_t **bad, size_t *n, size_t *cap, uint64_t b)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		uint64_t *nb = realloc(*bad, nc * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		*bad = nb;
		*cap = nc;
	}
	(*bad)[(*n)++] = b;
	return 0;
}

/* Read len bytes at off; returns the count read (short at EOF) or -errno. */
static ssize_t read_full(struct fctx *x, int fd, uint8_t *buf, size_t len,
			 uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got,
				  (off_t)(off + got));

		if (r < 0 && errno == EINTR && !fctx_stopped(x))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Decrypt len bytes of blocks from block b, appending every bad one. */
static int open_all(struct fctx *x, const uint8_t *ct, size_t len, uint64_t b,
		    const uint8_t *id, uint8_t *pt, uint64_t **bad,
		    size_t *nbad, size_t *capbad)
{
	size_t pos = 0, ptlen;
	uint64_t badb;

	while (pos < len) {
		uint64_t bb = b + pos / x->cbs;

		if (!content_decrypt_blocks(x->c, pt, &ptlen, ct + pos,
					    len - pos, bb, id, &badb))
			break;
		if (add_bad(bad, nbad, capbad, badb))
			return -ENOMEM;
		pos = (size_t)(badb + 1 - b) * x->cbs;
	}
	return 0;
}

int check_blocks(struct fctx *x, int fd, uint64_t size, const uint8_t *id,
		 uint64_t b0, uint64_t b1, uint8_t *ct, uint8_t *pt,
		 uint64_t **bad, size_t *nbad, size_t *capbad)
{
	uint64_t nblocks = check_nblocks(x, size), b = b0;
	uint64_t chunk = CHUNK_BYTES / x->cbs, last_full;
	bool holes = size > CHUNK_BYTES;
	int rc = 0;

	if (b1 > nblocks)
		b1 = nblocks;
	/* the last block is never skipped: a partial one of zeros is not a
	 * hole but damage */
	last_full = (size - CONTENT_HEADER_LEN) % x->cbs ? nblocks - 1
							 : nblocks;
	while (b < b1) {
		uint64_t off = CONTENT_HEADER_LEN + b * x->cbs;
		uint64_t end = b + chunk < b1 ? b + chunk : b1, cend;
		ssize_t got;

		if (fctx_stopped(x))
			return -EINTR;
		if (holes) {
			off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;

			if (d < 0)
				d = errno == ENXIO ? (off_t)size : (off_t)off;
			if ((uint64_t)d > off) {
				uint64_t nb = ((uint64_t)d - CONTENT_HEADER_LEN)
					      / x->cbs;

				if (nb > last_full)
					nb = last_full;
				if (nb > b1)
					nb = b1;
				if (nb > b) {
					__atomic_add_fetch(&x->bytes_done,
							   (nb - b) * x->cbs,
							   __ATOMIC_RELAXED);
					b = nb;
					continue;
				}
			}
			h = lseek(fd, (off_t)off, SEEK_HOLE);
			if (h > (off_t)off) {
				uint64_t hb = ((uint64_t)h -
					       CONTENT_HEADER_LEN + x->cbs - 1)
					      / x->cbs;

				if (hb > b && hb < end)
					end = hb;
			}
		}
		cend = CONTENT_HEADER_LEN + end * x->cbs;
		if (cend > size)
			cend = size;
		got = read_full(x, fd, ct, cend - off, off);
		if (got == -EIO) {
			/* a bad disk: find the unreadable blocks one by one */
			for (uint64_t k = b; k < end && !rc; k++) {
				uint64_t o = CONTENT_HEADER_LEN + k * x->cbs;
				size_t l = o + x->cbs > size ? size - o
							     : x->cbs;
				ssize_t g = read_full(x, fd, ct, l, o);

				if (g != (ssize_t)l)
					rc = add_bad(bad, nbad, capbad, k);
				else
					rc = open_all(x, ct, l, k, id, pt, bad,
						      nbad, capbad);
			}
			if (rc)
				return rc;
			b = end;
			continue;
		}
		if (got < 0)
			return (int)got;
		if ((uint64_t)got < cend - off) {
			/* shrank while being checked: the rest is missing */
			for (uint64_t k = b + (uint64_t)got / x->cbs; k < end;
			     k++)
				if (add_bad(bad, nbad, capbad, k))
					return -ENOMEM;
		}
		rc = open_all(x, ct, (size_t)got, b, id, pt, bad, nbad,
			      capbad);
		if (rc)
			return rc;
		__atomic_add_fetch(&x->bytes_done, cend - off,
				   __ATOMIC_RELAXED);
		b = end;
	}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Up to PROBES blocks with a non-zero byte, the first ones of the file
 * (holes skipped, written zeros read through), to test a header against:
 * one block of them may be damaged too, and a header must not be judged
 * by that one alone (a restored header was once refused, or the file's
 * blocks all given up, for a damaged block 0). */
#define PROBES 8
struct probes {
	size_t n;
	uint64_t blk[PROBES];
	size_t len[PROBES];
	uint8_t ct[PROBES][CONTENT_MAX_CIPHER_BS];
};

static void probe_blocks(struct fctx *x, int fd, uint64_t size,
			 struct probes *pr)
{
	uint64_t nblocks = check_nblocks(x, size), b;
	off_t d = lseek(fd, CONTENT_HEADER_LEN, SEEK_DATA);

	pr->n = 0;
	if (d < 0)
		d = errno == ENXIO ? (off_t)size : CONTENT_HEADER_LEN;
	b = ((uint64_t)d - CONTENT_HEADER_LEN) / x->cbs;
	if ((uint64_t)d >= size)
		b = nblocks ? nblocks - 1 : 0;
	for (uint64_t k = b; k < nblocks && pr->n < PROBES &&
			     !fctx_stopped(x); k++) {
		uint64_t o = CONTENT_HEADER_LEN + k * x->cbs;
		size_t l = o + x->cbs > size ? size - o : x->cbs;
		uint8_t *ct = pr->ct[pr->n];

		if (read_full(x, fd, ct, l, o) != (ssize_t)l)
			continue;
		if (!all_zero(ct, l)) {
			pr->blk[pr->n] = k;
			pr->len[pr->n++] = l;
			continue;
		}
		d = lseek(fd, (off_t)(o + l), SEEK_DATA);
		if (d < 0 || (uint64_t)d >= size)
			break;
		if (((uint64_t)d - CONTENT_HEADER_LEN) / x->cbs > k + 1)
			k = ((uint64_t)d - CONTENT_HEADER_LEN) / x->cbs - 1;
	}
}

/* Up to PROBES blocks with a non-zero byte spread over blocks [from, end
 * of file), one from each of PROBES equal stretches: when the first
 * blocks with data are all damaged (a run of bad sectors), a header must
 * still be found by the intact blocks after them. One block read per
 * stretch (the first with data in it), so a huge file costs no more than
 * a small one. */
static void probe_spread(struct fctx *x, int fd, uint64_t size, uint64_t from,
			 struct probes *pr)
{
	uint64_t nblocks = check_nblocks(x, size), span;

	pr->n = 0;
	if (from >= nblocks)
		return;
	span = nblocks - from;
	for (unsigned i = 0; i < PROBES && !fctx_stopped(x); i++) {
		uint64_t k = from + span / PROBES * i +
			     span % PROBES * i / PROBES;
		uint64_t end = from + span / PROBES * (i + 1) +
			       span % PROBES * (i + 1) / PROBES;
		uint64_t o = CONTENT_HEADER_LEN + k * x->cbs;
		off_t d;
		size_t l;
		uint8_t *ct = pr->ct[pr->n];

		if (k >= end)
			continue; /* fewer blocks than stretches */
		d = lseek(fd, (off_t)o, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			break; /* only holes from here */
		if (d > (off_t)o) {
			k = ((uint64_t)d - CONTENT_HEADER_LEN) / x->cbs;
			if (k >= end)
				continue;
			o = CONTENT_HEADER_LEN + k * x->cbs;
		}
		l = o + x->cbs > size ? size - o : x->cbs;
		if (read_full(x, fd, ct, l, o) != (ssize_t)l ||
		    all_zero(ct, l))
			continue;
		pr->blk[pr->n] = k;
		pr->len[pr->n++] = l;
	}
}

static bool block_opens(struct fctx *x, const uint8_t *ct, size_t len,
			uint64_t blk, const uint8_t *hdr, uint8_t *pt)
{
	uint8_t id[CONTENT_FILE_ID_LEN];
	size_t ptlen;

	if (content_header_parse(hdr, id))
		return false;
	return !content_decrypt_blocks(x->c, pt, &ptlen, ct, len, blk, id,
				       NULL);
}

static bool some_block_opens(struct fctx *x, const struct probes *pr,
			     const uint8_t *hdr, uint8_t *pt)
{
	for (size_t i = 0; i < pr->n; i++)
		if (block_opens(x, pr->ct[i], pr->len[i], pr->blk[i], hdr, pt))
			return true;
	return false;
}

/* A header under which a probed block opens: hdr with version 2, or with
 * one bit flipped. */
static bool search_header(struct fctx *x, const uint8_t *hdr,
			  const struct probes *pr, uint8_t *pt,
			  uint8_t out[static CONTENT_HEADER_LEN])
{
	memcpy(out, hdr, CONTENT_HEADER_LEN);
	out[0] = CONTENT_HEADER_VERSION >> 8;
	out[1] = CONTENT_HEADER_VERSION & 0xff;
	if (some_block_opens(x, pr, out, pt))
		return true;
	for (unsigned bit = 0; bit < 8 * CONTENT_HEADER_LEN; bit++) {
		memcpy(out, hdr, CONTENT_HEADER_LEN);
		out[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (some_block_opens(x, pr, out, pt))
			return true;
	}
	return false;
}

/* None of the first probes opened under any candidate: the blocks spread
 * over the rest of the file, taken into pr. Returns false when there are
 * none (the first probes reached the end). */
static bool probe_rest(struct fctx *x, int fd, uint64_t size,
		       struct probes *pr)
{
	if (pr->n < PROBES)
		return false;
	probe_spread(x, fd, size, pr->blk[pr->n - 1] + 1, pr);
	return pr->n > 0;
}

/* A header that does not parse: is there one under which the blocks
 * open? */
static void fix_header(struct fctx *x, struct ffile *f, const uint8_t *hdr,
		       uint8_t *pt)
{
	struct probes *pr = malloc(sizeof(*pr));

	f->hdr = HDR_LOST;
	if (!pr)
		return;
	probe_blocks(x, f->fd, f->size, pr);
	if (!pr->n) {
		/* only holes: any header will do */
		content_header_new(x->c, f->hdr_fix, f->id);
		f->hdr = HDR_FIXABLE;
	} else if (search_header(x, hdr, pr, pt, f->hdr_fix) ||
		   (probe_rest(x, f->fd, f->size, pr) &&
		    search_header(x, hdr, pr, pt, f->hdr_fix))) {
		memcpy(f->id, f->hdr_fix + 2, CONTENT_FILE_ID_LEN);
		f->hdr = HDR_FIXABLE;
	}
	free(pr);
}

/* ---- is a directory ours? ------------------------------------------- */

#define OURS_TRIES 32	/* objects looked at, in all */
#define OURS_DEPTH 3	/* levels, the directory itself included */

/* A regular file whose header parses and under which one of its first
 * blocks with data authenticates: written with the master key. */
static bool file_ours(struct fctx *x, int fd, struct probes *pr, uint8_t *pt)
{
	uint8_t hdr[CONTENT_HEADER_LEN];
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size <= CONTENT_HEADER_LEN ||
	    read_full(x, fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		return false;
	probe_blocks(x, fd, (uint64_t)st.st_size, pr);
	return some_block_opens(x, pr, hdr, pt);
}

static bool dir_ours(struct fctx *x, int dfd, unsigned depth, unsigned *left,
		     struct probes *pr, uint8_t *pt)
{
	struct fdent *ents = NULL;
	size_t n = 0;
	bool ours = false;

	if (walk_list_dir(dfd, &ents, &n))
		return false;
	/* files and symlinks (their targets authenticate too, §4.9) first:
	 * they say it sooner than a subdirectory */
	for (size_t i = 0; i < n && !ours && *left && !fctx_stopped(x); i++) {
		const char *nm = ents[i].name;
		char t[4097], d[4097];
		struct stat st;
		ssize_t tl;
		int fd;

		if (names_is_sidecar(nm) ||
		    fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISLNK(st.st_mode)) {
			(*left)--;
			tl = readlinkat(dfd, nm, t, sizeof(t) - 1);
			ours = tl > 0 && !names_decrypt_symlink(x->n, t,
								(size_t)tl, d,
								sizeof(d));
			secure_zero(d, sizeof(d));
			continue;
		}
		/* a diriv or an empty file proves nothing */
		if (!S_ISREG(st.st_mode) || st.st_size <= CONTENT_HEADER_LEN)
			continue;
		fd = walk_openat(dfd, nm, O_RDONLY);
		if (fd < 0)
			continue;
		(*left)--;
		ours = file_ours(x, fd, pr, pt);
		close(fd);
	}
	for (size_t i = 0; depth > 1 && i < n && !ours && *left &&
			   !fctx_stopped(x); i++) {
		int fd;

		if (ents[i].type != DT_DIR && ents[i].type != DT_UNKNOWN)
			continue;
		fd = walk_openat(dfd, ents[i].name, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			continue;
		(*left)--;
		ours = dir_ours(x, fd, depth - 1, left, pr, pt);
		close(fd);
	}
	walk_free_ents(ents, n);
	return ours;
}

bool check_dir_ours(struct fctx *x, int dfd)
{
	struct probes *pr = malloc(sizeof(*pr));
	uint8_t *pt = malloc(CONTENT_PLAIN_BS);
	unsigned left = OURS_TRIES;
	bool ours = false;

	if (pr && pt)
		ours = dir_ours(x, dfd, OURS_DEPTH, &left, pr, pt);
	if (pt)
		secure_zero(pt, CONTENT_PLAIN_BS);
	free(pt);
	free(pr);
	return ours;
}

static int cmp_u64(const void *a, const void *b);

/* A header that parses, but the first blocks with data all fail: a
 * damaged file ID? If a restored header opens one of them, only what
 * still fails under that header stays bad. */
static void recheck_header(struct fctx *x, struct ffile *f)
{
	uint8_t hdr[CONTENT_HEADER_LEN], fix[CONTENT_HEADER_LEN];
	uint8_t ct[CONTENT_MAX_CIPHER_BS], pt[CONTENT_PLAIN_BS];
	struct probes *pr = NULL;
	uint64_t *bad = NULL;
	size_t nbad = 0, cap = 0, i;
	bool found = false;

	if (read_full(x, f->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		return;
	pr = malloc(sizeof(*pr));
	if (!pr)
		return;
	probe_blocks(x, f->fd, f->size, pr);
	/* One that opens under the header as it is: the header is right. */
	for (i = 0; i < pr->n; i++)
		if (!bsearch(&pr->blk[i], f->bad, f->nbad, sizeof(*f->bad),
			     cmp_u64))
			break;
	if (pr->n && i == pr->n)
		found = search_header(x, hdr, pr, pt, fix);
	if (!found && pr->n && i == pr->n &&
	    probe_rest(x, f->fd, f->size, pr)) {
		/* the same again with blocks further on */
		for (i = 0; i < pr->n; i++)
			if (!bsearch(&pr->blk[i], f->bad, f->nbad,
				     sizeof(*f->bad), cmp_u64))
				break;
		if (i == pr->n)
			found = search_header(x, hdr, pr, pt, fix);
	}
	free(pr);
	if (!found)
		return;
	for (i = 0; i < f->nbad; i++)
		if (check_blocks(x, f->fd, f->size, fix + 2, f->bad[i],
				 f->bad[i] + 1, ct, pt, &bad, &nbad, &cap)) {
			free(bad);
			return;
		}
	free(f->bad);
	f->bad = bad;
	f->nbad = nbad;
	f->capbad = cap;
	memcpy(f->hdr_fix, fix, sizeof(fix));
	memcpy(f->id, fix + 2, CONTENT_FILE_ID_LEN);
	f->hdr = HDR_FIXABLE;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void ffile_free(struct ffile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	fnode_put(f->dir);
	free(f->cname);
	free(f->pname);
	free(f->bad);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Everything about f is known: print and record its problems. */
static void finish_file(struct fctx *x, struct ffile *f)
{
	struct fproblem *p;
	char blocks[512] = "", extra[160] = "";
	uint64_t last = f->nblocks ? f->nblocks - 1 : 0;
	size_t tail = (size_t)((f->size - CONTENT_HEADER_LEN) % x->cbs);

	__atomic_add_fetch(&x->nfiles, 1, __ATOMIC_RELAXED);
	if (fctx_stopped(x))
		goto out;
	walk_check_xattrs(x, f->fd, f->dir, f->cname, f->pname, f->dev,
			  f->ino, "file");
	if (f->hdr == HDR_OK && !f->nbad && !f->rerr)
		goto out;
	if (f->nbad)
		qsort(f->bad, f->nbad, sizeof(*f->bad), cmp_u64);
	if (f->hdr == HDR_OK && f->nbad)
		recheck_header(x, f);
	p = fproblem_new(FP_CONTENT, f->dir, f->cname, f->pname);
	if (!p)
		goto out;
	p->dev = f->dev;
	p->ino = f->ino;
	p->size = f->size;
	p->nblocks = f->nblocks;
	p->hdr = f->hdr;
	memcpy(p->hdr_fix, f->hdr_fix, sizeof(p->hdr_fix));
	p->bad = f->bad;
	p->nbad = f->nbad;
	f->bad = NULL;
	if (f->hdr == HDR_LOST) {
		p->all_bad = true;
		fctx_problem(x, p, "header is damaged: none of its %llu "
			     "blocks can be decrypted",
			     (unsigned long long)f->nblocks);
		goto out;
	}
	if (p->nbad) {
		fo_blocks(blocks, sizeof(blocks), p->bad, p->nbad);
		p->all_bad = p->nbad == f->nblocks;
		if (p->bad[p->nbad - 1] == last && tail && tail <= x->oh)
			snprintf(extra, sizeof(extra), "; block %llu is a "
				 "%zu-byte fragment (an incomplete write)",
				 (unsigned long long)last, tail);
	}
	if (f->rerr && !p->nbad)
		fctx_problem(x, p, "cannot be read: %s", strerror(-f->rerr));
	else if (f->hdr == HDR_FIXABLE && !p->nbad)
		fctx_problem(x, p, "header is damaged; the blocks "
			     "authenticate under a restored header");
	else
		fctx_problem(x, p, "%scorrupt block%s %s of %llu%s",
			     f->hdr == HDR_FIXABLE ? "header is damaged "
						     "(restorable); " : "",
			     p->nbad == 1 ? "" : "s", blocks,
			     (unsigned long long)f->nblocks, extra);
out:
	ffile_free(f);
}

static void seg_done(struct fctx *x, struct ffile *f, uint64_t *bad,
		     size_t nbad, int rc)
{
	bool last;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < nbad; i++)
		if (add_bad(&f->bad, &f->nbad, &f->capbad, bad[i]))
			rc = -ENOMEM;
	if (rc && rc != -EINTR && !f->rerr)
		f->rerr = rc;
	last = --f->pending == 0;
	pthread_mutex_unlock(&f->lock);
	if (last)
		finish_file(x, f);
}

static void push_seg(struct fqueue *q, struct fitem *it)
{
	pthread_mutex_lock(&q->lock);
	it->next = q->segs;
	q->segs = it;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
}

/* A file whose size says all: FP_SHORT (nothing readable) or the
 * FP_HDRONLY note. */
static void size_problem(struct fctx *x, struct ffile *f, enum fp_kind k,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void size_problem(struct fctx *x, struct ffile *f, enum fp_kind k,
			 const char *fmt, ...)
{
	struct fproblem *p = fproblem_new(k, f->dir, f->cname, f->pname);
	va_list ap;

	if (!p)
		return;
	p->dev = f->dev;
	p->ino = f->ino;
	p->size = f->size;
	p->all_bad = k == FP_SHORT;
	p->counted = k != FP_HDRONLY;
	va_start(ap, fmt);
	fctx_vproblem(x, p, fmt, ap);
	va_end(ap);
}

/* The first item of a file: header, then segments. Returns the range this
 * checker does itself in *b1 (from 0), or false when there is nothing
 * more to do with the blocks. */
static bool start_file(struct fctx *x, struct ffile *f, uint8_t *pt,
		       uint64_t *b1)
{
	uint8_t hdr[CONTENT_HEADER_LEN];
	ssize_t got;
	uint64_t nseg, seg;

	f->nblocks = check_nblocks(x, f->size);
	if (f->size == 0)
		return false;
	if (f->size < CONTENT_HEADER_LEN) {
		size_problem(x, f, FP_SHORT, "%llu bytes: shorter than a file "
			     "header (18 bytes)", (unsigned long long)f->size);
		return false;
	}
	if (f->size == CONTENT_HEADER_LEN) {
		/* gocryptfs reads it as empty (§3.1): a note only */
		size_problem(x, f, FP_HDRONLY, "header only (an interrupted "
			     "write): reads as empty%s", "");
		return false;
	}
	got = read_full(x, f->fd, hdr, sizeof(hdr), 0);
	if (got != (ssize_t)sizeof(hdr)) {
		f->rerr = got < 0 ? (int)got : -EIO;
		return false;
	}
	if (content_header_parse(hdr, f->id)) {
		fix_header(x, f, hdr, pt);
		if (f->hdr == HDR_LOST)
			return false;
	}
	seg = x->seg_blocks > 0 ? (uint64_t)x->seg_blocks : SEG_BLOCKS;
	nseg = (f->nblocks + seg - 1) / seg;
	if (nseg > 1) {
		pthread_mutex_lock(&f->lock);
		f->pending += (unsigned)(nseg - 1);
		pthread_mutex_unlock(&f->lock);
		for (uint64_t s = 1; s < nseg; s++) {
			struct fitem *it = calloc(1, sizeof(*it));

			if (!it) {
				/* do it here instead */
				seg_done(x, f, NULL, 0, 0);
				continue;
			}
			it->f = f;
			it->b0 = s * seg;
			it->b1 = it->b0 + seg;
			push_seg(x->q, it);
		}
	}
	*b1 = seg;
	return true;
}

static void *checker_main(void *arg)
{
	struct fqueue *q = arg;
	struct fctx *x = q->x;
	size_t chunk = CHUNK_BYTES / x->cbs;
	uint8_t *ct = malloc(chunk * x->cbs), *pt = malloc(chunk * 4096);
	uint64_t *bad = NULL;
	size_t nbad, capbad = 0;

	for (;;) {
		struct fitem *it;
		uint64_t b0, b1;
		int rc = 0;

		pthread_mutex_lock(&q->lock);
		while (!q->segs && !q->fhead &&
		       (!q->closed || q->starting))
			pthread_cond_wait(&q->more, &q->lock);
		if (q->segs) {
			it = q->segs;
			q->segs = it->next;
		} else if (q->fhead) {
			it = q->fhead;
			q->fhead = it->next;
			if (!q->fhead)
				q->ftail = NULL;
			q->nfiles--;
			q->starting++;
			pthread_cond_signal(&q->room);
		} else {
			pthread_mutex_unlock(&q->lock);
			break;
		}
		pthread_mutex_unlock(&q->lock);
		nbad = 0;
		b0 = it->b0;
		b1 = it->b1;
		if (!ct || !pt)
			rc = -ENOMEM;
		else if (it->first && !start_file(x, it->f, pt, &b1))
			b1 = b0;
		if (it->first) {
			pthread_mutex_lock(&q->lock);
			q->starting--;
			pthread_cond_broadcast(&q->more);
			pthread_mutex_unlock(&q->lock);
		}
		if (!rc && b0 < b1)
			rc = check_blocks(x, it->f->fd, it->f->size,
					  it->f->id, b0, b1, ct, pt, &bad,
					  &nbad, &capbad);
		seg_done(x, it->f, bad, nbad, rc);
		free(it);
	}
	if (pt)
		secure_zero(pt, chunk * 4096);
	free(ct);
	free(pt);
	free(bad);
	return NULL;
}

int queue_start(struct fctx *x)
{
	struct fqueue *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->room, NULL);
	q->x = x;
	x->q = q;
	for (unsigned i = 0; i < x->threads && i < 64; i++) {
		if (pthread_create(&q->th[i], NULL, checker_main, q))
			break;
		q->nth++;
	}
	if (!q->nth) {
		x->q = NULL;
		pthread_mutex_destroy(&q->lock);
		pthread_cond_destroy(&q->more);
		pthread_cond_destroy(&q->room);
		free(q);
		return -EAGAIN;
	}
	return 0;
}

int queue_file(struct fctx *x, int fd, struct fnode *dir, const char *cname,
	       const char *pname, dev_t dev, ino_t ino, uint64_t size)
{
	struct fqueue *q = x->q;
	struct ffile *f = calloc(1, sizeof(*f));
	struct fitem *it = calloc(1, sizeof(*it));

	if (!f || !it)
		goto nomem;
	f->fd = fd;
	f->cname = strdup(cname);
	f->pname = pname ? strdup(pname) : NULL;
	if (!f->cname || (pname && !f->pname)) {
		free(f->cname);
		free(f->pname);
		goto nomem;
	}
	f->dir = fnode_get(dir);
	f->dev = dev;
	f->ino = ino;
	f->size = size;
	f->pending = 1;
	pthread_mutex_init(&f->lock, NULL);
	it->f = f;
	it->first = true;
	__atomic_add_fetch(&x->bytes_seen, size, __ATOMIC_RELAXED);
	pthread_mutex_lock(&q->lock);
	while (q->nfiles >= QUEUE_FILES)
		pthread_cond_wait(&q->room, &q->lock);
	if (q->ftail)
		q->ftail->next = it;
	else
		q->fhead = it;
	q->ftail = it;
	q->nfiles++;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
	return 0;
nomem:
	free(f);
	free(it);
	close(fd);
	return -ENOMEM;
}

void queue_finish(struct fctx *x)
{
	struct fqueue *q = x->q;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < q->nth; i++)
		pthread_join(q->th[i], NULL);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->room);
	free(q);
	x->q = NULL;
}
