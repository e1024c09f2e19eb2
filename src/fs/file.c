// SPDX-License-Identifier: MIT
/*
 * Plaintext I/O over the encrypted block layout (spec §3). One backing fd per
 * inode is shared by all its FUSE handles (opened O_RDWR when any handle
 * writes, because partial writes must read). The per-inode rwlock lets reads
 * run in parallel and serialises every read-modify-write, truncate and
 * header creation. Each request does one pread or pwrite of the whole
 * ciphertext range, with one buffer per request.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"
#include "common/secmem.h"
#include "fs/file.h"
#include "fs/inode.h"
#include "fs/shared.h"

#define PBS CONTENT_PLAIN_BS
#define HL CONTENT_HEADER_LEN

static const uint8_t zero_block[PBS];

int file_pread_full(int fd, void *buf, size_t len, uint64_t off,
		    size_t *got)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, (const uint8_t *)buf + done, len - done,
				   (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)r;
	}
	return 0;
}

/* Ask the backing filesystem to flush fd's file as a close would (NFS, sshfs
 * and MooseFS then send what was written to the server): close a dup. */
static int flush_backing(int fd)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (d < 0 || close(d) < 0)
		return -errno;
	return 0;
}

/* Reserve backing space so that a full disk fails before we overwrite. */
static int prealloc(struct fs *fs, int fd, uint64_t off, uint64_t len)
{
	if (fs->opt.noprealloc || !len)
		return 0;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0) {
		if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
			return -errno;
	}
	return 0;
}

/* The backing file's size, known while in->fd is the only fd that changes
 * it (never with -sharedstorage, where other mounts change it): a stat of a
 * network or FUSE backing can be a round trip, and makes mfsmount write out
 * what it has gathered (in partial MooseFS blocks, which its chunkserver
 * must read back to checksum). Changes through another fd forget it. rw held
 * for writing, or for reading by a caller that does not let it be set
 * (cipher_size). */
static int backing_size(struct fs *fs, struct inode *in, int fd,
			uint64_t *size)
{
	struct stat st;

	if (in->size_known && fd == in->fd) {
		*size = in->bsize;
		return 0;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	*size = (uint64_t)st.st_size;
	if (fd == in->fd && !fs->opt.sharedstorage) {
		in->bsize = *size;
		in->size_known = true;
	}
	return 0;
}

/* fd's file is now size bytes long. */
static void size_is(struct inode *in, int fd, uint64_t size)
{
	if (fd == in->fd && in->size_known)
		in->bsize = size;
	else
		in->size_known = false;
}

/* fd's file now reaches at least end. */
static void size_reaches(struct inode *in, int fd, uint64_t end)
{
	if (fd == in->fd && in->size_known) {
		if (end > in->bsize)
			in->bsize = end;
	} else {
		in->size_known = false;
	}
}

/* Cut fd's file back to size after a failed change; false (errno set, the
 * size no longer known) if even that fails. */
static bool cut_back(struct inode *in, int fd, uint64_t size)
{
	if (ftruncate(fd, (off_t)size) == 0) {
		size_is(in, fd, size);
		return true;
	}
	in->size_known = false;
	return false;
}

/* Write len bytes at coff, at or past the end, size, of the backing file;
 * cut it back to size if that fails. */
static int append_or_undo(struct inode *in, int fd, const uint8_t *ct,
			  size_t len, uint64_t coff, uint64_t size)
{
	int rc = pwrite_full(fd, ct, len, coff);

	if (!rc) {
		size_reaches(in, fd, coff + len);
	} else if (!cut_back(in, fd, size)) {
		log_warn("cannot undo a failed append: %s", strerror(errno));
	}
	return rc;
}

/* A write that overwrites [coff, size) and goes on past the end, size, of
 * the backing file (tar writes 10 KiB at a time, so every other write
 * starts inside the partial last block). The part past the end goes
 * first, cut back if it fails, and then the old bytes are overwritten: a
 * full disk can fail the first step only, which leaves the old bytes as
 * they were; if the second still fails (an overwrite that needs space),
 * the first is undone too. The old bytes are reserved first (prealloc),
 * except when they are our kept tail on a backing whose overwrites need no
 * new space (fs->in_place): reserving them there would make ext4 allocate
 * that block at once, away from the rest of the file, which it allocates
 * later at writeback -- ciphertext files of five extents where the
 * plaintext had one, and rm -rf of them twice as slow on a disk that
 * discards freed blocks. Writing everything in one go after a reservation
 * would leave a torn block past the old end whenever the reservation
 * cannot be made (-noprealloc, a backing without fallocate). */
static int write_across_end(struct fs *fs, struct inode *in, int fd,
			    const uint8_t *ct, size_t len, uint64_t coff,
			    uint64_t size, bool ours)
{
	size_t old = (size_t)(size - coff);
	int rc = 0;

	if (!(ours && fs->in_place))
		rc = prealloc(fs, fd, coff, old);
	if (!rc)
		rc = append_or_undo(in, fd, ct + old, len - old, size, size);
	if (rc)
		return rc;
	rc = pwrite_full(fd, ct, old, coff);
	if (rc)
		cut_back(in, fd, size);
	return rc;
}

/* Write ciphertext at coff so that a full disk never destroys what was
 * there: an overwrite in place reserves its space first (prealloc), while a
 * write wholly past the end of the backing file needs no reservation (on
 * tmpfs it would cost a second pass over the new pages): if it fails, the
 * file is cut back to its old size. reserved: the space is reserved
 * already (see reserve_and_ack). ours: what the write overwrites is the
 * partial last block as our last write left it (the kept tail), so not a
 * hole (see write_across_end). */
static int write_or_undo(struct fs *fs, struct inode *in, int fd,
			 const uint8_t *ct, size_t len, uint64_t coff,
			 bool reserved, bool ours)
{
	uint64_t size = 0;
	int rc;

	if (!reserved) {
		rc = backing_size(fs, in, fd, &size);
		if (rc)
			return rc;
	}
	if (!reserved && coff < size && coff + len > size)
		return write_across_end(fs, in, fd, ct, len, coff, size, ours);
	if (reserved || coff < size) {
		rc = reserved ? 0 : prealloc(fs, fd, coff, len);
		if (!rc)
			rc = pwrite_full(fd, ct, len, coff);
		if (rc)
			in->size_known = false;
		else
			size_reaches(in, fd, coff + len);
		return rc;
	}
	return append_or_undo(in, fd, ct, len, coff, size);
}

/* Load the file ID. Returns 1 (ID valid), 0 (empty or header-only file) or
 * -errno. Caller holds in->rw (either mode). */
static int load_id(struct inode *in, int fd)
{
	uint8_t hdr[HL + 1];
	size_t got;
	int rc;

	pthread_mutex_lock(inode_hdr_lock(in));
	if (in->id_valid) {
		rc = 1;
		goto out;
	}
	rc = file_pread_full(fd, hdr, sizeof(hdr), 0, &got);
	if (rc)
		goto out;
	if (got <= HL) {
		/* spec §3.1: a header-only file counts as empty. */
		rc = 0;
		goto out;
	}
	if (content_header_parse(hdr, in->id)) {
		log_warn("inode %ju: corrupt file header", (uintmax_t)in->ino);
		rc = -EIO;
		goto out;
	}
	in->id_valid = true;
	rc = 1;
out:
	pthread_mutex_unlock(inode_hdr_lock(in));
	return rc;
}

/* Write a fresh header (new file ID) at offset 0. rw held for writing. */
static int new_header(struct fs *fs, struct inode *in, int fd)
{
	uint8_t hdr[HL];
	int rc;

	content_header_new(fs->content, hdr, in->id);
	rc = write_or_undo(fs, in, fd, hdr, HL, 0, false, false);
	in->id_valid = !rc;
	return rc;
}

static int cipher_size(int fd, uint64_t *csize)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*csize = (uint64_t)st.st_size;
	return 0;
}

/* Decrypt block b into out (PBS bytes; bytes past the block's end are
 * zeroed). *plen gets the plaintext length (0 past EOF). */
static int read_block(struct fs *fs, struct inode *in, int fd, uint64_t b,
		      uint8_t *out, size_t *plen)
{
	uint8_t ct[CONTENT_MAX_CIPHER_BS];
	uint64_t bad = 0;
	size_t got;
	int rc;

	*plen = 0;
	memset(out, 0, PBS);
	rc = file_pread_full(fd, ct, fs->cbs,
			content_block_cipher_off(fs->content, b), &got);
	if (rc || !got)
		return rc;
	rc = content_decrypt_blocks(fs->content, out, plen, ct, got, b, in->id,
				    &bad);
	if (rc == -EBADMSG) {
		log_warn("inode %ju: block %ju is corrupt", (uintmax_t)in->ino,
			 (uintmax_t)bad);
		return -EIO;
	}
	return rc;
}

/* The plaintext of a file's partial last block, as the last write through
 * in->fd left it. A program that writes 10 KiB at a time (tar) starts every
 * other write inside that block: merging with the copy here instead of
 * reading and decrypting the block again saves a read of the backing file,
 * a round trip to the server on a network backing. Used and changed under
 * in->rw held for writing, for writes through in->fd only (never with
 * -sharedstorage, where other mounts change the file); len 0: nothing
 * kept. The file ID guards against a file made anew (new header). */
struct file_tail {
	uint64_t block;
	size_t len;
	uint8_t id[CONTENT_FILE_ID_LEN];
	uint8_t pt[PBS];
};

static bool tail_usable(const struct fs *fs, const struct inode *in, int fd)
{
	return fd == in->fd && !fs->opt.sharedstorage;
}

/* Block b of a file of plaintext size S, if kept: PBS bytes, zeros after
 * the data. */
static const uint8_t *tail_find(const struct fs *fs, const struct inode *in,
				int fd, uint64_t b, uint64_t S)
{
	const struct file_tail *t = in->tail;

	if (!t || !t->len || !tail_usable(fs, in, fd) || !in->id_valid ||
	    t->block != b || b * PBS + t->len != S ||
	    memcmp(t->id, in->id, sizeof(t->id)))
		return NULL;
	return t->pt;
}

/* Block b, len (< PBS) bytes at pt, is now the file's last block. */
static void tail_keep(const struct fs *fs, struct inode *in, int fd,
		      uint64_t b, const uint8_t *pt, size_t len)
{
	struct file_tail *t = in->tail;

	if (!tail_usable(fs, in, fd))
		return;
	if (!t) {
		t = malloc(sizeof(*t));
		if (!t)
			return;
		in->tail = t;
	}
	t->block = b;
	t->len = len;
	memcpy(t->id, in->id, sizeof(t->id));
	memcpy(t->pt, pt, len);
	memset(t->pt + len, 0, PBS - len);
}

static void tail_forget(struct inode *in)
{
	if (in->tail)
		in->tail->len = 0;
}

void file_forget_tail(struct inode *in)
{
	if (in->tail) {
		secure_zero(in->tail, sizeof(*in->tail));
		free(in->tail);
		in->tail = NULL;
	}
}

/* Encrypt and write [off, off+len) given plaintext size S; the header
 * exists. A partly covered first or last block is read, merged and
 * re-encrypted; gaps inside a block become zeros. rw held for writing. */
static int write_blocks_hdr(struct fs *fs, struct inode *in, int fd,
			    const uint8_t *data, size_t len, uint64_t off,
			    uint64_t S, const uint8_t *hdr, bool reserved)
{
	uint64_t b0 = off / PBS, b1 = (off + len - 1) / PBS;
	uint64_t end = off + len, pend, coff;
	size_t n = (size_t)(b1 - b0 + 1), head = (size_t)(off % PBS);
	size_t ptlen, ctlen, plen;
	bool head_old = head && b0 * PBS < S;
	bool tail_old = (end % PBS) && end < S;
	uint8_t *ptbuf = NULL, *ct = NULL;
	const uint8_t *pt = data, *kept = NULL;
	bool ours = false;
	int rc = 0;

	pend = (b1 + 1) * PBS;
	if (S < pend)
		pend = S;
	if (end > pend)
		pend = end;
	ptlen = (size_t)(pend - b0 * PBS);

	if (head || tail_old) {
		ptbuf = malloc(n * PBS);
		if (!ptbuf)
			return -ENOMEM;
		if (head_old)
			kept = tail_find(fs, in, fd, b0, S);
		ours = kept != NULL;
		if (kept) {
			memcpy(ptbuf, kept, PBS);
		} else if (head_old) {
			rc = read_block(fs, in, fd, b0, ptbuf, &plen);
			if (rc)
				goto out;
		} else if (head) {
			memset(ptbuf, 0, PBS);
		}
		if (tail_old && (n > 1 || !head_old)) {
			kept = tail_find(fs, in, fd, b1, S);
			if (kept)
				memcpy(ptbuf + (n - 1) * PBS, kept, PBS);
			else
				rc = read_block(fs, in, fd, b1,
						ptbuf + (n - 1) * PBS, &plen);
			if (rc)
				goto out;
		}
		memcpy(ptbuf + head, data, len);
		pt = ptbuf;
	}

	ctlen = (size_t)(content_plain_to_cipher_size(fs->content, ptlen) - HL);
	ct = malloc(HL + ctlen);
	if (!ct) {
		rc = -ENOMEM;
		goto out;
	}
	rc = content_encrypt_blocks(fs->content, ct + HL, pt, ptlen, b0,
				    in->id);
	if (rc)
		goto out;
	coff = content_block_cipher_off(fs->content, b0);
	if (hdr) {
		/* A new file: header and first blocks in one write. */
		memcpy(ct, hdr, HL);
		coff = 0;
		ctlen += HL;
	}
	tail_forget(in);
	rc = write_or_undo(fs, in, fd, ct + (hdr ? 0 : HL), ctlen, coff,
			   reserved, ours);
	/* pend is the file's new end when block b1 is its last block. */
	if (!rc && pend % PBS && pend == (end > S ? end : S))
		tail_keep(fs, in, fd, b1, pt + (n - 1) * PBS,
			  (size_t)(pend - b1 * PBS));
out:
	free(ptbuf);
	free(ct);
	return rc;
}

static int write_blocks(struct fs *fs, struct inode *in, int fd,
			const uint8_t *data, size_t len, uint64_t off,
			uint64_t S)
{
	return write_blocks_hdr(fs, in, fd, data, len, off, S, NULL, false);
}

/* Make sure the header exists and the ID is loaded; *S gets the plaintext
 * size. csize: the backing file's size. rw held for writing. */
static int prepare_write(struct fs *fs, struct inode *in, int fd,
			 uint64_t csize, uint64_t *S)
{
	int rc;

	if (csize <= HL) {
		*S = 0;
		return new_header(fs, in, fd);
	}
	*S = content_cipher_to_plain_size(fs->content, csize, NULL);
	rc = load_id(in, fd);
	if (rc == 0)
		rc = new_header(fs, in, fd);
	return rc < 0 ? rc : 0;
}

/* spec §3.9: before writing past the block holding the last byte, pad that
 * partial block with zeros to a full block. */
static int pad_last_block(struct fs *fs, struct inode *in, int fd,
			  uint64_t *S, uint64_t target_block)
{
	int rc;

	if (*S % PBS == 0 || target_block <= *S / PBS)
		return 0;
	rc = write_blocks(fs, in, fd, zero_block, PBS - *S % PBS, *S, *S);
	if (!rc)
		*S += PBS - *S % PBS;
	return rc;
}

/* Free space a backing with delayed allocation must have, beyond a write,
 * for reserve_and_ack to answer the write before it is written. */
#define ACK_ROOM (256u << 20)

/* Whether fd's filesystem has len + ACK_ROOM bytes free for an unprivileged
 * writer (root may use more). */
static bool backing_has_room(int fd, uint64_t len)
{
	struct statvfs sv;

	return fstatvfs(fd, &sv) == 0 &&
	       (uint64_t)sv.f_bavail * sv.f_frsize >= len + ACK_ROOM;
}

/* A write of whole blocks at or past the end S of a file whose size is a
 * whole number of blocks touches no existing block. If the backing file can
 * be extended over its ciphertext with the space reserved (fallocate mode
 * 0, so that every later stat sees the new size), acknowledge it now: the
 * caller still holds in->rw for writing until the blocks are written, so
 * every later request on the file waits for them, and the reservation means
 * a full disk can no longer fail them. A crash before they are written
 * leaves whole blocks of zeros, which read as holes (spec §3.4).
 * On a network backing (sshfs, NFS, MooseFS answer a write before their
 * server has it, and report its failure at close or fsync) it is answered
 * now without a reservation: a failure is reported at close or fsync too
 * (file_flush), and the writer's next write overlaps with this one's trip
 * to the server.
 * Not after a reservation on a filesystem with delayed allocation (ext4,
 * xfs): there the reservation allocates the blocks at once, apart from
 * those of the earlier writes still in the page cache, and in runs that the
 * allocator aligns with gaps between them (a 20 MiB file copied in 128 KiB
 * writes ended in 53 extents on ext4, one without). There the file is
 * extended over a hole instead (ftruncate: no blocks, so the write's blocks
 * are allocated with the earlier ones) and the write answered while the
 * backing has ACK_ROOM free beyond it and no disk quota is on
 * (fs->ack_on_room); *grown tells the caller to cut the file back if the
 * write then fails. What can fail it is another writer taking 256 MiB in
 * the moment between the check and the write, an I/O error or a fault,
 * reported at fsync (file_fsync) and logged. Nearer a full disk every write
 * is answered when written, with its ENOSPC. The writer's next write
 * overlaps with this one's copy into the page cache (a 1 GiB dd to ext4
 * took 25% less time). */
static bool reserve_and_ack(struct fs *fs, struct inode *in, int fd,
			    uint64_t off, size_t len, uint64_t S,
			    struct file_ack *ack, bool *grown)
{
	uint64_t coff, cend;

	*grown = false;
	if (!ack || off < S || S % PBS || off % PBS || len % PBS)
		return false;
	if (!fs->local) {
		ack->fn(ack->arg);
		ack->done = true;
		return false; /* written as without: undone if it fails */
	}
	if (fs->opt.noprealloc && !fs->ack_on_room)
		return false;
	coff = content_block_cipher_off(fs->content, off / PBS);
	cend = content_plain_to_cipher_size(fs->content, off + len);
	if (fs->ack_on_room) {
		if (!backing_has_room(fd, cend - coff) ||
		    ftruncate(fd, (off_t)cend) < 0)
			return false;
		*grown = true;
		atomic_fetch_add(&fs->acks_on_room, 1);
	} else {
		if (fs->delalloc ||
		    fallocate(fd, 0, (off_t)coff, (off_t)(cend - coff)) < 0)
			return false; /* the synchronous path: its ENOSPC */
		*grown = true; /* mode 0 extends the file */
		atomic_fetch_add(&fs->acks_reserved, 1);
	}
	size_reaches(in, fd, cend);
	ack->fn(ack->arg);
	ack->done = true;
	return true;
}

/* The partial last block's ciphertext as it was before pad_last_block,
 * to put back if the write it was padded for fails: a failed write leaves
 * the file as it was, not longer by the padding. */
struct pad_undo {
	uint8_t ct[PBS + 64];
	size_t len;	  /* 0: nothing padded, or nothing to put back */
	uint64_t off;	  /* where the block's ciphertext starts */
	uint64_t csize;	  /* the backing file's size before */
	uint64_t padded;  /* its size after the padding, 0: not padded */
};

static int pad_tail_undoably(struct fs *fs, struct inode *in, int fd,
			     uint64_t *S, uint64_t target_block,
			     uint64_t csize, struct pad_undo *u)
{
	size_t got = 0;
	int rc;

	u->len = 0;
	u->padded = 0;
	if (*S % PBS == 0 || target_block <= *S / PBS)
		return 0;
	u->off = content_block_cipher_off(fs->content, *S / PBS);
	u->csize = csize;
	if (u->off < csize && csize - u->off <= sizeof(u->ct) &&
	    file_pread_full(fd, u->ct, (size_t)(csize - u->off), u->off,
			    &got) == 0 &&
	    got == csize - u->off)
		u->len = got;
	rc = pad_last_block(fs, in, fd, S, target_block);
	if (rc)
		u->len = 0;
	else
		u->padded = content_plain_to_cipher_size(fs->content, *S);
	return rc;
}

static void unpad_tail(struct inode *in, int fd, const struct pad_undo *u)
{
	tail_forget(in);
	if (pwrite_full(fd, u->ct, u->len, u->off) == 0 &&
	    ftruncate(fd, (off_t)u->csize) == 0) {
		size_is(in, fd, u->csize);
		return;
	}
	in->size_known = false;
	log_warn("cannot undo the padding of a failed write: %s",
		 strerror(errno));
}

/* Whether a file of off + len plaintext bytes would need a backing file
 * larger than off_t can address (-EFBIG, as gocryptfs answers: the backing
 * call would refuse the negative offset with EINVAL). */
static bool too_big(struct fs *fs, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	return end < off || end > INT64_MAX ||
	       content_plain_to_cipher_size(fs->content, end) > INT64_MAX;
}

static int write_locked(struct fs *fs, struct inode *in, int fd,
			const uint8_t *data, size_t len, uint64_t off,
			bool append, struct file_ack *ack)
{
	struct pad_undo undo = { .len = 0 };
	uint8_t hdr[HL];
	uint64_t S, csize = 0;
	bool reserved, grown;
	int rc;

	if (!len)
		return 0;
	rc = backing_size(fs, in, fd, &csize);
	if (rc)
		return rc;
	if (csize <= HL && (append || off < PBS)) {
		/* Empty (or header-only) file written in block 0: the new
		 * header goes out with the data (spec §3.1: new file ID). */
		content_header_new(fs->content, hdr, in->id);
		in->id_valid = true;
		rc = write_blocks_hdr(fs, in, fd, data, len, append ? 0 : off,
				      0, hdr, false);
		if (rc)
			in->id_valid = false;
		return rc;
	}
	rc = prepare_write(fs, in, fd, csize, &S);
	if (rc)
		return rc;
	if (append)
		off = S;
	if (too_big(fs, off, len))
		return -EFBIG;
	rc = pad_tail_undoably(fs, in, fd, &S, off / PBS, csize, &undo);
	if (rc)
		return rc;
	reserved = reserve_and_ack(fs, in, fd, off, len, S, ack, &grown);
	rc = write_blocks_hdr(fs, in, fd, data, len, off, S, NULL, reserved);
	if (rc && undo.len)
		unpad_tail(in, fd, &undo);
	/* A padded block whose old ciphertext could not be kept stays
	 * padded: cutting into it would lose its data. */
	if (rc && grown)
		cut_back(in, fd, undo.padded && !undo.len ? undo.padded : csize);
	return rc;
}

static int truncate_locked(struct fs *fs, struct inode *in, int fd,
			   uint64_t size)
{
	struct pad_undo undo = { .len = 0 };
	uint8_t blk[PBS];
	uint64_t csize = 0, S, b, c;
	size_t plen;
	int rc;

	if (too_big(fs, size, 0))
		return -EFBIG;
	tail_forget(in);
	rc = backing_size(fs, in, fd, &csize);
	if (rc)
		return rc;
	if (size == 0) {
		if (ftruncate(fd, 0) < 0)
			return -errno;
		size_is(in, fd, 0);
		in->id_valid = false;
		return 0;
	}
	S = content_cipher_to_plain_size(fs->content, csize, NULL);
	if (size == S)
		return 0;
	if (size < S) {
		rc = load_id(in, fd);
		if (rc <= 0)
			return rc ? rc : -EIO;
		if (size % PBS == 0) {
			c = content_plain_to_cipher_size(fs->content, size);
			if (ftruncate(fd, (off_t)c) < 0)
				return -errno;
			size_is(in, fd, c);
			return 0;
		}
		/* spec §3.9: decrypt the new last block, cut, rewrite it. The
		 * shorter block goes over the old one first, where its space
		 * is allocated already, and the file is cut after it: a write
		 * that fails (a full disk on a backing that copies on write, a
		 * server's quota) leaves the file as it was instead of cut
		 * short of the block's data. */
		b = size / PBS;
		rc = read_block(fs, in, fd, b, blk, &plen);
		if (rc)
			return rc;
		rc = write_blocks(fs, in, fd, blk, (size_t)(size - b * PBS),
				  b * PBS, b * PBS);
		secure_zero(blk, sizeof(blk));
		if (rc)
			return rc;
		c = content_plain_to_cipher_size(fs->content, size);
		if (ftruncate(fd, (off_t)c) < 0) {
			rc = -errno;
			tail_forget(in); /* the old blocks after it stay */
			in->size_known = false;
			return rc;
		}
		size_is(in, fd, c);
		return 0;
	}
	/* Grow; a failure leaves the file as it was (see pad_undo). */
	rc = prepare_write(fs, in, fd, csize, &S);
	if (rc)
		return rc;
	rc = pad_tail_undoably(fs, in, fd, &S,
			       size % PBS ? (size - 1) / PBS : size / PBS,
			       csize, &undo);
	if (rc)
		return rc;
	if (size % PBS == 0) {
		c = content_plain_to_cipher_size(fs->content, size);
		rc = ftruncate(fd, (off_t)c) < 0 ? -errno : 0;
		if (!rc)
			size_is(in, fd, c);
	} else {
		rc = write_blocks(fs, in, fd, zero_block, 1, size - 1, S);
	}
	if (rc && undo.len)
		unpad_tail(in, fd, &undo);
	return rc;
}

/* Open the backing file of in for reading and writing (or reading only when
 * !want_w and rw is refused). */
static int open_backing(struct fs *fs, struct inode *in, bool want_w,
			bool *rw)
{
	char proc[64];
	int fd;

	*rw = true;
	if (in->fd >= 0) {
		/* Re-open what we hold (works for unlinked files too). */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", in->fd);
		fd = open(proc, O_RDWR | O_CLOEXEC);
		if (fd < 0 && !want_w && (errno == EACCES || errno == EROFS)) {
			*rw = false;
			fd = open(proc, O_RDONLY | O_CLOEXEC);
		}
		return fd < 0 ? -errno : fd;
	}
	fd = inode_open(fs, in, O_RDWR);
	if ((fd == -EACCES || fd == -EROFS) && !want_w) {
		*rw = false;
		fd = inode_open(fs, in, O_RDONLY);
	}
	return fd;
}

/* -sharedstorage (shared.c): a change goes through a backing fd of its own,
 * opened for it and closed after it, since MooseFS keeps showing the size
 * that a client wrote through an open file, whatever other clients do,
 * until that file is closed. It locks the whole file, or (len > 0) what a
 * write of len bytes at off needs; the file ID is read anew under the
 * lock. On success *fd is the locked fd, for change_end. */
static int change_begin(struct fs *fs, struct inode *in, int *fd,
			uint64_t off, size_t len, bool append)
{
	bool rw;
	int rc;

	*fd = open_backing(fs, in, true, &rw);
	if (*fd < 0)
		return *fd;
	rc = len ? shared_lock_write(fs, *fd, off, len, append) :
		   shared_lock_whole(fs, *fd, true, off);
	if (rc) {
		close(*fd);
		*fd = -1;
		return rc;
	}
	in->id_valid = false;
	return 0;
}

/* The end of a change that returned rc: flush the backing file as a close
 * would, so that the next holder of the lock, wherever it runs, reads what
 * was written, then unlock and close. Returns rc or the first error. */
static int change_end(int fd, int rc)
{
	int urc = flush_backing(fd);

	shared_unlock(fd);
	if (close(fd) < 0 && !urc)
		urc = -errno;
	return rc ? rc : urc;
}

/* truncate_locked on fd, or with -sharedstorage under the backing file's
 * lock. rw held for writing. */
static int truncate_any(struct fs *fs, struct inode *in, int fd,
			uint64_t size)
{
	int rc;

	if (!fs->opt.sharedstorage)
		return truncate_locked(fs, in, fd, size);
	rc = change_begin(fs, in, &fd, size, 0, false);
	if (rc)
		return rc;
	return change_end(fd, truncate_locked(fs, in, fd, size));
}

void file_attach(struct fs *fs, struct inode *in, int fd, bool rw)
{
	(void)fs;
	rwlock_wrlock(&in->rw);
	if (in->fd >= 0 && (in->fd_rw || !rw)) {
		close(fd);
	} else {
		if (in->fd >= 0)
			close(in->fd);
		in->fd = fd;
		in->size_known = false;
		in->fd_rw = rw;
		file_forget_tail(in);
	}
	in->fd_refs++;
	rwlock_unlock(&in->rw);
}

/* What file_open compares to see whether a backing file changed: ctime and
 * mtime change with every write, truncate or attribute change. Never 0. */
static uint64_t stamp_of(const struct stat *st)
{
	uint64_t h;

	h = (uint64_t)st->st_ctim.tv_sec * 1000000000u +
	    (uint64_t)st->st_ctim.tv_nsec;
	h ^= ((uint64_t)st->st_mtim.tv_sec * 1000000000u +
	      (uint64_t)st->st_mtim.tv_nsec) * 0x9e3779b97f4a7c15u;
	h ^= (uint64_t)st->st_size * 0xc2b2ae3d27d4eb4fu;
	return h ? h : 1;
}

static uint64_t cache_stamp(int fd)
{
	struct stat st;

	return fstat(fd, &st) < 0 ? 0 : stamp_of(&st);
}

void file_restamp(struct fs *fs, struct inode *in, const struct stat *st)
{
	if (fs->sole_writer && in->type == S_IFREG)
		in->kc_stamp = stamp_of(st);
}

/* Whether the fd held for in still is the file its name shows. A change
 * behind the mount's back (not supported, but it must not make us serve
 * the old file or its pages) may have put another file there while the
 * kernel keeps the name for long. A file unlinked through us has no name
 * to compare. rw held. */
static bool fd_still_named(struct fs *fs, struct inode *in)
{
	struct stat st;
	struct loc l;
	bool same = true;
	int pfd;

	if (loc_get(fs, in, &l))
		return true;
	pfd = dirfd_get(fs, l.parent);
	if (pfd >= 0) {
		if (fstatat(pfd, l.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			same = errno != ENOENT;
		else
			same = st.st_dev == in->dev && st.st_ino == in->ino;
		dirfd_put(fs, l.parent);
	}
	loc_put(fs, &l);
	return same;
}

/* After a change through fd that returned rc: the file as we leave it, or
 * none after a failure (the kernel's pages may hold what did not reach the
 * backing file). rw held for writing. */
static void renew_stamp(struct fs *fs, struct inode *in, int fd, int rc)
{
	if (fs->sole_writer)
		in->kc_stamp = rc || fd < 0 ? 0 : cache_stamp(fd);
}

/* -sharedstorage: the open file held for in may no longer be the one at its
 * name: another mount may have renamed it away and made a new file there,
 * which a backing such as sshfs shows with the same inode number (it numbers
 * by path). A fresh open reads and writes the file now at the name, as it
 * would on gocryptfs, so the fd is opened anew by name for every open (the
 * handles still open go on with the new fd). An inode whose names are all
 * gone keeps its fd. rw held for writing. Returns 0 or -errno. */
static int reopen_by_name(struct fs *fs, struct inode *in, bool want_w)
{
	bool rw = true;
	int fd;

	fd = inode_open(fs, in, O_RDWR);
	if ((fd == -EACCES || fd == -EROFS) && !want_w) {
		rw = false;
		fd = inode_open(fs, in, O_RDONLY);
	}
	if (fd == -ENOENT || fd == -ESTALE)
		return 0;
	if (fd < 0)
		return fd;
	close(in->fd);
	in->fd = fd;
	in->fd_rw = rw;
	in->size_known = false;
	in->id_valid = false;
	file_forget_tail(in);
	return 0;
}

int file_open(struct fs *fs, struct inode *in, int flags, bool *keep_cache,
	      bool *changed)
{
	bool want_w = (flags & O_ACCMODE) != O_RDONLY, rw;
	uint64_t now;
	int fd, rc = 0;

	*keep_cache = *changed = false;
	rwlock_wrlock(&in->rw);
	if (in->fd >= 0 && fs->sole_writer && !fd_still_named(fs, in)) {
		rc = -ESTALE; /* the kernel looks the name up again */
		goto out;
	}
	if (in->fd >= 0 && fs->opt.sharedstorage) {
		rc = reopen_by_name(fs, in, want_w || in->fd_rw);
		if (rc)
			goto out;
	}
	if (in->fd < 0 || (want_w && !in->fd_rw)) {
		fd = open_backing(fs, in, want_w, &rw);
		if (fd < 0) {
			rc = fd;
			goto out;
		}
		if (in->fd >= 0)
			close(in->fd);
		in->fd = fd;
		in->size_known = false;
		in->fd_rw = rw;
		file_forget_tail(in);
	}
	/* The stamp is the file as we last left or saw it (file_write
	 * and file_truncate renew it): a change behind our back since then
	 * drops the pages, and the file ID, which may be another's now. */
	if (fs->sole_writer) {
		now = cache_stamp(in->fd);
		*keep_cache = in->kc_stamp && in->kc_stamp == now;
		*changed = in->kc_stamp && in->kc_stamp != now;
		if (*changed) {
			in->id_valid = false;
			in->size_known = false;
			tail_forget(in);
		}
		in->kc_stamp = now;
	}
	in->fd_refs++;
	if ((flags & O_TRUNC) && want_w) {
		rc = truncate_any(fs, in, in->fd, 0);
		if (rc && --in->fd_refs == 0) {
			close(in->fd);
			in->fd = -1;
			in->size_known = false;
			in->id_valid = false;
			file_forget_tail(in);
		}
	}
out:
	rwlock_unlock(&in->rw);
	return rc;
}

void file_release(struct fs *fs, struct inode *in)
{
	(void)fs;
	rwlock_wrlock(&in->rw);
	if (in->fd_refs && --in->fd_refs == 0) {
		close(in->fd);
		in->fd = -1;
		in->size_known = false;
		in->id_valid = false;
		file_forget_tail(in);
	}
	rwlock_unlock(&in->rw);
}

/* file_read with rw held; -EBADMSG with *bad set when a block fails to
 * authenticate. */
static int read_locked(struct fs *fs, struct inode *in, size_t size,
		       uint64_t off, uint8_t **bufp, const uint8_t **data,
		       size_t *len, uint64_t *bad)
{
	uint64_t b0, b1;
	size_t n, clen, got, ptlen, skip;
	uint8_t *buf = NULL, *pt;
	int rc;

	if (in->fd < 0) {
		rc = -EBADF;
		goto out;
	}
	rc = load_id(in, in->fd);
	if (rc <= 0)
		goto out;
	b0 = off / PBS;
	b1 = (off + size - 1) / PBS;
	n = (size_t)(b1 - b0 + 1);
	clen = n * fs->cbs;
	buf = malloc(clen + n * PBS);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	pt = buf + clen;
	rc = file_pread_full(in->fd, buf, clen,
			content_block_cipher_off(fs->content, b0), &got);
	if (rc || !got)
		goto out;
	rc = content_decrypt_blocks(fs->content, pt, &ptlen, buf, got, b0,
				    in->id, bad);
	if (rc) {
		if (rc != -EBADMSG)
			rc = -EIO;
		goto out;
	}
	skip = (size_t)(off - b0 * PBS);
	if (ptlen > skip) {
		*len = ptlen - skip < size ? ptlen - skip : size;
		*data = pt + skip;
		*bufp = buf;
		buf = NULL;
	}
out:
	free(buf);
	return rc < 0 ? rc : 0;
}

int file_read(struct fs *fs, struct inode *in, size_t size, uint64_t off,
	      uint8_t **bufp, const uint8_t **data, size_t *len)
{
	uint64_t bad = 0;
	int rc, tries;

	*bufp = NULL;
	*len = 0;
	if (!size)
		return 0;
	rwlock_rdlock(&in->rw);
	rc = read_locked(fs, in, size, off, bufp, data, len, &bad);
	rwlock_unlock(&in->rw);
	/* shared.c: another mount may be rewriting the block, or have given
	 * the file a new ID: read again under a shared lock, which waits for
	 * its writer, with the ID read anew. A few times, with a pause, for
	 * backings whose locks do not reach the other mount. */
	for (tries = 0; rc == -EBADMSG && fs->opt.sharedstorage && tries < 5;
	     tries++) {
		if (tries)
			usleep(1000u << tries);
		rwlock_wrlock(&in->rw);
		rc = in->fd < 0 ? -EBADF :
				  shared_lock_whole(fs, in->fd, false, off);
		if (!rc) {
			in->id_valid = false;
			rc = read_locked(fs, in, size, off, bufp, data, len,
					 &bad);
			shared_unlock(in->fd);
		}
		rwlock_unlock(&in->rw);
	}
	if (rc == -EBADMSG) {
		log_warn("inode %ju: block %ju is corrupt", (uintmax_t)in->ino,
			 (uintmax_t)bad);
		rc = -EIO;
	}
	return rc;
}

/* -sharedstorage: a change under the backing file's lock (see
 * change_begin), never answered early. rw held for writing. */
static int write_shared(struct fs *fs, struct inode *in, const uint8_t *data,
			size_t len, uint64_t off, bool append)
{
	int fd, rc;

	if (!len)
		return 0;
	rc = change_begin(fs, in, &fd, off, len, append);
	if (rc)
		return rc;
	return change_end(fd, write_locked(fs, in, fd, data, len, off, append,
					   NULL));
}

/* Write-behind: how far behind the end of a growing backing file its
 * writeback is started. */
#define WB_LAG (4u << 20)

/* On a disk (delayed allocation: ext4, xfs), a file that keeps growing
 * has the writeback of all but its last WB_LAG bytes started, WB_LAG at a
 * time, rather than left to the kernel's flusher (after 30 s or GiBs of
 * dirty pages): a later fsync, close-and-sync or unmount then finds most
 * of it on the disk already, and the disk works while the writer writes
 * (a 1 GiB dd with conv=fsync to ext4 took 25% less time). Only a run of
 * writes that grow the file from before (its backing size before this
 * one, UINT64_MAX if unknown) and only past 2 * WB_LAG of growth: small
 * files, and writes inside a file, are never written early.
 * sync_file_range without a wait neither waits for the disk nor takes a
 * writeback error, which the next fsync still reports. rw held for
 * writing. */
static void write_behind(struct fs *fs, struct inode *in, uint64_t before)
{
	uint64_t end, from;

	if (!fs->delalloc || !in->size_known || before == UINT64_MAX)
		return;
	end = in->bsize;
	if (end <= before || end >> 12 > UINT32_MAX)
		return;
	from = (uint64_t)in->wb_page << 12;
	if (from > before || from + 2 * (uint64_t)WB_LAG < before)
		from = before & ~(uint64_t)4095; /* a new run of appends */
	if (end - from >= 2 * (uint64_t)WB_LAG) {
		(void)sync_file_range(in->fd, (off_t)from,
				      (off_t)(end - WB_LAG - from),
				      SYNC_FILE_RANGE_WRITE);
		from = (end - WB_LAG) & ~(uint64_t)4095;
	}
	in->wb_page = (uint32_t)(from >> 12);
}

/* The kernel sends a file's first READ one round trip after the answer to
 * its OPEN; a READ of a file on a disk that is not in the page cache then
 * waits for the disk. Starting the disk's read of the first blocks right
 * after that answer (POSIX_FADV_WILLNEED: submitted, not waited for; the
 * kernel stops at the end of the file) overlaps the two (md5sum of 22,000
 * cold files on ext4: 17% less time), and costs only page-cache lookups
 * when they are there already. rw held for reading keeps the fd open. */
void file_prefetch(struct fs *fs, struct inode *in)
{
	(void)fs;
	rwlock_rdlock(&in->rw);
	if (in->fd >= 0)
		(void)posix_fadvise(in->fd, 0, FILE_PREFETCH_BYTES,
				    POSIX_FADV_WILLNEED);
	rwlock_unlock(&in->rw);
}

int file_write(struct fs *fs, struct inode *in, const uint8_t *data,
	       size_t len, uint64_t off, bool append, struct file_ack *ack)
{
	uint64_t before;
	int rc;

	rwlock_wrlock(&in->rw);
	if (in->fd < 0 || !in->fd_rw) {
		rc = -EBADF;
	} else if (fs->opt.sharedstorage) {
		rc = write_shared(fs, in, data, len, off, append);
	} else {
		before = in->size_known ? in->bsize : UINT64_MAX;
		rc = write_locked(fs, in, in->fd, data, len, off, append, ack);
		if (!rc)
			write_behind(fs, in, before);
	}
	if (rc && ack && ack->done) {
		log_err("inode %ju: write at %ju failed after it was "
			"acknowledged: %s", (uintmax_t)in->ino,
			(uintmax_t)off, strerror(-rc));
		pthread_mutex_lock(inode_hdr_lock(in));
		in->wb_err = rc;
		in->wb_seq++;
		in->wb_seen = false;
		pthread_mutex_unlock(inode_hdr_lock(in));
	}
	renew_stamp(fs, in, in->fd, rc);
	rwlock_unlock(&in->rw);
	return rc;
}

struct open_file *open_file_new(struct fs *fs, struct inode *in)
{
	struct open_file *h = malloc(sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_lock(inode_hdr_lock(in));
	/* An error nobody has seen goes to this handle too. */
	h->seen = in->wb_seq - (in->wb_seq && !in->wb_seen);
	pthread_mutex_unlock(inode_hdr_lock(in));
	pthread_mutex_lock(&fs->lock);
	h->prev = NULL;
	h->next = fs->open_files;
	if (h->next)
		h->next->prev = h;
	fs->open_files = h;
	pthread_mutex_unlock(&fs->lock);
	return h;
}

void open_file_free(struct fs *fs, struct open_file *h)
{
	pthread_mutex_lock(&fs->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->open_files = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->lock);
	free(h);
}

void open_files_fini(struct fs *fs)
{
	while (fs->open_files)
		open_file_free(fs, fs->open_files);
}

/* The error of an early acknowledged write that h has not seen, or 0. */
static int take_wb_err(struct inode *in, struct open_file *h)
{
	int rc = 0;

	pthread_mutex_lock(inode_hdr_lock(in));
	if (h->seen != in->wb_seq) {
		rc = in->wb_err;
		h->seen = in->wb_seq;
		in->wb_seen = true;
	}
	pthread_mutex_unlock(inode_hdr_lock(in));
	return rc;
}

/* Close-to-open: taking rw waits for a write in progress (an early answered
 * one included: its writer holds rw until the blocks are written), so every
 * byte written through the closing descriptor is on the backing file. Closing
 * a dup of the backing fd then makes the backing filesystem do what it does
 * on a close (NFS, sshfs, MooseFS: send the written data to the server) and
 * returns its error. */
int file_flush(struct fs *fs, struct inode *in, struct open_file *h)
{
	int rc = 0;

	(void)fs;
	rwlock_rdlock(&in->rw);
	if (in->fd >= 0 && in->fd_rw)
		rc = flush_backing(in->fd);
	if (!rc)
		rc = take_wb_err(in, h);
	rwlock_unlock(&in->rw);
	return rc;
}

int file_truncate(struct fs *fs, struct inode *in, uint64_t size)
{
	bool rw, tmp = false;
	int fd, rc;

	rwlock_wrlock(&in->rw);
	fd = in->fd;
	if (fd < 0 || !in->fd_rw) {
		fd = open_backing(fs, in, true, &rw);
		if (fd < 0) {
			rc = fd;
			goto out;
		}
		tmp = true;
		if (!in->fd_refs)
			in->id_valid = false;
	}
	rc = truncate_any(fs, in, fd, size);
	renew_stamp(fs, in, fd, rc);
	if (tmp) {
		close(fd);
		if (!in->fd_refs)
			in->id_valid = false;
	}
out:
	rwlock_unlock(&in->rw);
	return rc;
}

int file_fallocate(struct fs *fs, struct inode *in, int mode, uint64_t off,
		   uint64_t len)
{
	uint64_t b0, coff, cend, csize = 0, S;
	bool locked = false;
	int rc, fd;

	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (!len)
		return -EINVAL;
	if (too_big(fs, off, len))
		return -EFBIG;
	rwlock_wrlock(&in->rw);
	fd = in->fd;
	if (fd < 0 || !in->fd_rw) {
		rc = -EBADF;
		goto out;
	}
	if (fs->opt.sharedstorage) {
		rc = change_begin(fs, in, &fd, off, 0, false);
		if (rc)
			goto out;
		locked = true;
	}
	/* Reserve the ciphertext that a file of size off + len has up to
	 * that size: from the start of the first block (the header too for
	 * block 0) to the end of the last, partial, block, as gocryptfs
	 * does (not its full size). */
	b0 = off / PBS;
	coff = b0 ? content_block_cipher_off(fs->content, b0) : 0;
	cend = content_plain_to_cipher_size(fs->content, off + len);
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)coff,
		      (off_t)(cend - coff)) < 0) {
		rc = -errno;
		goto out;
	}
	rc = 0;
	if (mode & FALLOC_FL_KEEP_SIZE)
		goto out;
	rc = backing_size(fs, in, fd, &csize);
	if (rc)
		goto out;
	S = content_cipher_to_plain_size(fs->content, csize, NULL);
	if (off + len > S)
		rc = truncate_locked(fs, in, fd, off + len);
	renew_stamp(fs, in, fd, rc);
out:
	if (locked)
		rc = change_end(fd, rc);
	rwlock_unlock(&in->rw);
	return rc;
}

/* Whether plaintext block n is data: every byte of its ciphertext (up to
 * the end of the file) is allocated in the backing file. A block that was
 * written is allocated throughout; a block with an unallocated byte was
 * never written, so it is all zeros and reads as a hole (spec §3.4). A
 * hole block that shares its backing filesystem blocks with its
 * neighbours counts as data, which errs on the safe side. Returns 1, 0
 * (hole; *next: where the backing data after its first hole starts, or
 * csize if none) or -errno. */
static int block_is_data(struct fs *fs, int fd, uint64_t n, uint64_t csize,
			 uint64_t *next)
{
	uint64_t cs = content_block_cipher_off(fs->content, n);
	uint64_t ce = cs + fs->cbs;
	off_t h, d;

	if (ce > csize)
		ce = csize;
	h = lseek(fd, (off_t)cs, SEEK_HOLE);
	if (h < 0)
		return errno == ENXIO ? 0 : -errno;
	if ((uint64_t)h >= ce)
		return 1;
	d = lseek(fd, h, SEEK_DATA);
	if (d < 0 && errno != ENXIO)
		return -errno;
	*next = d < 0 ? csize : (uint64_t)d;
	return 0;
}

/* spec §3.9: SEEK_DATA and SEEK_HOLE at plaintext block granularity, a
 * block being data as block_is_data says. SEEK_HOLE in a data block
 * returns the start of the first hole block after it (or the size), and
 * SEEK_DATA the first data block, so that a walker alternating the two
 * always moves forward. */
int file_lseek(struct fs *fs, struct inode *in, uint64_t off, int whence,
	       uint64_t *res)
{
	uint64_t csize = 0, S, n, nblocks, next = 0, p, cbs = fs->cbs;
	off_t h;
	int rc;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	rwlock_rdlock(&in->rw);
	if (in->fd < 0) {
		rc = -EBADF;
		goto out;
	}
	rc = cipher_size(in->fd, &csize);
	if (rc)
		goto out;
	S = content_cipher_to_plain_size(fs->content, csize, NULL);
	if (off >= S) {
		rc = -ENXIO;
		goto out;
	}
	nblocks = (S + PBS - 1) / PBS;
	n = off / PBS;
	if (whence == SEEK_HOLE) {
		h = lseek(in->fd, (off_t)content_block_cipher_off(fs->content,
								  n),
			  SEEK_HOLE);
		if (h < 0) {
			rc = errno == ENXIO ? 0 : -errno;
			if (rc)
				goto out;
			h = (off_t)csize;
		}
		/* The block holding the first unallocated byte is a hole. */
		p = (uint64_t)h >= csize ? S : ((uint64_t)h - HL) / cbs * PBS;
		if (p > S)
			p = S;
		*res = p > off ? p : off;
		goto out;
	}
	while (n < nblocks) {
		rc = block_is_data(fs, in->fd, n, csize, &next);
		if (rc < 0)
			goto out;
		if (rc) {
			rc = 0;
			*res = n * PBS > off ? n * PBS : off;
			goto out;
		}
		if (next >= csize)
			break;
		/* The next candidate is the first block that starts at or
		 * after the next backing data: blocks starting before it
		 * start in the hole. */
		p = (next - HL + cbs - 1) / cbs;
		n = p > n ? p : n + 1;
	}
	rc = -ENXIO;
out:
	rwlock_unlock(&in->rw);
	return rc;
}

int file_fsync(struct fs *fs, struct inode *in, bool datasync,
	       struct open_file *h)
{
	int rc;

	(void)fs;
	rwlock_rdlock(&in->rw);
	if (in->fd < 0)
		rc = -EBADF;
	else if ((datasync ? fdatasync(in->fd) : fsync(in->fd)) < 0)
		rc = -errno;
	else
		rc = take_wb_err(in, h);
	rwlock_unlock(&in->rw);
	return rc;
}

int file_fstat(struct fs *fs, struct inode *in, struct stat *st)
{
	int rc = 0;

	(void)fs;
	rwlock_rdlock(&in->rw);
	if (in->fd < 0)
		rc = -EBADF;
	else if (fstat(in->fd, st) < 0)
		rc = -errno;
	rwlock_unlock(&in->rw);
	return rc;
}
