/* SPDX-License-Identifier: MIT */
/*
 * veilfs command line: parse the flags, pick the action (one file each
 * under src/cli/), and exit with its result, a gocryptfs exit code
 * (src/exitcodes.h). This is the only place that exits; key material lives
 * in secmem and is wiped on every path, with an atexit handler as the last
 * resort.
 */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "common/log.h"
#include "common/secmem.h"
#include "exitcodes.h"

static void wipe_at_exit(void)
{
	secmem_wipe_all();
}

/* Undo what a parent's signal set-up passed on through exec that would
 * break us: an ignored SIGCHLD makes the kernel reap our children itself,
 * and an extpass program's exit status is lost (a failing one would pass);
 * a blocked SIGTERM or SIGINT leaves the daemon deaf to the unmount they
 * ask for. Ignored SIGINT and SIGHUP stay ignored (nohup, `cmd &`). */
static void reset_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
		signal(SIGCHLD, SIG_DFL);
}

static int help(const struct args *a)
{
	(void)a;
	cli_usage(stdout);
	fputs("\nCommon options (see veilfs(1) for all):\n"
	      "  -init              create a new filesystem in CIPHERDIR\n"
	      "  -passwd            change the password\n"
	      "  -info              show the config of CIPHERDIR\n"
	      "  -fsck [-repair]    check (and repair) CIPHERDIR\n"
	      "  -speed             benchmark the cipher implementations\n"
	      "  -aessiv, -xchacha, -gcm   content cipher for -init\n"
	      "  -plaintextnames, -deterministic-names, -longnamemax N\n"
	      "  -scryptn N         scrypt cost as log2(N), default 16\n"
	      "  -reverse           reverse mode: encrypted view of a plain dir\n"
	      "  -exclude PATH, -exclude-wildcard PAT, -exclude-from FILE\n"
	      "  -passfile FILE, -extpass CMD, -masterkey HEX|stdin\n"
	      "  -config FILE       use this config file\n"
	      "  -fg, -nosyslog, -ro, -allow_other, -nonempty, -fsname NAME\n"
	      "  -o OPTS, -q, -d, -noprealloc, -cipher-impl NAME\n"
	      "  -hh                all options\n",
	      stdout);
	return EXIT_OK;
}

static int version(const struct args *a)
{
	(void)a;
	printf(PROG " %s; gocryptfs v2 on-disk format\n", VEILFS_VERSION);
	return EXIT_OK;
}

/* The action flags; without one, CIPHERDIR MOUNTPOINT mounts. */
struct action {
	const char *flag;
	size_t set; /* offsetof the bool in struct args */
	int (*run)(const struct args *a);
};

#define ACT(name, field, fn) { name, offsetof(struct args, field), fn }

static const struct action actions[] = {
	ACT("-init", init, cli_init),
	ACT("-passwd", passwd, cli_passwd),
	ACT("-info", info, cli_info),
	ACT("-speed", speed, cli_speed),
	ACT("-dumpmasterkey", dumpmasterkey, cli_dumpmasterkey),
	ACT("-xray", xray, cli_xray),
	ACT("-fsck", fsck, cli_fsck),
};

static bool is_set(const struct args *a, const struct action *act)
{
	return *(const bool *)((const char *)a + act->set);
}

static int dispatch(const struct args *a)
{
	const struct action *pick = NULL;
	size_t n = 0;

	if (a->longhelp)
		return cli_long_help(a);
	if (a->help)
		return help(a);
	if (a->version)
		return version(a);
	/* as in gocryptfs: -speed wins over every other action */
	if (a->speed) {
		version(a);
		return cli_speed(a);
	}
	if (a->fido2 && !a->info) {
		cli_err("-fido2: veilfs cannot use FIDO2 tokens (it has no "
			"libfido2 support); unlock with a password, "
			"-passfile, -extpass or -masterkey");
		return EXIT_FIDO2;
	}
	/* gocryptfs-xray's spelling: -xray -dumpmasterkey CONFIG */
	if (a->xray && a->dumpmasterkey)
		return cli_dumpmasterkey(a);
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (is_set(a, &actions[i])) {
			pick = &actions[i];
			n++;
		}
	}
	if (n > 1) {
		char list[256] = "";

		for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", i ? ", " : "", actions[i].flag);
		cli_err("choose at most one of %s", list);
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	if (a->npassfiles && a->nextpass) {
		cli_err("The options -extpass and -passfile cannot be used at "
			"the same time");
		return EXIT_USAGE;
	}
	/* veilfs's own flags of -fsck: never a silent mount */
	if (!a->fsck && (a->repair || a->repair_truncate || a->quarantine)) {
		cli_err("%s needs -fsck", a->quarantine ? "-quarantine" :
			a->repair_truncate ? "-repair-truncate" : "-repair");
		return EXIT_USAGE;
	}
	return pick ? pick->run(a) : cli_mount(a);
}

int main(int argc, char **argv)
{
	char err[ARGS_ERR_LEN];
	struct args a;
	int ex;

	atexit(wipe_at_exit);
	reset_signals();
	log_init(PROG, false, LOG_LVL_INFO);
	if (args_parse(&a, argc, argv, err)) {
		cli_err("%s", err);
		cli_usage(stderr);
		args_free(&a);
		return EXIT_USAGE;
	}
	cli_set_quiet(a.quiet);
	if (a.debug)
		log_init(PROG, false, LOG_LVL_DBG);
	else if (a.quiet)
		log_init(PROG, false, LOG_LVL_WARN);
	log_set_wpanic(a.wpanic);
	for (size_t i = 0; i < a.nnotes; i++)
		log_info("%s", a.notes[i]);
	ex = dispatch(&a);
	args_free(&a);
	fflush(stdout);
	return ex;
}
