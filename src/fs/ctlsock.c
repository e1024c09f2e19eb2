// SPDX-License-Identifier: MIT
/*
 * The control socket (see ctlsock.h). Requests are decoded as Go's
 * encoding/json would decode them into gocryptfs's request struct (keys
 * matched without regard to case, unknown keys ignored, null meaning
 * absent), the path is made canonical the way gocryptfs does it (leading
 * slashes dropped, then cleaned like Go's path.Clean; a path that climbs
 * above the root is empty), and answers are encoded the way Go's
 * json.Marshal writes them (HTML characters and invalid UTF-8 escaped).
 *
 * One thread serves every connection with poll(2) on non-blocking sockets,
 * at a lowered priority, so that no client, however slow or busy, can hold
 * up a FUSE worker or another client; connections beyond CLIENTS_MAX wait
 * in the listen backlog (SOMAXCONN, as Go's) until a client leaves or one
 * has been idle for IDLE_MS, whose place the next one takes. A client that
 * does not read its answers is dropped once the socket buffer is full.
 */
#include "fs/ctlsock.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/utf8.h"

#define CLIENTS_MAX 64
#define JSON_DEPTH_MAX 10000
/* A client idle this long may lose its place to a new one (when full). */
#define IDLE_MS 1000
/* How long the listener rests when accepting fails for want of fds. */
#define PAUSE_MS 100
#define READ_BUF (CTLSOCK_MAX_REQ + 1)
/* Nice value of the socket thread: below the FUSE workers. */
#define THREAD_NICE 10

struct ctlsock {
	const struct ctlsock_ops *ops;
	void *arg;
	char *path;
	const char *base; /* in path: the socket's name in its directory */
	int dirfd;	  /* O_PATH: the directory it was made in */
	dev_t dev;
	ino_t ino;
	int lfd;
	int wake[2];
	pthread_t thread;
};

/* ---- a growable string ------------------------------------------------ */

struct buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2 + 64;
		char *ns = realloc(b->s, cap);

		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* ---- Go-compatible JSON output ---------------------------------------- */

static void put_json_string(struct buf *b, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	char esc[8];
	size_t i = 0, k;
	uint32_t cp;

	put(b, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			esc[0] = '\\', esc[1] = (char)c;
			put(b, esc, 2);
			i++;
		} else if (c == '\n' || c == '\r' || c == '\t') {
			esc[0] = '\\', esc[1] = c == '\n' ? 'n' :
						 c == '\r' ? 'r' : 't';
			put(b, esc, 2);
			i++;
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
			snprintf(esc, sizeof(esc), "\\u00%c%c", hex[c >> 4],
				 hex[c & 15]);
			put(b, esc, 6);
			i++;
		} else if (c < 0x80) {
			put(b, (const char *)s + i, 1);
			i++;
		} else if (!(k = utf8_len(s + i, n - i, &cp))) {
			puts_(b, "\\ufffd");
			i++;
		} else if (cp == 0x2028 || cp == 0x2029) {
			puts_(b, cp == 0x2028 ? "\\u2028" : "\\u2029");
			i += k;
		} else {
			put(b, (const char *)s + i, k);
			i += k;
		}
	}
	put(b, "\"", 1);
}

/* gocryptfs answers with Go's error strings: the C library's, lower-case
 * first letter (both come from the same table of Linux messages). */
static void errno_text(int err, char *out, size_t cap)
{
	const char *m = strerrordesc_np(err);

	snprintf(out, cap, "%s", m ? m : "unknown error");
	out[0] = (char)tolower((unsigned char)out[0]);
}

static char *reply(const char *result, int errnum, const char *errtext,
		   const char *warn)
{
	struct buf b = { 0 };
	char num[24];

	puts_(&b, "{\"Result\":");
	put_json_string(&b, result, strlen(result));
	snprintf(num, sizeof(num), ",\"ErrNo\":%d,\"ErrText\":", errnum);
	puts_(&b, num);
	put_json_string(&b, errtext, strlen(errtext));
	puts_(&b, ",\"WarnText\":");
	put_json_string(&b, warn, strlen(warn));
	puts_(&b, "}\n");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* ---- request decoding ------------------------------------------------- */

struct request {
	const char *enc, *dec; /* borrowed from the parsed object, or NULL */
	size_t enc_len, dec_len;
};

/* Decode req into *obj and r. Returns 0, or -EINVAL with the message in
 * err. */
static int parse_request(const char *req, size_t len, struct json_object **obj,
			 struct request *r, char *err, size_t errcap)
{
	/* nesting as deep as Go's decoder takes */
	struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH_MAX);
	struct json_object *o = NULL;
	char *text = malloc(len + 1);
	size_t used;

	*obj = NULL;
	memset(r, 0, sizeof(*r));
	if (!tok || !text) {
		json_tokener_free(tok);
		free(text);
		snprintf(err, errcap, "out of memory");
		return -EINVAL;
	}
	/* A space ends a number or literal at the end of the text
	 * (json-c would wait for more). */
	memcpy(text, req, len);
	text[len] = ' ';
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	if (len > 0)
		o = json_tokener_parse_ex(tok, text, (int)len + 1);
	free(text);
	if (len == 0 || json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		snprintf(err, errcap, "JSON Unmarshal error: %s",
			 len == 0 || e == json_tokener_continue
				 ? "unexpected end of JSON input"
				 : json_tokener_error_desc(e));
		json_object_put(o);
		json_tokener_free(tok);
		return -EINVAL;
	}
	used = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	for (; used < len; used++) {
		if (!req[used] || !strchr(" \t\r\n", req[used])) {
			snprintf(err, errcap,
				 "JSON Unmarshal error: invalid character "
				 "'%c' after top-level value",
				 isprint((unsigned char)req[used]) ? req[used]
								   : '?');
			json_object_put(o);
			return -EINVAL;
		}
	}
	*obj = o;
	if (!o) /* null: nothing set */
		return 0;
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errcap,
			 "JSON Unmarshal error: the request is no JSON object");
		return -EINVAL;
	}
	/* Go matches struct fields without regard to case; the last key
	 * that matches wins. */
	json_object_object_foreach(o, key, val)
	{
		bool is_enc = !strcasecmp(key, "EncryptPath");
		bool is_dec = !strcasecmp(key, "DecryptPath");

		/* a null leaves the field as it was, as in Go */
		if ((!is_enc && !is_dec) || !val)
			continue;
		if (!json_object_is_type(val, json_type_string)) {
			snprintf(err, errcap,
				 "JSON Unmarshal error: %s is no string",
				 is_enc ? "EncryptPath" : "DecryptPath");
			return -EINVAL;
		}
		if (is_enc) {
			r->enc = json_object_get_string(val);
			r->enc_len = (size_t)json_object_get_string_len(val);
		} else {
			r->dec = json_object_get_string(val);
			r->dec_len = (size_t)json_object_get_string_len(val);
		}
	}
	return 0;
}

/* ---- canonical paths -------------------------------------------------- */

/* Leading slashes dropped, then Go's path.Clean: no empty or "."
 * components, ".." removes the component before it. A path whose ".."
 * would leave the root (or that is empty after cleaning) gives "". */
static char *canonical(const char *in, size_t len)
{
	char *out = malloc(len + 1);
	size_t o = 0, i = 0;

	if (!out)
		return NULL;
	while (i < len && in[i] == '/')
		i++;
	while (i < len) {
		size_t j = i, n;

		while (j < len && in[j] != '/')
			j++;
		n = j - i;
		if (n == 0 || (n == 1 && in[i] == '.')) {
			/* skip */
		} else if (n == 2 && in[i] == '.' && in[i + 1] == '.') {
			if (o == 0) {
				out[0] = '\0';
				return out;
			}
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--; /* the slash before it */
		} else {
			if (o)
				out[o++] = '/';
			memcpy(out + o, in + i, n);
			o += n;
		}
		i = j + 1;
	}
	out[o] = '\0';
	return out;
}

char *ctlsock_answer(const struct ctlsock_ops *ops, void *arg,
		     const char *req, size_t len)
{
	struct json_object *obj = NULL;
	struct request r;
	char err[256], *warn = NULL;
	const char *in;
	size_t in_len;
	char *clean = NULL, *res = NULL, *ans;
	bool enc;
	int rc;

	if (parse_request(req, len, &obj, &r, err, sizeof(err))) {
		ans = reply("", -1, err, "");
		goto out;
	}
	if (r.enc_len && r.dec_len) {
		ans = reply("", -1, "Ambiguous", "");
		goto out;
	}
	if (!r.enc_len && !r.dec_len) {
		ans = reply("", -1, "Empty input", "");
		goto out;
	}
	enc = r.enc_len != 0;
	in = enc ? r.enc : r.dec;
	in_len = enc ? r.enc_len : r.dec_len;
	if (memchr(in, '\0', in_len)) {
		/* a NUL inside the JSON string: no valid name has one */
		errno_text(EBADMSG, err, sizeof(err));
		ans = reply("", -1, err, "");
		goto out;
	}
	clean = canonical(in, in_len);
	if (!clean) {
		ans = NULL;
		goto out;
	}
	if (strlen(clean) != in_len || memcmp(clean, in, in_len)) {
		struct buf w = { 0 };

		puts_(&w, "Non-canonical input path '");
		put(&w, in, in_len);
		puts_(&w, "' has been interpreted as '");
		puts_(&w, clean);
		puts_(&w, "'.");
		if (w.oom) {
			free(w.s);
			ans = NULL;
			goto out;
		}
		warn = w.s;
	}
	if (!*clean) {
		ans = reply("", -1, "Empty input after canonicalization",
			    warn ? warn : "");
		goto out;
	}
	rc = enc ? ops->encrypt_path(arg, clean, &res)
		 : ops->decrypt_path(arg, clean, &res);
	if (rc) {
		errno_text(-rc, err, sizeof(err));
		ans = reply("", rc == -ENOENT ? ENOENT : -1, err,
			    warn ? warn : "");
	} else {
		ans = reply(res, 0, "", warn ? warn : "");
	}
out:
	free(warn);
	free(res);
	free(clean);
	json_object_put(obj);
	return ans;
}

/* ---- the server ------------------------------------------------------- */

/* Serve one readable client; false: close it. */
static bool serve(struct ctlsock *cs, int fd, char *buf)
{
	ssize_t n, w;
	char *ans;
	size_t len;

	n = read(fd, buf, READ_BUF);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	if (n >= READ_BUF) {
		log_info("ctlsock: request too big (max = %d bytes)",
			 CTLSOCK_MAX_REQ);
		return false;
	}
	ans = ctlsock_answer(cs->ops, cs->arg, buf, (size_t)n);
	if (!ans)
		return false;
	len = strlen(ans);
	w = send(fd, ans, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	free(ans);
	return w == (ssize_t)len;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The slot of the client idle longest, if it has been for IDLE_MS. */
static size_t idle_client(const uint64_t *seen, size_t n, uint64_t now,
			  int *wait_ms)
{
	size_t i, old = 0;

	for (i = 1; i < n; i++)
		if (seen[i] < seen[old])
			old = i;
	if (now - seen[old] >= IDLE_MS)
		return old;
	*wait_ms = (int)(IDLE_MS - (now - seen[old]));
	return n;
}

static void *serve_thread(void *arg)
{
	struct ctlsock *cs = arg;
	struct pollfd p[2 + CLIENTS_MAX];
	int clients[CLIENTS_MAX];
	uint64_t seen[CLIENTS_MAX], now, pause_until = 0;
	size_t n = 0;
	char *buf = malloc(READ_BUF);

	if (setpriority(PRIO_PROCESS, (id_t)gettid(), THREAD_NICE) < 0)
		log_dbg("ctlsock: cannot lower the thread priority: %s",
			strerror(errno));
	while (buf) {
		size_t np = 0, i, k, evict = CLIENTS_MAX;
		int wait_ms = -1;
		bool listen_now;

		now = now_ms();
		/* Full: a new client takes the place of the one idle for
		 * longest, once that one has been for IDLE_MS (64 clients
		 * that connect and say nothing keep no one else out). Out of
		 * fds: the listener rests a while instead of waking us at
		 * once, forever. */
		listen_now = now >= pause_until;
		if (!listen_now)
			wait_ms = (int)(pause_until - now);
		else if (n == CLIENTS_MAX) {
			evict = idle_client(seen, n, now, &wait_ms);
			listen_now = evict < n;
		}
		p[np++] = (struct pollfd){ .fd = cs->wake[0], .events = POLLIN };
		p[np++] = (struct pollfd){
			.fd = listen_now ? cs->lfd : -1,
			.events = POLLIN,
		};
		for (i = 0; i < n; i++)
			p[np++] = (struct pollfd){ .fd = clients[i],
						   .events = POLLIN };
		if (poll(p, np, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			log_err("ctlsock: poll: %s", strerror(errno));
			break;
		}
		if (p[0].revents)
			break;
		now = now_ms();
		for (i = 0, k = 0; i < n; i++) {
			if (!p[2 + i].revents) {
				seen[k] = seen[i];
				clients[k++] = clients[i];
			} else if (serve(cs, clients[i], buf)) {
				seen[k] = now;
				clients[k++] = clients[i];
			} else {
				close(clients[i]);
			}
		}
		n = k;
		if (!(p[1].revents & POLLIN))
			continue;
		if (n == CLIENTS_MAX) {
			/* still full: the longest idle goes, if it still is */
			evict = idle_client(seen, n, now, &wait_ms);
			if (evict == n)
				continue;
			close(clients[evict]);
			clients[evict] = clients[--n];
			seen[evict] = seen[n];
		}
		clients[n] = accept4(cs->lfd, NULL, NULL,
				     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (clients[n] >= 0) {
			seen[n++] = now;
		} else if (errno == EMFILE || errno == ENFILE ||
			   errno == ENOBUFS || errno == ENOMEM) {
			pause_until = now + PAUSE_MS;
		}
	}
	for (size_t i = 0; i < n; i++)
		close(clients[i]);
	free(buf);
	return NULL;
}

/* bind with mode 0600 from the start (the umask is process-wide, but no
 * other thread creates files while the daemon starts). */
static int bind_private(int fd, const struct sockaddr_un *sa)
{
	mode_t old = umask(0177);
	int rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int err = errno;

	umask(old);
	return rc < 0 ? -err : 0;
}

/* A socket file nobody listens on (left by a daemon that was killed). */
static bool is_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	return rc < 0 && errno == ECONNREFUSED;
}

int ctlsock_start(struct ctlsock **out, const char *path,
		  const struct ctlsock_ops *ops, void *arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ctlsock *cs;
	struct stat st;
	int rc;

	*out = NULL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	cs->ops = ops;
	cs->arg = arg;
	cs->wake[0] = cs->wake[1] = -1;
	cs->dirfd = -1;
	cs->path = strdup(path);
	cs->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			 0);
	if (!cs->path || cs->lfd < 0) {
		rc = cs->path ? -errno : -ENOMEM;
		goto fail;
	}
	rc = bind_private(cs->lfd, &sa);
	if (rc == -EADDRINUSE && is_stale(&sa)) {
		log_info("ctlsock: replacing the stale socket '%s'", path);
		if (unlink(path) == 0)
			rc = bind_private(cs->lfd, &sa);
	}
	if (rc)
		goto fail;
	/* The directory the socket is in, as it is now: the socket is
	 * removed through it at the end, when the path may lead through
	 * this very mount (-ctlsock MNT/sock), which no longer answers. */
	cs->base = strrchr(cs->path, '/');
	cs->base = cs->base ? cs->base + 1 : cs->path;
	if (cs->base == cs->path) {
		cs->dirfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		char *dir = strndup(cs->path, (size_t)(cs->base - cs->path));

		cs->dirfd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)
				: -1;
		free(dir);
	}
	if (cs->dirfd < 0 || listen(cs->lfd, SOMAXCONN) < 0 ||
	    fstatat(cs->dirfd, cs->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		unlink(path);
		goto fail;
	}
	cs->dev = st.st_dev;
	cs->ino = st.st_ino;
	if (pipe2(cs->wake, O_CLOEXEC) < 0) {
		rc = -errno;
		unlink(path);
		goto fail;
	}
	/* Signals stay with the threads libfuse set up for them. */
	rc = -thread_start_quiet(&cs->thread, NULL, serve_thread, cs);
	if (rc) {
		unlink(path);
		goto fail;
	}
	*out = cs;
	return 0;
fail:
	if (cs->dirfd >= 0)
		close(cs->dirfd);
	if (cs->lfd >= 0)
		close(cs->lfd);
	if (cs->wake[0] >= 0) {
		close(cs->wake[0]);
		close(cs->wake[1]);
	}
	free(cs->path);
	free(cs);
	return rc;
}

void ctlsock_stop(struct ctlsock *cs)
{
	struct stat st;

	if (!cs)
		return;
	if (write(cs->wake[1], "x", 1) != 1)
		log_err("ctlsock: cannot stop the socket thread");
	else
		pthread_join(cs->thread, NULL);
	close(cs->lfd);
	close(cs->wake[0]);
	close(cs->wake[1]);
	if (fstatat(cs->dirfd, cs->base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == cs->dev && st.st_ino == cs->ino)
		unlinkat(cs->dirfd, cs->base, 0);
	close(cs->dirfd);
	free(cs->path);
	free(cs);
}
