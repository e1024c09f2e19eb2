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
	ASSERT_INT_EQ(a.scryptn, -1);
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
	ASSERT(!a.ro); /* the later "rw" wins */
	ASSERT(a.allow_other);
	ASSERT_INT_EQ(a.npassfiles, 1);
	ASSERT_STR_EQ(a.passfiles[0], "/p");
	ASSERT_STR_EQ(a.fsname, "x");
	ASSERT(a.fuse_opts != NULL);
	ASSERT_STR_EQ(a.fuse_opts,
		      "kernel_cache,max_read=4096,default_permissions");
	args_free(&a);
	freeargv(v);
}

TEST(impl_synonyms_and_ignored)
{
	int argc, argc2;
	char **v = ARGV("-cipher-impl", "A", "-openssl", "auto", "-longnames",
			"-sharedstorage", "c", "m");
	char **w = mkargv(&argc2, "-force-impl=B", "-impl", "C", "c", "m", NULL);
	struct args a;

	ASSERT_INT_EQ(parse(&a, argc, v), 0);
	ASSERT_STR_EQ(a.impl, "A");
	args_free(&a);
	ASSERT_INT_EQ(parse(&a, argc2, w), 0);
	ASSERT_STR_EQ(a.impl, "C");
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

RUN_TESTS(T(defaults), T(dash_forms_and_values),
	  T(flags_after_positionals_and_double_dash),
	  T(repeated_password_sources), T(o_options),
	  T(impl_synonyms_and_ignored), T(usage_errors))
