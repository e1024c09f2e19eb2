// SPDX-License-Identifier: MIT
/*
 * -fsck [-repair|-repair-truncate] [-quarantine DIR] CIPHERDIR: check the
 * cipherdir without mounting it (src/fsck) and print gocryptfs 2.3's
 * summary and exit code (spec §6.3): "fsck summary: N corrupt files, M
 * files skipped" and 26, "fsck summary: no problems found" and 0, "fsck:
 * aborted" and 11 on SIGINT. With -repair the exit code is 0 when every
 * problem found was repaired, 26 when some were not.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "crypto/aead.h"
#include "exitcodes.h"
#include "fsck/fsck.h"

static volatile sig_atomic_t g_stop;

/* mountinfo's octal escapes (\040 for a space ...), in place. */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] &&
		    s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/* A FUSE filesystem with dir as its source is mounted: its mount point
 * into where. gocryptfs and veilfs name the cipherdir's full path. */
static bool mounted(const char *dir, char *where, size_t cap)
{
	char *real = realpath(dir, NULL), *line = NULL;
	size_t n = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!real || !f)
		goto out;
	while (!found && getline(&line, &n, f) > 0) {
		char mnt[4096], type[64], src[4096];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s %4095s", type, src) != 2 ||
		    strncmp(type, "fuse", 4))
			continue;
		unescape(src);
		unescape(mnt);
		if (!strcmp(src, real)) {
			size_t l = strlen(mnt);

			if (l >= cap)
				l = cap - 1;
			memcpy(where, mnt, l);
			where[l] = '\0';
			found = true;
		}
	}
out:
	if (f)
		fclose(f);
	free(line);
	free(real);
	return found;
}

/* A veilfs daemon holds a shared flock on the cipherdir it serves: one
 * mounted under another source name (-fsname) shows that way. */
static bool served(const char *dir, char *where, size_t cap)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool busy;

	if (fd < 0)
		return false;
	busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd); /* lets go of the lock if we got it */
	if (busy)
		snprintf(where, cap, "a mount point mountinfo does not name "
			 "(a veilfs daemon serves it)");
	return busy;
}

static void on_stop(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void catch(int sig, struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: blocked reads return */
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, old);
}

int cli_fsck(const struct args *a)
{
	struct sigaction oint, oterm;
	struct cli_chain ch;
	struct fsck_opts o = { 0 };
	struct fsck_result r = { 0 };
	char err[1024];
	bool repair = a->repair || a->repair_truncate;
	int ex, rc;

	if (a->reverse) {
		cli_err("-fsck is not supported with -reverse");
		return EXIT_USAGE;
	}
	if (a->quarantine && !repair) {
		cli_err("-quarantine needs -repair");
		return EXIT_USAGE;
	}
	ex = cli_want_args(a, 1, "-fsck", "CIPHERDIR");
	if (!ex)
		ex = cli_check_cipherdir(a->pos[0]);
	if (ex)
		return ex;
	if (mounted(a->pos[0], err, sizeof(err)) ||
	    served(a->pos[0], err, sizeof(err))) {
		if (repair) {
			cli_err("fsck: '%s' is mounted on '%s': unmount it "
				"before -repair", a->pos[0], err);
			return EXIT_OTHER;
		}
		cli_err("fsck: warning: '%s' is mounted on '%s': changes made "
			"meanwhile may show as problems", a->pos[0], err);
	}
	/* The checkers are the parallelism: no batch pool on top. */
	aead_set_threads(1);
	ex = cli_chain_open(&ch, a, a->pos[0]);
	if (ex)
		goto out;
	g_stop = 0;
	catch(SIGINT, &oint);
	catch(SIGTERM, &oterm);
	o.cipherdir = a->pos[0];
	o.quiet = a->quiet;
	o.progress = isatty(STDERR_FILENO);
	o.repair = repair;
	o.truncate = a->repair_truncate;
	o.quarantine = a->quarantine;
	o.out = stdout;
	o.err = stderr;
	o.stop = &g_stop;
	rc = fsck_run(&o, ch.content, ch.names, &r, err, sizeof(err));
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	if (rc == -EINTR) {
		printf("fsck: aborted\n");
		if (r.quarantine)
			printf("fsck: what was done so far is in %s\n",
			       r.report);
		ex = EXIT_OTHER;
		goto out;
	}
	if (rc) {
		fflush(stdout);
		cli_err("fsck: %s", err);
		ex = EXIT_OTHER;
		goto out;
	}
	if (r.corrupt || r.skipped)
		printf("fsck summary: %lu corrupt files, %lu files skipped\n",
		       r.corrupt, r.skipped);
	else
		printf("fsck summary: no problems found\n");
	if (r.report)
		printf("repair summary: %lu of %lu problems repaired; "
		       "quarantine and report: %s\n",
		       r.repaired, r.repaired + r.unrepaired, r.quarantine);
	if (repair)
		ex = r.unrepaired || r.skipped ? EXIT_FSCK : EXIT_OK;
	else
		ex = r.corrupt || r.skipped ? EXIT_FSCK : EXIT_OK;
out:
	fflush(stdout);
	fsck_result_fini(&r);
	cli_chain_close(&ch);
	return ex;
}
