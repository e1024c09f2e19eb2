/* SPDX-License-Identifier: MIT */
/*
 * Command-line parsing with gocryptfs's conventions: one or two dashes,
 * "-flag=value" and "-flag value", Go boolean spellings, flags after the
 * positional arguments, "--", "-o" lists split between veilfs flags and FUSE
 * options, repeated -passfile/-extpass, and the usage errors.
 */
#include "cli/args.h"
#include "harness.h"

#include <errno.h>
#include <stdarg.h>

/* A writable argv ("veilfs", the strings given, NULL); *argc set. */
static char **mkargv(int *argc, ...)
{
	char **v = calloc(32, sizeof(*v));
	const char *s;
	va_list ap;
	int n = 0;

	v[n++] = strdup("veilfs");
	va_start(ap, argc);
	while ((s = va_arg(ap, const char *)) && n < 31)
		v[n++] = strdup(s);
	va_end(ap);
	*argc = n;
	return v;
}

static void freeargv(char **v)
{
	for (int i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

#define ARGV(...) mkargv(&argc, __VA_ARGS__, NULL)

static int parse(struct args *a, int argc, char **argv)
{
	char err[ARGS_ERR_LEN];
	int rc = args_parse(a, argc, argv, err);

	if (rc)
		printf("# %s\n", err);
	return rc;
}

TEST(defaults)
{
	int argc;
	char **v = mkargv(&argc, NULL);
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT(a.hkdf && a.raw64);
	ASSERT(a.scryptn == ARGS_UNSET);
	ASSERT_INT_EQ(a.longnamemax, 0);
	ASSERT_INT_EQ(a.npos, 0);
	ASSERT(!a.init && !a.fg && !a.ro && a.fuse_opts == NULL);
	args_free(&a);
	freeargv(v);
}

TEST(dash_forms_and_values)
{
	int argc;
	char **v = ARGV("--init", "-scryptn=12", "--longnamemax", "100",
			"-aessiv=true", "-plaintextnames=0", "dir");
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT(a.init && a.aessiv && !a.plaintextnames);
	ASSERT_INT_EQ(a.scryptn, 12);
	ASSERT_INT_EQ(a.longnamemax, 100);
	ASSERT_INT_EQ(a.npos, 1);
	ASSERT_STR_EQ(a.pos[0], "dir");
	args_free(&a);
	freeargv(v);
}

TEST(flags_after_positionals_and_double_dash)
{
	int argc, argc2;
	char **v = ARGV("cipher", "mnt", "-fg", "-ro", "-config", "c.conf");
	char **w = mkargv(&argc2, "-f", "--", "-cipher", "mnt", NULL);
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_INT_EQ(a.npos, 2);
	ASSERT_STR_EQ(a.pos[0], "cipher");
	ASSERT_STR_EQ(a.pos[1], "mnt");
	ASSERT(a.fg && a.ro);
	ASSERT_STR_EQ(a.config, "c.conf");
	args_free(&a);
	ASSERT_INT_EQ(parse(&a, argc2, w), 0);
	ASSERT(a.fg);
	ASSERT_STR_EQ(a.pos[0], "-cipher");
	args_free(&a);
	freeargv(v);
	freeargv(w);
}

TEST(repeated_password_sources)
{
	int argc;
	char **v = ARGV("-passfile", "a", "-passfile=b", "-extpass", "x y",
			"--extpass=z", "c", "m");
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_INT_EQ(a.npassfiles, 2);
	ASSERT_STR_EQ(a.passfiles[0], "a");
	ASSERT_STR_EQ(a.passfiles[1], "b");
	ASSERT_INT_EQ(a.nextpass, 2);
	ASSERT_STR_EQ(a.extpass[0], "x y");
	ASSERT_STR_EQ(a.extpass[1], "z");
	args_free(&a);
	freeargv(v);
}

TEST(o_options)
{
	int argc;
	char **v = ARGV("c", "m", "-o",
			"ro,allow_other,passfile=/p,fsname=x,kernel_cache,"
			"max_read=4096,nosuid,rw",
			"-o", "default_permissions");
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT(a.ro); /* -ro wins over -rw, as in gocryptfs */
	ASSERT(a.allow_other);
	ASSERT(a.kernel_cache && a.nosuid);
	ASSERT_INT_EQ(a.npassfiles, 1);
	ASSERT_STR_EQ(a.passfiles[0], "/p");
	ASSERT_STR_EQ(a.fsname, "x");
	ASSERT(a.fuse_opts != NULL);
	ASSERT_STR_EQ(a.fuse_opts, "max_read=4096,default_permissions");
	args_free(&a);
	freeargv(v);
}

TEST(impl_synonyms_and_ignored)
{
	int argc, argc2;
	char **v = ARGV("-cipher-impl", "A", "-openssl", "auto", "-longnames",
			"c", "m");
	char **w = mkargv(&argc2, "-force-impl=B", "-impl", "C", "c", "m", NULL);
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_STR_EQ(a.impl, "A");
	ASSERT(!a.sharedstorage);
	args_free(&a);
	ASSERT_INT_EQ(parse(&a, argc2, w), 0);
	ASSERT_STR_EQ(a.impl, "C");
	args_free(&a);
	freeargv(v);
	freeargv(w);
}

TEST(sharedstorage)
{
	int argc, argc2;
	char **v = ARGV("-sharedstorage", "-o", "sharedstorage=false", "c",
			"m");
	char **w = mkargv(&argc2, "-o", "ro,sharedstorage", "c", "m", NULL);
	struct args a;

	/* the flag given directly wins over the -o item, as in gocryptfs */
	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT(a.sharedstorage);
	args_free(&a);
	ASSERT_INT_EQ(parse(&a, argc2, w), 0);
	ASSERT(a.sharedstorage && a.ro);
	args_free(&a);
	freeargv(v);
	freeargv(w);
}

TEST(usage_errors)
{
	static const char *const bad[][4] = {
		{ "-nosuchflag" },
		{ "--nosuchflag=1" },
		{ "-scryptn" },
		{ "-scryptn", "ten" },
		{ "-scryptn=" },
		{ "-init=maybe" },
		{ "a", "b", "c" },
		{ "-o" },
		{ "-o", "passfile" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *v[6] = { NULL };
		char err[ARGS_ERR_LEN];
		struct args a;
		int n = 1, rc;

		v[0] = strdup("veilfs");
		for (int k = 0; k < 4 && bad[i][k]; k++)
			v[n++] = strdup(bad[i][k]);
		rc = args_parse(&a, n, v, err);
		args_free(&a);
		for (int k = 0; k < n; k++)
			free(v[k]);
		if (rc != -EINVAL || !err[0])
			FAILF("case %zu (%s) accepted", i, bad[i][0]);
	}
}

TEST(mount_flags)
{
	int argc;
	char **v = ARGV("-dev", "-nodev", "-suid", "-noexec", "-acl",
			"-kernel_cache", "-serialize_reads", "-wpanic",
			"-fusedebug", "-ko", "noatime,sync", "-ctlsock", "/s",
			"-force_owner=1:2", "-notifypid", "123", "-i", "1m30s",
			"-openssl=false", "-hh", "c", "m");
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT(a.dev && a.nodev && a.suid && !a.nosuid);
	ASSERT(a.exec && a.noexec); /* exec is the default */
	ASSERT(a.acl && a.kernel_cache && a.serialize_reads && a.wpanic);
	ASSERT(a.fusedebug && !a.debug && a.longhelp);
	ASSERT_STR_EQ(a.ko, "noatime,sync");
	ASSERT_STR_EQ(a.ctlsock, "/s");
	ASSERT_STR_EQ(a.force_owner, "1:2");
	ASSERT_INT_EQ(a.notifypid, 123);
	ASSERT_INT_EQ(a.idle_ns, 90000000000LL);
	ASSERT_INT_EQ(a.openssl, 0);
	ASSERT_INT_EQ(a.nnotes, 0);
	args_free(&a);
	freeargv(v);
}

TEST(idle_and_openssl_values)
{
	static const struct {
		const char *arg;
		int rc;
		long long ns;
		int openssl;
	} cases[] = {
		{ "-idle=2h45m", 0, 9900000000000LL, -1 },
		{ "-idle=0", 0, 0, -1 },
		{ "-idle=-5s", 0, 0, -1 }, /* negative: never, like 0 */
		{ "-idle=5", -EINVAL, 0, -1 },
		{ "-idle=1d", -EINVAL, 0, -1 },
		{ "-openssl=TRUE", 0, 0, 1 },
		{ "-openssl=0", 0, 0, 0 },
		{ "-openssl=auto", 0, 0, -1 },
		{ "-openssl=maybe", -EINVAL, 0, -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *v[3] = { strdup("veilfs"), strdup(cases[i].arg), NULL };
		char err[ARGS_ERR_LEN];
		struct args a;
		int rc = args_parse(&a, 2, v, err);

		if (rc != cases[i].rc ||
		    (!rc && (a.idle_ns != cases[i].ns ||
			     a.openssl != cases[i].openssl)))
			FAILF("%s: rc %d idle %lld openssl %d (%s)",
			      cases[i].arg, rc, a.idle_ns, a.openssl, err);
		if (rc && !strstr(err, cases[i].arg[1] == 'i' ? "-idle"
							       : "-openssl"))
			FAILF("%s: error does not name the flag: %s",
			      cases[i].arg, err);
		args_free(&a);
		free(v[0]);
		free(v[1]);
	}
}

TEST(ignored_flags_leave_a_note)
{
	int argc;
	char **v = ARGV("-devrandom", "-nofail", "-forcedecode", "-trace",
			"t", "-cpuprofile=c", "-memprofile", "m", "-o",
			"nofail", "-nofail=false", "c", "m");
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_INT_EQ(a.nnotes, 6); /* one per flag, even if repeated */
	for (size_t i = 0; i < a.nnotes; i++)
		ASSERT(a.notes[i][0] == '-' && strchr(a.notes[i], ':'));
	/* -o items come first (a flag given directly wins over them) */
	ASSERT(strstr(a.notes[0], "-nofail:") == a.notes[0]);
	ASSERT(strstr(a.notes[1], "-devrandom:") == a.notes[1]);
	ASSERT(a.fuse_opts == NULL);
	args_free(&a);
	freeargv(v);
}

TEST(fstab_only_options_refused)
{
	static const char *const bad[] = {
		"noauto", "auto", "_netdev", "defaults", "user", "users",
		"x-systemd.automount", "x-systemd.device-timeout=5",
		"comment=foo", "rw,noauto",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *v[5] = { strdup("veilfs"), strdup("-o"), strdup(bad[i]),
			       NULL };
		char err[ARGS_ERR_LEN];
		struct args a;
		int rc = args_parse(&a, 3, v, err);

		if (rc != -EINVAL || !strstr(err, "fstab"))
			FAILF("-o %s: rc %d (%s)", bad[i], rc, err);
		args_free(&a);
		for (int k = 0; k < 3; k++)
			free(v[k]);
	}
}

TEST(flag_table_walk)
{
	bool val, seen_idle = false, seen_acl = false;
	size_t n = 0;
	const char *name;

	while ((name = args_flag(n, &val))) {
		if (!strcmp(name, "idle"))
			seen_idle = val;
		if (!strcmp(name, "acl"))
			seen_acl = !val;
		n++;
	}
	ASSERT(n > 60);
	ASSERT(seen_idle && seen_acl);
}

/* The exclusion lists as gocryptfs's flag library reads them (seen with the
 * real binary): comma-separated CSV values, and the first use of the short
 * or the long name replaces what the other gave. */
TEST(exclusion_lists)
{
	int argc;
	char **v = ARGV("-e", "A", "-exclude", "B", "-e", "C,D", "-ew",
			"\"x,y\",z", "-exclude-wildcard=w", "-o",
			"exclude-from=f1,one-file-system", "--exclude-from",
			"f2,f3", "-reverse", "p", "m");
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_INT_EQ(a.exclude.n, 3);
	ASSERT_STR_EQ(a.exclude.v[0], "B");
	ASSERT_STR_EQ(a.exclude.v[1], "C");
	ASSERT_STR_EQ(a.exclude.v[2], "D");
	ASSERT_INT_EQ(a.exclude_wildcard.n, 1);
	ASSERT_STR_EQ(a.exclude_wildcard.v[0], "w");
	ASSERT_INT_EQ(a.exclude_from.n, 3);
	ASSERT_STR_EQ(a.exclude_from.v[0], "f1");
	ASSERT_STR_EQ(a.exclude_from.v[2], "f3");
	ASSERT(a.one_file_system && a.reverse);
	args_free(&a);
	freeargv(v);

	v = ARGV("-ew", "\"a\"\"b\",,c", "-ew", "", "-e", "");
	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_INT_EQ(a.exclude_wildcard.n, 3);
	ASSERT_STR_EQ(a.exclude_wildcard.v[0], "a\"b");
	ASSERT_STR_EQ(a.exclude_wildcard.v[1], "");
	ASSERT_STR_EQ(a.exclude_wildcard.v[2], "c");
	ASSERT_INT_EQ(a.exclude.n, 0);
	args_free(&a);
	freeargv(v);

	static const char *const bad[] = { "A,\"B", "a\"b", "\"a\"b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = ARGV("-ew", bad[i]);
		ASSERT_INT_EQ(parse(&a, argc, v), -EINVAL);
		args_free(&a);
		freeargv(v);
	}
}

RUN_TESTS(T(defaults), T(dash_forms_and_values),
	  T(flags_after_positionals_and_double_dash),
	  T(repeated_password_sources), T(o_options),
	  T(impl_synonyms_and_ignored), T(sharedstorage), T(usage_errors),
	  T(mount_flags),
	  T(idle_and_openssl_values), T(ignored_flags_leave_a_note),
	  T(fstab_only_options_refused), T(flag_table_walk),
	  T(exclusion_lists))
