/* SPDX-License-Identifier: MIT */
/*
 * The control socket's protocol and server (src/fs/ctlsock.c) with a fake
 * frontend: answers byte for byte as gocryptfs 2.3 gives them (recorded
 * from its -ctlsock), path canonicalisation, Go's JSON escaping, error
 * numbers, and the socket itself: mode 0600, several requests on one
 * connection, oversized requests, stale sockets, removal at stop.
 */
#include "fs/ctlsock.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Fake translation: E<path> / D<path>; a few paths fail. */
static int fake(const char *path, char **out, char tag)
{
	if (!strcmp(path, "missing/x"))
		return -ENOENT;
	if (!strcmp(path, "file/x"))
		return -ENOTDIR;
	if (!strcmp(path, "bad"))
		return -EBADMSG;
	if (asprintf(out, "%c%s", tag, path) < 0)
		return -ENOMEM;
	return 0;
}

static int fake_enc(void *arg, const char *path, char **out)
{
	(void)arg;
	return fake(path, out, 'E');
}

static int fake_dec(void *arg, const char *path, char **out)
{
	(void)arg;
	return fake(path, out, 'D');
}

static const struct ctlsock_ops ops = { fake_enc, fake_dec };

#define OK(r) "{\"Result\":\"" r "\",\"ErrNo\":0,\"ErrText\":\"\"," \
	      "\"WarnText\":\"\"}\n"
#define ERR(n, t) "{\"Result\":\"\",\"ErrNo\":" #n ",\"ErrText\":\"" t \
		  "\",\"WarnText\":\"\"}\n"

TEST(answers)
{
	static const struct {
		const char *req, *ans;
	} cases[] = {
		{ "{\"EncryptPath\": \"a/b\"}", OK("Ea/b") },
		{ "{\"DecryptPath\": \"x/y\"}\n", OK("Dx/y") },
		{ "  {\"encryptpath\": \"a\"}  ", OK("Ea") },
		{ "{\"EncryptPath\":\"a\",\"encryptPath\":\"a/b\"}",
		  OK("Ea/b") },
		{ "{\"EncryptPath\":\"\",\"DecryptPath\":\"q\"}", OK("Dq") },
		{ "{\"EncryptPath\":\"a\",\"Foo\":[1,{\"x\":null}]}", OK("Ea") },
		{ "{\"EncryptPath\": \"a\", \"DecryptPath\": \"x\"}",
		  ERR(-1, "Ambiguous") },
		{ "{}", ERR(-1, "Empty input") },
		{ "null", ERR(-1, "Empty input") },
		{ "{\"EncryptPath\":null}", ERR(-1, "Empty input") },
		/* a null leaves the field as it was (it emptied it) */
		{ "{\"EncryptPath\":\"x\",\"encryptPath\":null}", OK("Ex") },
		{ "{\"Foo\": 1}", ERR(-1, "Empty input") },
		{ "{\"EncryptPath\": \"missing/x\"}",
		  ERR(2, "no such file or directory") },
		{ "{\"EncryptPath\": \"file/x\"}", ERR(-1, "not a directory") },
		{ "{\"DecryptPath\": \"bad\"}", ERR(-1, "bad message") },
		{ "{\"EncryptPath\":\"a\\u0000b\"}", ERR(-1, "bad message") },
		{ "{\"EncryptPath\":\"<&>\\u2028\"}",
		  OK("E\\u003c\\u0026\\u003e\\u2028") },
		{ "{\"EncryptPath\":\"t\\tq\\\"\\u0001\"}",
		  OK("Et\\tq\\\"\\u0001") },
		{ "{\"EncryptPath\":\"\xff\"}", OK("E\\ufffd") },
		{ "{\"EncryptPath\":\"\xc3\xa9\"}", OK("E\xc3\xa9") },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *a = ctlsock_answer(&ops, NULL, cases[i].req,
					 strlen(cases[i].req));

		if (!a || strcmp(a, cases[i].ans))
			FAILF("%s\n#  got  %s#  want %s", cases[i].req, a,
			      cases[i].ans);
		free(a);
	}
}

/* Nesting deeper than json-c's default of 32 (Go takes 10,000), and a
 * NUL after the object, which Go refuses (it was taken for a space). */
TEST(json_depth_and_trailing_nul)
{
	static const char nul[] = "{\"EncryptPath\":\"a\"}";
	char req[512], *a;
	size_t n = 0;

	n += (size_t)snprintf(req + n, sizeof(req) - n,
			      "{\"EncryptPath\":\"a\",\"F\":");
	for (int i = 0; i < 100; i++)
		req[n++] = '[';
	for (int i = 0; i < 100; i++)
		req[n++] = ']';
	req[n++] = '}';
	req[n] = '\0';
	a = ctlsock_answer(&ops, NULL, req, n);
	ASSERT(a != NULL);
	ASSERT_STR_EQ(a, OK("Ea"));
	free(a);
	a = ctlsock_answer(&ops, NULL, nul, sizeof(nul)); /* with its NUL */
	ASSERT(a != NULL);
	ASSERT(strstr(a, "\"ErrNo\":-1,\"ErrText\":\"JSON Unmarshal error: "
			 "invalid character") != NULL);
	free(a);
}

TEST(json_errors)
{
	static const char *const bad[] = {
		"", "{garbage", "[1,2]", "\"x\"", "5", "{\"EncryptPath\": 5}",
		"{\"a\":1,}", "{'EncryptPath':'a'}",
		"{\"EncryptPath\": \"a/b\"}{\"EncryptPath\": \"a\"}",
		"{\"EncryptPath\": \"a",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *a = ctlsock_answer(&ops, NULL, bad[i], strlen(bad[i]));
		const char *pfx = "{\"Result\":\"\",\"ErrNo\":-1,\"ErrText\":"
				  "\"JSON Unmarshal error: ";

		if (!a || strncmp(a, pfx, strlen(pfx)))
			FAILF("'%s': %s", bad[i], a);
		free(a);
	}
}

TEST(canonical_paths)
{
	static const struct {
		const char *in, *clean;
	} cases[] = {
		{ "a/b", NULL },
		{ "...", NULL },
		{ ".a", NULL },
		{ "/a", "a" },
		{ "a//b", "a/b" },
		{ "a/", "a" },
		{ "./a", "a" },
		{ "a/./b", "a/b" },
		{ "a/../b", "b" },
		{ "a/b/../../a", "a" },
		{ "/ZhY//za4/", "ZhY/za4" },
		{ "..", "" },
		{ "../a", "" },
		{ "/../a", "" },
		{ "a/../../b", "" },
		{ "a/..", "" },
		{ ".", "" },
		{ "/", "" },
		{ "//", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char req[128], want[512], *a;

		snprintf(req, sizeof(req), "{\"EncryptPath\":\"%s\"}",
			 cases[i].in);
		if (!cases[i].clean)
			snprintf(want, sizeof(want), OK("E%s"), cases[i].in);
		else if (!*cases[i].clean)
			snprintf(want, sizeof(want),
				 "{\"Result\":\"\",\"ErrNo\":-1,\"ErrText\":"
				 "\"Empty input after canonicalization\","
				 "\"WarnText\":\"Non-canonical input path "
				 "'%s' has been interpreted as ''.\"}\n",
				 cases[i].in);
		else
			snprintf(want, sizeof(want),
				 "{\"Result\":\"E%s\",\"ErrNo\":0,\"ErrText\":"
				 "\"\",\"WarnText\":\"Non-canonical input path "
				 "'%s' has been interpreted as '%s'.\"}\n",
				 cases[i].clean, cases[i].in, cases[i].clean);
		a = ctlsock_answer(&ops, NULL, req, strlen(req));
		if (!a || strcmp(a, want))
			FAILF("'%s'\n#  got  %s#  want %s", cases[i].in, a,
			      want);
		free(a);
	}
}

/* ---- the server ---- */

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One answer line (up to 4 KiB), "" on EOF, NULL on timeout. */
static char *ask(int fd, const char *req, size_t len)
{
	static char buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (write(fd, req, len) != (ssize_t)len)
		return NULL;
	if (poll(&p, 1, 10000) != 1)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

TEST(server)
{
	char dir[] = "/tmp/test_ctlsock.XXXXXX", path[64], *big, *a;
	struct ctlsock *cs = NULL;
	struct stat st;
	int fd, fd2;

	ASSERT(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	ASSERT_INT_EQ(ctlsock_start(&cs, path, &ops, NULL), 0);
	ASSERT(stat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	ASSERT_INT_EQ(st.st_mode & 07777, 0600);
	fd = dial(path);
	fd2 = dial(path);
	ASSERT(fd >= 0 && fd2 >= 0);
	/* several requests on one connection, two connections at once */
	for (int i = 0; i < 3; i++) {
		a = ask(fd, "{\"EncryptPath\":\"a/b\"}", 21);
		ASSERT(a && !strcmp(a, OK("Ea/b")));
		a = ask(fd2, "{\"DecryptPath\":\"c\"}", 19);
		ASSERT(a && !strcmp(a, OK("Dc")));
	}
	/* 4999 bytes are answered, 5000 close the connection */
	big = malloc(5000);
	ASSERT(big);
	memset(big, ' ', 5000);
	memcpy(big, "{\"EncryptPath\":\"q\"}", 19);
	a = ask(fd, big, CTLSOCK_MAX_REQ);
	ASSERT(a && !strcmp(a, OK("Eq")));
	a = ask(fd, big, CTLSOCK_MAX_REQ + 1);
	ASSERT(a && !*a);
	free(big);
	close(fd);
	/* the other connection is unharmed */
	a = ask(fd2, "{\"EncryptPath\":\"z\"}", 19);
	ASSERT(a && !strcmp(a, OK("Ez")));
	close(fd2);
	ctlsock_stop(cs);
	ASSERT(access(path, F_OK) < 0 && errno == ENOENT);

	/* a stale socket is replaced; a regular file is not */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		ASSERT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	}
	close(fd);
	ASSERT_INT_EQ(ctlsock_start(&cs, path, &ops, NULL), 0);
	fd = dial(path);
	ASSERT(fd >= 0);
	a = ask(fd, "{\"EncryptPath\":\"s\"}", 19);
	ASSERT(a && !strcmp(a, OK("Es")));
	close(fd);
	ctlsock_stop(cs);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	ASSERT(fd >= 0);
	close(fd);
	ASSERT_INT_EQ(ctlsock_start(&cs, path, &ops, NULL), -EADDRINUSE);
	ASSERT(stat(path, &st) == 0 && S_ISREG(st.st_mode));
	unlink(path);
	rmdir(dir);
}

RUN_TESTS(T(answers), T(json_depth_and_trailing_nul), T(json_errors),
	  T(canonical_paths), T(server))
