/* SPDX-License-Identifier: MIT */
/*
 * -idle: unmount by itself once the filesystem has been idle for a given
 * time, as gocryptfs does: no request served and no file or directory open
 * for that long. The unmount is an ordinary (not lazy) one, so that a
 * process with its working directory inside, or a mapped file, still keeps
 * the mount (the attempt fails with EBUSY and is made again later); the
 * session loop then ends as after fusermount3 -u.
 */
#ifndef FS_IDLE_H
#define FS_IDLE_H

struct chan;
struct fs;
struct idle;

/* Watch fs (mounted: call after fuse_session_mount) from a thread of its
 * own; requests are counted by chan. Returns 0 or a negative errno. */
int idle_start(struct idle **out, struct fs *fs, struct chan *chan,
	       long long idle_ns);
/* Stop watching (before the fs goes away). NULL is a no-op. */
void idle_stop(struct idle *w);

#endif
