// SPDX-License-Identifier: MIT
/*
 * File contents of the reverse view (spec §5.4). A file's view is its
 * header, BE16(2) || fileID, and its plaintext blocks sealed with nonces
 * counted up from the block-0 IV; both values come from the file's cipher
 * path when the first handle opens it (and, for a hard-linked file, from the
 * first path it was ever opened through: kept for the rest of the mount).
 * A read encrypts just the blocks it covers: one pread of the plaintext and
 * one batch through content.h into a per-thread buffer, so a stream of
 * reads never holds more than a request's worth of any file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "fs/file.h"
#include "fs/rpriv.h"

#define PBS CONTENT_PLAIN_BS
#define HL CONTENT_HEADER_LEN
#define HL_BUCKETS 1024

struct rfs_hl {
	struct rfs_hl *next;
	dev_t dev;
	ino_t ino;
	uint8_t id[CONTENT_FILE_ID_LEN];
	uint8_t b0iv[CONTENT_IV_NONCE_LEN];
};

static size_t hl_hash(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 31)) % HL_BUCKETS;
}

/* The values of (dev, ino) if it was opened before with more than one
 * name, also once it has only one left (spec §5.4: for the rest of the
 * mount); else remember these if it has several. */
static void hl_pick(struct rfs *r, const struct stat *st, uint8_t *id,
		    uint8_t *b0iv)
{
	struct rfs_hl *e;
	size_t h = hl_hash(st->st_dev, st->st_ino);

	pthread_mutex_lock(&r->lock);
	if (!r->hl && st->st_nlink < 2)
		goto out;
	if (!r->hl) {
		r->hl = calloc(HL_BUCKETS, sizeof(*r->hl));
		if (!r->hl)
			goto out;
		r->hl_size = HL_BUCKETS;
	}
	for (e = r->hl[h]; e; e = e->next) {
		if (e->dev == st->st_dev && e->ino == st->st_ino) {
			memcpy(id, e->id, sizeof(e->id));
			memcpy(b0iv, e->b0iv, sizeof(e->b0iv));
			goto out;
		}
	}
	if (st->st_nlink < 2)
		goto out;
	e = malloc(sizeof(*e));
	if (!e)
		goto out; /* then this open's own values are used */
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	memcpy(e->id, id, sizeof(e->id));
	memcpy(e->b0iv, b0iv, sizeof(e->b0iv));
	e->next = r->hl[h];
	r->hl[h] = e;
out:
	pthread_mutex_unlock(&r->lock);
}

void rfile_fini(struct fs *fs)
{
	struct rfs *r = rfs_of(fs);

	for (size_t i = 0; r->hl && i < r->hl_size; i++) {
		while (r->hl[i]) {
			struct rfs_hl *e = r->hl[i];

			r->hl[i] = e->next;
			free(e);
		}
	}
	free(r->hl);
	r->hl = NULL;
}

/* File ID and block-0 IV of in from its cipher path. */
static int derive(struct fs *fs, struct inode *in, const struct stat *st)
{
	struct rentry e;
	int rc;

	rc = rentry_get(fs, in, &e);
	if (rc)
		return rc;
	rc = names_pathiv(in->id, e.cipher, strlen(e.cipher),
			  NAMES_PATHIV_FILEID);
	if (!rc)
		rc = names_pathiv(in->b0iv, e.cipher, strlen(e.cipher),
				  NAMES_PATHIV_BLOCK0);
	rentry_put(fs, &e);
	if (!rc)
		hl_pick(rfs_of(fs), st, in->id, in->b0iv);
	return rc;
}

int rfile_open(struct fs *fs, struct inode *in)
{
	struct stat st;
	int fd = -1, rc = 0;

	rwlock_wrlock(&in->rw);
	if (in->fd < 0) {
		fd = inode_open(fs, in, O_RDONLY);
		if (fd < 0) {
			rc = fd;
			goto out;
		}
		if (fstat(fd, &st) < 0) {
			rc = -errno;
			goto out;
		}
		/* the config is shown as it is */
		in->id_valid = !rdir_is_conf(fs, in);
		if (in->id_valid) {
			rc = derive(fs, in, &st);
			if (rc)
				goto out;
		}
		in->fd = fd;
		in->fd_rw = false;
		fd = -1;
	}
	in->fd_refs++;
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		in->id_valid = false;
	rwlock_unlock(&in->rw);
	return rc;
}

/* One buffer per thread for the plaintext and the view of a request,
 * grown as needed and freed when the thread ends. */
struct scratch {
	uint8_t *p;
	size_t cap;
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *arg)
{
	struct scratch *s = arg;

	free(s->p);
	free(s);
}

static void scratch_init(void)
{
	if (pthread_key_create(&scratch_key, scratch_free))
		abort();
}

static uint8_t *scratch_get(size_t len)
{
	struct scratch *s;
	uint8_t *p;

	pthread_once(&scratch_once, scratch_init);
	s = pthread_getspecific(scratch_key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || pthread_setspecific(scratch_key, s)) {
			free(s);
			return NULL;
		}
	}
	if (s->cap < len) {
		p = malloc(len);
		if (!p)
			return NULL;
		free(s->p);
		s->p = p;
		s->cap = len;
	}
	return s->p;
}

/* View bytes [off, off + size) of an encrypted file: the blocks the range
 * touches, and the header if it starts there. */
static int read_view(struct fs *fs, struct inode *in, size_t size,
		     uint64_t off, const uint8_t **data, size_t *len)
{
	uint64_t cbs = fs->cbs, last = off + size - 1, b0, b1, boff;
	size_t n, got, nb, total, skip, oh = cbs - PBS;
	uint8_t *buf, *pt, *ct;
	int rc;

	b0 = off < HL ? 0 : (off - HL) / cbs;
	b1 = last < HL ? 0 : (last - HL) / cbs;
	n = (size_t)(b1 - b0 + 1);
	/* view part (header + n blocks), then the plaintext */
	buf = scratch_get(HL + n * cbs + n * PBS);
	if (!buf)
		return -ENOMEM;
	ct = buf + HL;
	pt = buf + HL + n * cbs;
	rc = file_pread_full(in->fd, pt, n * PBS, b0 * PBS, &got);
	if (rc || !got)
		return rc; /* past the end (or an empty file: empty view) */
	nb = (got + PBS - 1) / PBS;
	rc = content_encrypt_blocks_iv(fs->content, ct, pt, got, b0, in->id,
				       in->b0iv);
	if (rc) {
		log_warn("inode %ju: encrypting blocks failed",
			 (uintmax_t)in->ino);
		return -EIO;
	}
	total = got + nb * oh;
	if (b0 == 0) {
		content_header_make(buf, in->id);
		ct = buf;
		total += HL;
		boff = 0;
	} else {
		boff = HL + b0 * cbs;
	}
	skip = (size_t)(off - boff);
	if (skip < total) {
		*data = ct + skip;
		*len = total - skip < size ? total - skip : size;
	}
	return 0;
}

/* The config: its own bytes. */
static int read_raw(struct inode *in, size_t size, uint64_t off,
		    const uint8_t **data, size_t *len)
{
	uint8_t *buf = scratch_get(size);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = file_pread_full(in->fd, buf, size, off, len);
	*data = buf;
	return rc;
}

int rfile_read(struct fs *fs, struct inode *in, size_t size, uint64_t off,
	       const uint8_t **data, size_t *len)
{
	int rc;

	*len = 0;
	*data = NULL;
	if (!size)
		return 0;
	rwlock_rdlock(&in->rw);
	if (in->fd < 0)
		rc = -EBADF;
	else if (!in->id_valid)
		rc = read_raw(in, size, off, data, len);
	else
		rc = read_view(fs, in, size, off, data, len);
	rwlock_unlock(&in->rw);
	return rc;
}

/* spec §5.4: gocryptfs reports the plaintext's holes at ciphertext offsets
 * that are wrong (cp then copies a corrupt file); the view has no holes. */
int rfile_lseek(struct fs *fs, struct inode *in, uint64_t off, int whence,
		uint64_t *res)
{
	struct stat st;
	uint64_t size;
	int rc = 0;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	rwlock_rdlock(&in->rw);
	if (in->fd < 0) {
		rc = -EBADF;
	} else if (fstat(in->fd, &st) < 0) {
		rc = -errno;
	} else {
		size = (uint64_t)st.st_size;
		if (in->id_valid)
			size = content_plain_to_cipher_size(fs->content, size);
		if (off >= size)
			rc = -ENXIO;
		else
			*res = whence == SEEK_DATA ? off : size;
	}
	rwlock_unlock(&in->rw);
	return rc;
}
