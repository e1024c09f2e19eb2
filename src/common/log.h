/* SPDX-License-Identifier: MIT */
/*
 * Logging to stderr (foreground) or syslog (daemon). Never pass key
 * material, passwords or plaintext to these functions.
 */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LVL_ERR = 0,
	LOG_LVL_WARN = 1,
	LOG_LVL_INFO = 2,
	LOG_LVL_DBG = 3,
};

/* Configure the sink. ident names the program in syslog; level is the most
 * verbose level printed. Safe to call again (e.g. after daemonizing). */
void log_init(const char *ident, bool use_syslog, enum log_level level);
enum log_level log_get_level(void);
/* -wpanic: after a warning is logged, wipe the keys (secmem) and end the
 * process at once with exit status 2, as gocryptfs's panic does. */
void log_set_wpanic(bool on);

void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
