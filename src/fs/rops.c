// SPDX-License-Identifier: MIT
/*
 * The reverse frontend (spec §5): its fuse_lowlevel_ops table, thin
 * handlers over rdir.c and rfile.c, and its state. The view is read-only:
 * the mount is "ro", and every request that would change something gets
 * EROFS should it arrive anyway. Like gocryptfs 2.3, the view has no
 * extended attributes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "fs/ctlsock.h"
#include "fs/file.h"
#include "fs/rpriv.h"
#include "fs/xattr.h"

static void fix_attr(struct fs *fs, struct inode *in, struct stat *st)
{
	rdir_fix_attr(fs, in, st);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	fe_init(userdata, conn);
	/* The plaintext changes under the view, and a new symlink may get
	 * the number of a deleted one: the kernel must ask every time. */
	conn->want &= ~(unsigned)FUSE_CAP_CACHE_SYMLINKS;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct inode *in = NULL;
	struct stat st;
	int rc;

	rc = rdir_lookup(fe_fs(req), fe_in(req, parent), name, &in, &st);
	fe_reply_entry(req, rc, in, &st);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct inode *in = fe_in(req, ino);
	struct stat st;

	(void)fi;
	fe_reply_attr(req, rdir_stat(fe_fs(req), in, &st), in, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[RFS_LINK_MAX + 1];
	int rc;

	rc = rdir_readlink(fe_fs(req), fe_in(req, ino), buf, sizeof(buf));
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fe_fs(req);
	struct inode *in = fe_in(req, ino);
	int rc = 0;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (in->type != S_IFREG) {
		fuse_reply_err(req, in->type == S_IFDIR ? EISDIR : EINVAL);
		return;
	}
	if (in->kind == INODE_REAL)
		rc = rfile_open(fs, in);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	inode_pin(fs, in);
	atomic_fetch_add(&fs->nopen, 1);
	fi->noflush = 1;
	fi->keep_cache = fs->opt.kernel_cache;
	/* A virtual file's content follows the path of its directory, which
	 * may change while its attributes do not: no page cache for it. */
	if (in->kind != INODE_REAL)
		fi->direct_io = 1;
	if (fuse_reply_open(req, fi) < 0) {
		if (in->kind == INODE_REAL)
			file_release(fs, in);
		inode_unpin(fs, in);
		atomic_fetch_sub(&fs->nopen, 1);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = fe_fs(req);
	struct inode *in = fe_in(req, ino);
	char vbuf[NAMES_MAX_CNAME];
	const uint8_t *data = NULL;
	size_t len = 0;
	int rc;

	(void)fi;
	if (in->kind == INODE_REAL) {
		/* -serialize_reads: one read at a time, in the order they
		 * came */
		if (fs->opt.serialize_reads)
			pthread_mutex_lock(&fs->read_lock);
		rc = rfile_read(fs, in, size, (uint64_t)off, &data, &len);
		if (fs->opt.serialize_reads)
			pthread_mutex_unlock(&fs->read_lock);
	} else {
		size_t skip;

		rc = rdir_virtual_content(fs, in, vbuf, &len);
		skip = (uint64_t)off < len ? (size_t)off : len;
		data = (const uint8_t *)vbuf + skip;
		len -= skip;
		if (len > size)
			len = size;
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, (const char *)data, len);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = fe_fs(req);
	struct inode *in = fe_in(req, ino);

	(void)fi;
	if (in->kind == INODE_REAL)
		file_release(fs, in);
	inode_unpin(fs, in);
	atomic_fetch_sub(&fs->nopen, 1);
	fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct fs *fs = fe_fs(req);
	struct inode *in = fe_in(req, ino);
	uint64_t res = 0;
	struct stat st;
	int rc;

	(void)fi;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (in->kind == INODE_REAL) {
		rc = rfile_lseek(fs, in, (uint64_t)off, whence, &res);
	} else if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		rc = -EINVAL;
	} else {
		rc = rdir_stat(fs, in, &st);
		if (!rc) {
			rdir_fix_attr(fs, in, &st);
			if (off >= st.st_size)
				rc = -ENXIO;
			else
				res = whence == SEEK_DATA ? (uint64_t)off
							  : (uint64_t)st.st_size;
		}
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, (off_t)res);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	(void)ino;
	(void)size;
	fuse_reply_err(req, -xattr_absent(name));
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}

/* ---- everything that would write: EROFS -------------------------------- */

static void erofs(fuse_req_t req)
{
	fuse_reply_err(req, EROFS);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	(void)ino;
	(void)attr;
	(void)to_set;
	(void)fi;
	erofs(req);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	erofs(req);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	(void)parent;
	(void)name;
	(void)mode;
	erofs(req);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	erofs(req);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	erofs(req);
}

static void op_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	erofs(req);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	erofs(req);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	erofs(req);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	erofs(req);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	erofs(req);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)ino;
	(void)mode;
	(void)off;
	(void)len;
	(void)fi;
	erofs(req);
}

static const struct fuse_lowlevel_ops rops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = fe_forget,
	.forget_multi = fe_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_remove,
	.rmdir = op_remove,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = fe_opendir,
	.readdir = fe_readdir,
	.readdirplus = fe_readdirplus,
	.releasedir = fe_releasedir,
	.statfs = fe_statfs,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_remove,
};

static int ctl_encrypt(void *arg, const char *path, char **out)
{
	return rfs_encrypt_path(arg, path, out);
}

static int ctl_decrypt(void *arg, const char *path, char **out)
{
	return rfs_decrypt_path(arg, path, out);
}

/* -ctlsock in reverse mode: plaintext paths to view paths and back. */
static const struct ctlsock_ops rev_ctl_ops = {
	.encrypt_path = ctl_encrypt,
	.decrypt_path = ctl_decrypt,
};

static int setup(struct fs *fs, const void *arg)
{
	const struct rfs_options *o = arg;
	struct rfs *r;
	uint64_t rnd = 0;
	int rc = 0;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (o)
		r->opt = *o;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->longs.lock, NULL);
	fs->fe_state = r;
	fs->ctl_ops = &rev_ctl_ops;
	fs->ctl_arg = fs;
	/* spec §5.3: the root's IV is pathiv("", "DIRIV") */
	if (!fs->plaintext && fs->diriv)
		rc = names_pathiv(r->root_iv, "", 0, NAMES_PATHIV_DIRIV);
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = 0;
	snprintf(r->collision, sizeof(r->collision), "%s_NAME_COLLISION_%llu",
		 NAMES_CONF_FILE, (unsigned long long)rnd);
	return rc;
}

static void teardown(struct fs *fs)
{
	struct rfs *r = rfs_of(fs);

	if (!r)
		return;
	rfile_fini(fs);
	rdir_longs_fini(r);
	free(r->ns);
	pthread_mutex_destroy(&r->lock);
	free(r);
	fs->fe_state = NULL;
}

const struct fs_frontend fs_reverse = {
	.subtype = "veilfs-reverse",
	.ops = &rops,
	/* The plaintext directory changes behind our back: as gocryptfs. */
	.cache_timeout = FS_SHORT_TIMEOUT,
	.read_only = true,
	.setup = setup,
	.teardown = teardown,
	.fix_attr = fix_attr,
	.list_load = rdir_list_load,
	.list_entry = rdir_list_entry,
};
