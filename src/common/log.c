/* SPDX-License-Identifier: MIT */
/*
 * Logging sink shared by every module. One line per call; a prefix names the
 * level. Thread-safe: stdio and syslog lock internally.
 */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

#include "common/secmem.h"

/* Go's exit status after a panic (src/exitcodes.h: EXIT_WPANIC). */
#define WPANIC_STATUS 2

static bool g_syslog;
static bool g_wpanic;
static enum log_level g_level = LOG_LVL_INFO;

void log_init(const char *ident, bool use_syslog, enum log_level level)
{
	if (g_syslog && !use_syslog)
		closelog();
	g_syslog = use_syslog;
	g_level = level;
	if (use_syslog)
		openlog(ident, LOG_PID, LOG_USER);
}

enum log_level log_get_level(void)
{
	return g_level;
}

void log_set_wpanic(bool on)
{
	g_wpanic = on;
}

static __attribute__((format(printf, 2, 0))) void
vlog(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *const tag[] = { "error: ", "warning: ", "", "debug: " };
	char buf[1024];

	if (lvl > g_level && !(lvl == LOG_LVL_WARN && g_wpanic))
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (g_syslog)
		syslog(prio[lvl], "%s", buf);
	else
		fprintf(stderr, "veilfs: %s%s\n", tag[lvl], buf);
	if (lvl == LOG_LVL_WARN && g_wpanic) {
		if (g_syslog)
			syslog(LOG_ERR, "-wpanic turns this warning into an "
					"exit");
		else
			fputs("veilfs: -wpanic turns this warning into an "
			      "exit\n", stderr);
		secmem_wipe_all();
		_exit(WPANIC_STATUS);
	}
}

#define DEFINE_LOG(fn, lvl)                   \
	void fn(const char *fmt, ...)         \
	{                                     \
		va_list ap;                   \
		va_start(ap, fmt);            \
		vlog(lvl, fmt, ap);           \
		va_end(ap);                   \
	}

DEFINE_LOG(log_err, LOG_LVL_ERR)
DEFINE_LOG(log_warn, LOG_LVL_WARN)
DEFINE_LOG(log_info, LOG_LVL_INFO)
DEFINE_LOG(log_dbg, LOG_LVL_DBG)
