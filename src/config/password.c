/* SPDX-License-Identifier: MIT */
/*
 * Password input (spec §1.7). Reads go straight into a locked buffer, one
 * byte at a time from stdin so that a second password on the next line
 * (-passwd reads old and new from stdin) is left for the next call.
 */
#include "config/password.h"
#include "common/log.h"
#include "common/secmem.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define BUF_LEN (PASSWORD_MAX + 1)
/* gocryptfs reads this much of a passfile: password, '\n', one more byte. */
#define PASSFILE_READ (PASSWORD_MAX + 2)
/* A passfile that is no regular file (a FIFO, <(cmd)) must deliver within
 * this many seconds; an extpass program must exit this long after its
 * first line, and may print at most DRAIN_MAX bytes after it. */
#define WAIT_S 10
#define DRAIN_MAX (1 << 20)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is readable or end_ms (CLOCK_MONOTONIC) has passed.
 * Returns 1 (readable or hung up), 0 (time is up) or -errno. */
static int wait_readable(int fd, int64_t end_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int64_t left = end_ms - now_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

static void seterr(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, PASSWORD_ERR_LEN, fmt, ap);
	va_end(ap);
}

void password_free(struct password *pw)
{
	if (pw->buf)
		secmem_free(pw->buf, BUF_LEN);
	pw->buf = NULL;
	pw->len = 0;
}

static int alloc_buf(struct password *pw)
{
	if (pw->buf)
		return 0;
	pw->buf = secmem_alloc(BUF_LEN);
	pw->len = 0;
	return pw->buf ? 0 : -ENOMEM;
}

/* Read one line (without '\n') from fd into buf, byte by byte. Returns the
 * length, or -E2BIG if longer than max, or -errno. */
static ssize_t read_line(int fd, uint8_t *buf, size_t max)
{
	size_t n = 0;
	bool toolong = false;

	for (;;) {
		uint8_t ch;
		ssize_t r = read(fd, &ch, 1);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0 || ch == '\n')
			break;
		if (n < max)
			buf[n++] = ch;
		else
			toolong = true;
	}
	return toolong ? -E2BIG : (ssize_t)n;
}

static int read_passfile(struct password *pw, const char *path, char *err)
{
	uint8_t *tmp = NULL;
	size_t n = 0, line;
	int64_t end = now_ms() + WAIT_S * 1000;
	struct stat st;
	bool slow;
	int fd, rc = 0;

	/* O_NONBLOCK: a FIFO opens at once, writer or not. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		seterr(err, "passfile: could not open '%s': %s", path,
		       strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		seterr(err, "passfile: '%s': %s", path, strerror(-rc));
		goto out;
	}
	/* A pipe or FIFO gets WAIT_S seconds for everything it sends. */
	slow = !S_ISREG(st.st_mode);
	tmp = secmem_alloc(PASSFILE_READ);
	if (!tmp) {
		rc = -ENOMEM;
		seterr(err, "out of memory");
		goto out;
	}
	while (n < PASSFILE_READ) {
		ssize_t r;

		if (slow && (rc = wait_readable(fd, end)) <= 0) {
			if (!rc)
				rc = -ETIMEDOUT;
			seterr(err, "passfile: '%s' sent no password within %d "
				    "seconds", path, WAIT_S);
			goto out;
		}
		rc = 0;
		r = read(fd, tmp + n, PASSFILE_READ - n);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = -errno;
			seterr(err, "passfile: could not read '%s': %s", path,
			       strerror(-rc));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	for (line = 0; line < n && tmp[line] != '\n'; line++)
		;
	if (line == 0) {
		rc = -ENODATA;
		seterr(err, "passfile: empty first line in '%s'", path);
		goto out;
	}
	if (line > PASSWORD_MAX) {
		rc = -EINVAL;
		seterr(err, "passfile: max password length (%d bytes) "
			    "exceeded in '%s'", PASSWORD_MAX, path);
		goto out;
	}
	if (line + 1 < n)
		log_warn("passfile: ignoring trailing garbage (%zu bytes) "
			 "after the first line of '%s'", n - line - 1, path);
	if (pw->len + line > PASSWORD_MAX) {
		rc = -EINVAL;
		seterr(err, "passfile: max password length (%d bytes) "
			    "exceeded", PASSWORD_MAX);
		goto out;
	}
	memcpy(pw->buf + pw->len, tmp, line);
	pw->len += line;
out:
	if (tmp)
		secmem_free(tmp, PASSFILE_READ);
	close(fd);
	return rc;
}

/* Build argv for -extpass: one string is split on spaces, several are used
 * as they are. Returns a malloc'ed NULL-terminated vector (and *store, the
 * copy the split pointers point into). */
static char **extpass_argv(const struct password_src *src, char **store)
{
	char **argv;
	size_t n = 0;

	*store = NULL;
	if (src->nextpass == 1) {
		/* Split at every space, as gocryptfs does: two spaces in a
		 * row make an empty argument (so "echo  pw" gives " pw"),
		 * and a leading one an empty command. */
		char *s = strdup(src->extpass[0]), *p;

		if (!s)
			return NULL;
		argv = calloc(strlen(s) + 2, sizeof(*argv));
		if (!argv) {
			free(s);
			return NULL;
		}
		for (p = s; p; n++)
			argv[n] = strsep(&p, " ");
		*store = s;
		return argv;
	}
	argv = calloc(src->nextpass + 1, sizeof(*argv));
	if (!argv)
		return NULL;
	for (size_t i = 0; i < src->nextpass; i++)
		argv[i] = (char *)(uintptr_t)src->extpass[i];
	return argv;
}

/* Whether the extpass program has exited (reaped into *status). No such
 * child (ECHILD: someone else reaped it, or SIGCHLD is ignored and the
 * kernel did) counts as exited, with *status as it was. */
static bool extpass_exited(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, WNOHANG);
	while (r < 0 && errno == EINTR);
	return r == pid || (r < 0 && errno == ECHILD);
}

/* Read the first line of an extpass program's output (fd) into pw: up to
 * the newline, or stop one byte past the longest password (*toolong, as
 * for `cat /dev/zero`). After the newline, what follows is drained, so that
 * the program does not die of SIGPIPE, but for WAIT_S seconds and
 * DRAIN_MAX bytes at most (`yes` prints forever). The program itself is
 * watched meanwhile: once it has exited (*reaped), what it wrote is read
 * without waiting for the end of the pipe, which a child it left in the
 * background may hold open for as long as it lives. Returns 0, -ETIMEDOUT
 * or -errno. */
static int extpass_collect(struct password *pw, int fd, pid_t pid,
			   int *status, bool *reaped, bool *eol, bool *toolong)
{
	const int64_t slice_ms = 20;
	uint8_t chunk[256];
	size_t drained = 0;
	int64_t end = 0;
	int rc = 0;

	for (;;) {
		ssize_t r;

		if (*reaped && *eol)
			break;
		if (*eol && now_ms() >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		rc = wait_readable(fd, *reaped ? now_ms() + 1 :
				   now_ms() + slice_ms);
		if (rc < 0)
			break;
		if (rc == 0) {
			if (*reaped)
				break; /* exited, and nothing more came */
			*reaped = extpass_exited(pid, status);
			continue;
		}
		rc = 0;
		r = read(fd, chunk, sizeof(chunk));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		for (ssize_t i = 0; i < r && !*eol; i++) {
			if (chunk[i] == '\n') {
				*eol = true;
				end = now_ms() + WAIT_S * 1000;
			} else if (pw->len < PASSWORD_MAX) {
				pw->buf[pw->len++] = chunk[i];
			} else {
				*toolong = true;
				break;
			}
		}
		secure_zero(chunk, sizeof(chunk));
		if (*toolong)
			break;
		if (*eol && (drained += (size_t)r) > DRAIN_MAX) {
			rc = -ETIMEDOUT;
			break;
		}
		if (*eol && !*reaped)
			*reaped = extpass_exited(pid, status);
	}
	secure_zero(chunk, sizeof(chunk));
	return rc;
}

/* Reap the extpass program; one that has not exited WAIT_S seconds after
 * we stopped reading is killed, and -ETIMEDOUT returned. */
static int extpass_wait(pid_t pid, int *status)
{
	int64_t end = now_ms() + WAIT_S * 1000;
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	while (!extpass_exited(pid, status)) {
		if (now_ms() >= end) {
			kill(pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		nanosleep(&tick, NULL);
	}
	return 0;
}

static int read_extpass(struct password *pw, const struct password_src *src,
			char *err)
{
	char *store = NULL, **argv = extpass_argv(src, &store);
	int pfd[2] = { -1, -1 }, status = 0, rc = 0, rc2;
	bool eol = false, toolong = false, reaped = false;
	pid_t pid;

	if (!argv) {
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	if (!argv[0] || !argv[0][0]) {
		rc = -EINVAL;
		seterr(err, "extpass: empty command");
		goto out;
	}
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		rc = -errno;
		seterr(err, "extpass: pipe: %s", strerror(-rc));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		seterr(err, "extpass: fork: %s", strerror(-rc));
		goto out;
	}
	if (pid == 0) {
		/* stdin is not the program's: a password on our stdin, or a
		 * script's input, is not for it to swallow (gocryptfs gives
		 * it /dev/null too) */
		int nul = open("/dev/null", O_RDONLY);

		if (nul < 0 || dup2(nul, STDIN_FILENO) < 0 ||
		    dup2(pfd[1], STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "extpass: cannot run '%s': %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	pfd[1] = -1;
	rc = extpass_collect(pw, pfd[0], pid, &status, &reaped, &eol,
			     &toolong);
	/* Whatever it still prints is not read: let it end. */
	close(pfd[0]);
	pfd[0] = -1;
	rc2 = reaped ? 0 : extpass_wait(pid, &status);
	if (!rc)
		rc = rc2;
	if (toolong) {
		rc = -EINVAL;
		seterr(err, "extpass: max password length (%d bytes) exceeded",
		       PASSWORD_MAX);
		goto out;
	}
	if (rc == -ETIMEDOUT) {
		seterr(err, "extpass program did not end within %d seconds "
			    "and %d bytes after its first line", WAIT_S,
		       DRAIN_MAX);
		goto out;
	}
	if (rc) {
		seterr(err, "extpass: %s", strerror(-rc));
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rc = -EIO;
		seterr(err, "extpass program returned an error");
		goto out;
	}
	if (pw->len == 0) {
		rc = -ENODATA;
		seterr(err, "extpass: password is empty");
	}
out:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	free(argv);
	free(store);
	return rc;
}

/* Prompt on stderr and read one line from the terminal on stdin without
 * echo. */
/* Terminal state to put back if a signal ends us during a prompt. */
static struct termios g_saved_tty;
static volatile sig_atomic_t g_tty_dirty;

static void restore_tty_and_die(int sig)
{
	if (g_tty_dirty)
		tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_tty);
	signal(sig, SIG_DFL);
	raise(sig);
}

static ssize_t read_tty(uint8_t *buf, const char *prompt)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa = { .sa_handler = restore_tty_and_die };
	struct sigaction oldsa[4];
	struct termios raw;
	bool restore = false;
	ssize_t n;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &oldsa[i]);
	/* Echo goes off before the prompt appears, so nothing typed in
	 * answer to it can be echoed. */
	if (tcgetattr(STDIN_FILENO, &g_saved_tty) == 0) {
		raw = g_saved_tty;
		raw.c_lflag &= ~(tcflag_t)ECHO;
		raw.c_lflag |= ECHONL;
		g_tty_dirty = 1;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
			restore = true;
	}
	fputs(prompt, stderr);
	fflush(stderr);
	n = read_line(STDIN_FILENO, buf, PASSWORD_MAX);
	if (restore)
		tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_tty);
	else
		fputc('\n', stderr);
	g_tty_dirty = 0;
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &oldsa[i], NULL);
	return n;
}

static int read_interactive(struct password *pw, const char *prompt,
			    bool twice, char *err)
{
	uint8_t *again = NULL;
	ssize_t n, m;
	int rc = 0;

	if (!isatty(STDIN_FILENO)) {
		log_info("Reading Password from stdin");
		n = read_line(STDIN_FILENO, pw->buf, PASSWORD_MAX);
		if (n == -E2BIG) {
			seterr(err, "stdin: max password length (%d bytes) "
				    "exceeded", PASSWORD_MAX);
			return -EINVAL;
		}
		if (n < 0) {
			seterr(err, "stdin: %s", strerror((int)-n));
			return (int)n;
		}
		if (n == 0) {
			seterr(err, "Got empty Password from stdin");
			return -ENODATA;
		}
		pw->len = (size_t)n;
		return 0;
	}
	n = read_tty(pw->buf, prompt ? prompt : "Password: ");
	if (n == -E2BIG) {
		seterr(err, "max password length (%d bytes) exceeded",
		       PASSWORD_MAX);
		return -EINVAL;
	}
	if (n < 0) {
		seterr(err, "terminal: %s", strerror((int)-n));
		return (int)n;
	}
	if (n == 0) {
		seterr(err, "Password is empty");
		return -ENODATA;
	}
	pw->len = (size_t)n;
	if (!twice)
		return 0;
	again = secmem_alloc(BUF_LEN);
	if (!again) {
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	m = read_tty(again, "Repeat: ");
	if (m != n || !ct_equal(again, pw->buf, (size_t)n)) {
		seterr(err, "Passwords do not match");
		rc = -EINVAL;
	}
	secmem_free(again, BUF_LEN);
	return rc;
}

int password_read(struct password *pw, const struct password_src *src,
		  const char *prompt, bool twice,
		  char err[static PASSWORD_ERR_LEN])
{
	int rc;

	err[0] = '\0';
	rc = alloc_buf(pw);
	if (rc) {
		seterr(err, "out of memory");
		return rc;
	}
	pw->len = 0;
	if (src && src->npassfiles) {
		for (size_t i = 0; i < src->npassfiles; i++) {
			log_info("passfile: reading from file '%s'",
				 src->passfiles[i]);
			rc = read_passfile(pw, src->passfiles[i], err);
			if (rc)
				goto out;
		}
	} else if (src && src->nextpass) {
		log_info("Reading password from extpass program '%s'",
			 src->extpass[0]);
		rc = read_extpass(pw, src, err);
	} else {
		rc = read_interactive(pw, prompt, twice, err);
	}
out:
	if (rc) {
		secure_zero(pw->buf, BUF_LEN);
		pw->len = 0;
	}
	return rc;
}
