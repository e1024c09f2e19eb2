/* SPDX-License-Identifier: MIT */
/*
 * Regular-file content: open-file state (one backing fd per inode shared by
 * all FUSE handles), the file header and ID, and plaintext read, write,
 * truncate, fallocate and lseek over encrypted blocks (spec §3). All entry
 * points take the per-inode lock themselves.
 */
#ifndef FS_FILE_H
#define FS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fs;
struct inode;
struct stat;

/* Attach an opened backing fd (from create) to in as one handle. */
void file_attach(struct fs *fs, struct inode *in, int fd, bool rw);
/* Open in for one handle (flags: the open(2) flags from the kernel);
 * handles O_TRUNC. On a local backing (fs->sole_writer): *keep_cache tells
 * whether the kernel may keep the file's pages (the backing file is as we
 * last left or saw it), *changed that it is not (changed behind our back:
 * the kernel's attributes are stale). Returns 0, -ESTALE when the name
 * shows another file than the one held open (the kernel looks it up
 * again), or -errno. */
int file_open(struct fs *fs, struct inode *in, int flags, bool *keep_cache,
	      bool *changed);
void file_release(struct fs *fs, struct inode *in);
/* After the answer to an open for reading on a disk (fs->disk): start
 * reading the backing file's first blocks, for the READ that follows. */
void file_prefetch(struct fs *fs, struct inode *in);

/* What file_prefetch fetches, and ahead.c of the files it reads ahead: the
 * ciphertext of the first READ of a file read from its start, the mount's
 * read-ahead (fs.c, 512 KiB) of plaintext. */
#define FILE_PREFETCH_BYTES (528u << 10)
/* Free what file.c keeps for in's open backing fd (when in goes). */
void file_forget_tail(struct inode *in);
/* After a change of in's attributes made through us (chmod, chown, utimens,
 * xattrs), st being the backing file's stat now: the change of its ctime is
 * no sign of a change behind our back at the next open. Caller holds in->rw
 * for reading if the file may be open. */
void file_restamp(struct fs *fs, struct inode *in, const struct stat *st);

/* Read up to size plaintext bytes at off. On success *buf (caller frees)
 * holds *len bytes starting at *data. */
int file_read(struct fs *fs, struct inode *in, size_t size, uint64_t off,
	      uint8_t **buf, const uint8_t **data, size_t *len);
/* How file_write may answer the writer early: fn(arg) replies success. */
struct file_ack {
	void (*fn)(void *arg);
	void *arg;
	bool done; /* set once fn was called */
};
/* Write len bytes at off (at the end of the file if append). With ack, a
 * write of whole blocks past the end of the file is acknowledged as soon as
 * its backing space is reserved and the file extended, and completed after
 * that under the inode's lock (so everything that comes later sees it);
 * an error after the acknowledgement is kept for the next fsync or flush.
 * Returns 0 or -errno (meaningful while !ack->done). */
int file_write(struct fs *fs, struct inode *in, const uint8_t *data,
	       size_t len, uint64_t off, bool append, struct file_ack *ack);
/* What an open handle has seen of the errors of writes acknowledged early
 * (fi->fh of a regular file): each is reported once to every handle that
 * was open when it happened, and to the next one opened if none had seen
 * it, as Linux reports writeback errors (errseq). */
struct open_file {
	uint32_t seen;
	struct open_file *prev, *next; /* fs->open_files, under fs->lock */
};
/* A new handle of in (NULL on ENOMEM), and its end. Those still open when
 * the daemon stops (no RELEASE comes for them) go in open_files_fini. */
struct open_file *open_file_new(struct fs *fs, struct inode *in);
void open_file_free(struct fs *fs, struct open_file *h);
void open_files_fini(struct fs *fs);
/* For flush (close): waits for a write in progress, asks the backing
 * filesystem to flush the file as a close would, and returns its error or
 * the error of a write acknowledged early that h has not seen, else 0. */
int file_flush(struct fs *fs, struct inode *in, struct open_file *h);
int file_truncate(struct fs *fs, struct inode *in, uint64_t size);
int file_fallocate(struct fs *fs, struct inode *in, int mode, uint64_t off,
		   uint64_t len);
int file_lseek(struct fs *fs, struct inode *in, uint64_t off, int whence,
	       uint64_t *res);
int file_fsync(struct fs *fs, struct inode *in, bool datasync,
	       struct open_file *h);
/* pread until len bytes or the end of the file; *got what was read. */
int file_pread_full(int fd, void *buf, size_t len, uint64_t off,
		    size_t *got);
/* fstat of the open fd (for setattr/getattr with a handle). */
int file_fstat(struct fs *fs, struct inode *in, struct stat *st);

#endif
