/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level operations table; userdata is the struct fs.
 */
#ifndef FS_OPS_H
#define FS_OPS_H

struct fs;
struct fuse_lowlevel_ops;

extern const struct fuse_lowlevel_ops fs_ops;

/* Free what open handles still hold when the daemon stops (the kernel
 * sends no release for them after the unmount). No request may run. */
void ops_fini(struct fs *fs);

#endif
