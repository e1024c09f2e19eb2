// SPDX-License-Identifier: MIT
/*
 * Mounting (the action without an action flag): check CIPHERDIR and
 * MOUNTPOINT, build the crypto chain, hand content and names to the FUSE
 * daemon (src/fs), and map its result to an exit code. Without -fg the
 * daemon forks into the background once the mount is ready.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "common/log.h"
#include "common/secmem.h"
#include "exitcodes.h"
#include "fs/fs.h"

static void on_ready(void *arg)
{
	struct cli_chain *ch = arg;

	secmem_relock_all();
	log_info("content cipher %s, implementation %s%s",
		 aead_cipher_name(aead_impl_cipher(ch->impl)),
		 aead_impl_name(ch->impl), ch->forced ? " (forced)" : "");
	if (!ch->forced && ch->figures[0])
		log_info("implementation benchmark: %s", ch->figures);
	log_info("Filesystem mounted and ready.");
}

static int check_mountpoint(const struct args *a, const char *mnt,
			    const char *cipherdir)
{
	struct stat st;
	size_t clen = strlen(cipherdir);
	int rc;

	if (stat(mnt, &st) != 0) {
		cli_err("Invalid mountpoint: stat '%s': %s", mnt,
			strerror(errno));
		return EXIT_MOUNTPOINT;
	}
	if (!S_ISDIR(st.st_mode)) {
		cli_err("Invalid mountpoint: '%s' is not a directory", mnt);
		return EXIT_MOUNTPOINT;
	}
	if (strncmp(mnt, cipherdir, clen) == 0 &&
	    (mnt[clen] == '/' || mnt[clen] == '\0')) {
		cli_err("Invalid mountpoint: '%s' is inside cipherdir '%s'",
			mnt, cipherdir);
		return EXIT_MOUNTPOINT;
	}
	if (!a->nonempty) {
		rc = cli_dir_nonempty(mnt);
		if (rc) {
			cli_err("Invalid mountpoint: '%s' %s", mnt,
				rc > 0 ? "is not empty (use -nonempty)"
				       : strerror(-rc));
			return EXIT_MOUNTPOINT;
		}
	}
	return 0;
}

static void fill_options(struct fs_options *fo, const struct args *a)
{
	fo->foreground = a->fg;
	fo->nosyslog = a->nosyslog;
	fo->ro = a->ro;
	fo->allow_other = a->allow_other;
	fo->nonempty = a->nonempty;
	fo->noprealloc = a->noprealloc;
	fo->debug = a->debug;
	fo->quiet = a->quiet;
	fo->fsname = a->fsname;
	fo->fuse_opts = a->fuse_opts;
}

static int run_fs(struct cli_chain *ch, const struct args *a,
		  const char *cipherdir, const char *mnt)
{
	struct fs_options fo = { .cipherdir = cipherdir, .mountpoint = mnt };
	struct fs *fs = NULL;
	bool parent = false;
	int rc, ex = 0;

	fill_options(&fo, a);
	fo.on_ready = on_ready;
	fo.on_ready_arg = ch;
	rc = fs_new(&fs, &fo, ch->content, ch->names);
	if (rc) {
		cli_err("setting up the filesystem failed: %s", strerror(-rc));
		return EXIT_OTHER;
	}
	rc = fs_run(fs, &parent);
	if (rc == FS_ERR_MOUNTPOINT) {
		cli_err("Mounting on '%s' failed", mnt);
		ex = EXIT_MOUNTPOINT;
	} else if (rc == FS_ERR_CIPHERDIR) {
		cli_err("Cannot open cipherdir '%s'", cipherdir);
		ex = EXIT_CIPHERDIR;
	} else if (rc) {
		cli_err("Mount failed: %s",
			rc > -1000 ? strerror(-rc) : "see the log");
		ex = EXIT_OTHER;
	}
	fs_free(fs);
	return ex;
}

int cli_mount(const struct args *a)
{
	struct cli_chain ch;
	char *cipherdir = NULL, *mnt = NULL;
	int ex;

	memset(&ch, 0, sizeof(ch));
	if (a->npos != 2) {
		cli_err("Wrong number of arguments (have %zu, want 2)",
			a->npos);
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	if (a->reverse) {
		cli_err("reverse mode mounts are not supported by " PROG);
		return EXIT_USAGE;
	}
	ex = cli_check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	cipherdir = realpath(a->pos[0], NULL);
	if (!cipherdir) {
		cli_err("Invalid cipherdir: '%s': %s", a->pos[0],
			strerror(errno));
		return EXIT_CIPHERDIR;
	}
	mnt = realpath(a->pos[1], NULL);
	if (!mnt) {
		cli_err("Invalid mountpoint: '%s': %s", a->pos[1],
			strerror(errno));
		ex = EXIT_MOUNTPOINT;
		goto out;
	}
	ex = check_mountpoint(a, mnt, cipherdir);
	if (ex)
		goto out;
	ex = cli_chain_open(&ch, a, cipherdir);
	if (!ex)
		ex = run_fs(&ch, a, cipherdir, mnt);
out:
	cli_chain_close(&ch);
	free(cipherdir);
	free(mnt);
	return ex;
}
