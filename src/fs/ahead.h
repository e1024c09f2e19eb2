/* SPDX-License-Identifier: MIT */
/*
 * Reading ahead across the files of a directory (ahead.c): on a disk, a
 * program that opens one file after another of a directory for reading
 * (md5sum, cp -a, tar c, rsync, a backup) waits for the disk at every
 * file; once it has opened two in a row, a background thread asks the
 * backing for the first blocks of the directory's next files.
 */
#ifndef FS_AHEAD_H
#define FS_AHEAD_H

struct fs;
struct inode;

/* A file was opened for reading on fs (fs->disk): note it, and start
 * reading ahead when it continues a run of opens in one directory. */
void ahead_opened(struct fs *fs, struct inode *in);

/* Stop the thread and drop what is pending (at unmount). */
void ahead_stop(struct fs *fs);

#endif
