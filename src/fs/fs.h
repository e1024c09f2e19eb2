/* SPDX-License-Identifier: MIT */
/*
 * The FUSE daemon. The CLI builds the crypto chain, then hands content and
 * names engines and a frontend (the view: forward or reverse mode) to
 * fs_new() and calls fs_run(), which mounts, optionally daemonizes, serves
 * requests until unmount or SIGTERM/SIGINT, and returns. This module never
 * learns which cipher runs.
 */
#ifndef FS_FS_H
#define FS_FS_H

#include <stdbool.h>
#include <stddef.h>

struct content;
struct names;
struct fs;
struct fs_frontend;

/* Forward mode: CIPHERDIR shown decrypted. Reverse mode: a plaintext
 * directory shown encrypted, read-only (its options: fs/rfs.h). */
extern const struct fs_frontend fs_forward;
extern const struct fs_frontend fs_reverse;

struct fs_options {
	const char *cipherdir;	/* absolute path (reverse: the plain dir) */
	const char *mountpoint; /* absolute path */
	bool foreground;	/* -fg: do not daemonize */
	bool detach;		/* -fg -notifypid: once mounted, detach as
				 * a daemon does (gocryptfs's child) */
	bool nosyslog;		/* daemon keeps logging to stderr */
	bool ro;		/* -ro */
	bool allow_other;	/* -allow_other (implies default_permissions) */
	bool nonempty;		/* allow a non-empty mountpoint */
	bool noprealloc;	/* -noprealloc */
	bool sharedstorage;	/* -sharedstorage: see file.c, inode.c */
	bool debug;		/* -fusedebug: libfuse's debug output */
	bool quiet;		/* -q */
	const char *fsname;	/* -fsname, NULL: cipherdir */
	const char *fuse_opts;	/* -o a,b,c passed to FUSE, may be NULL */
	/* Kernel mount flags, the precedence of -dev/-nodev etc. already
	 * applied; libfuse's defaults are nodev and nosuid. */
	bool dev, suid, noexec;
	const char *kernel_opts; /* -ko a,b,c, last on the option string */
	bool kernel_cache;	/* -kernel_cache: keep page cache on open */
	bool acl;		/* -acl: the kernel enforces POSIX ACLs */
	bool noxattr;		/* -noxattr: no extended attributes at all */
	bool force_owner;	/* -force_owner: report owner_uid:owner_gid */
	unsigned owner_uid, owner_gid;
	bool serialize_reads;	/* -serialize_reads: one READ at a time */
	const char *ctlsock;	/* -ctlsock: absolute socket path, or NULL */
	long long idle_ns;	/* -idle: unmount when idle this long; 0 never */
	/* -badname globs (borrowed: must outlive the fs); names that do not
	 * decrypt and match one are shown (spec §4.6) */
	const char *const *badname;
	size_t nbadname;
	/* Called in the process that will serve requests, after a fork to
	 * the background (if any) and before the first request: e.g. to relock
	 * key memory and log the chosen implementation. May be NULL. */
	void (*on_ready)(void *arg);
	void *on_ready_arg;
};

/* Errors fs_run returns, mapped to exit codes by main.c. */
enum fs_error {
	FS_ERR_MOUNTPOINT = -1000, /* missing, not a dir, non-empty, busy */
	FS_ERR_CIPHERDIR = -1001,  /* cannot open CIPHERDIR */
	FS_ERR_OTHER = -1002,
	FS_ERR_CTLSOCK = -1003,	   /* cannot create the -ctlsock socket */
};

/* A filesystem with frontend fe, whose own options fe_arg points to (NULL
 * for fs_forward, struct rfs_options for fs_reverse; used during the call
 * only). content and names are borrowed and must outlive the fs, and so
 * must the option strings that fs_new does not copy (kernel_opts,
 * ctlsock). Returns 0, -ENOMEM or the frontend's error. Caller frees. */
int fs_new(struct fs **out, const struct fs_options *opt,
	   const struct fs_frontend *fe, const void *fe_arg,
	   struct content *content, struct names *names);
/* Mount and serve. Without opt->foreground the calling process returns 0 only
 * once the mount is ready (the parent of a daemon; it must then exit), or a
 * negative error if mounting failed. The serving process returns 0 after a
 * clean unmount. *is_daemon_parent tells the caller which one it is. */
int fs_run(struct fs *fs, bool *is_daemon_parent);
void fs_free(struct fs *fs);
/* Whether FUSE takes every option of the -o items that are no veilfs flag
 * (fuse_opts, may be NULL): asked before the password, so that a typo is
 * a usage error at once (libfuse prints which option it refused). */
bool fs_fuse_opts_ok(const char *fuse_opts);

#endif
