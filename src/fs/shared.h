/* SPDX-License-Identifier: MIT */
/*
 * -sharedstorage: OFD byte-range locks on backing files that coordinate the
 * mounts sharing one cipherdir (the protocol is described in shared.c).
 * Callers hold the inode's rw for writing around a lock and its unlock.
 */
#ifndef FS_SHARED_H
#define FS_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fs;

/* Lock fd for a write of len > 0 plaintext bytes at off (append: at the
 * end): its blocks if it stays inside the file, else the whole file.
 * Returns 0 or -errno (nothing held then). */
int shared_lock_write(struct fs *fs, int fd, uint64_t off, size_t len,
		      bool append);
/* Lock the whole file, exclusive (write) or shared, for a change or a
 * read at plaintext offset off. Returns 0 or -errno. */
int shared_lock_whole(struct fs *fs, int fd, bool write, uint64_t off);
/* Release every lock held on fd. */
void shared_unlock(int fd);
/* At mount: one warning line when the backing filesystem has no working
 * byte-range locks, or has ones that hold on this host only (sshfs). */
void shared_probe(struct fs *fs);

#endif
