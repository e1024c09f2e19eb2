/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level operations table; userdata is the struct fs.
 */
#ifndef FS_OPS_H
#define FS_OPS_H

struct fuse_lowlevel_ops;

extern const struct fuse_lowlevel_ops fs_ops;

#endif
