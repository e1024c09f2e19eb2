// SPDX-License-Identifier: MIT
/*
 * -h and -hh: the short help and the long one. -hh lists every flag of the
 * parser's table (src/cli/args.c), sorted, with one line each; a flag
 * without a line here still appears, pointing to veilfs(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/actions.h"
#include "cli/args.h"
#include "cli/common.h"
#include "exitcodes.h"

static const struct {
	const char *name, *arg, *text;
} lines[] = {
	{ "acl", NULL, "Enforce POSIX ACLs (kept unencrypted, as gocryptfs)" },
	{ "aessiv", NULL, "AES-SIV encryption (-init)" },
	{ "allow_other", NULL, "Allow other users to access the filesystem" },
	{ "badname", "PATTERN", "Show undecryptable names matching PATTERN" },
	{ "cipher-impl", "NAME", "Use this implementation (see -speed)" },
	{ "config", "FILE", "Use FILE instead of CIPHERDIR/gocryptfs.conf" },
	{ "cpuprofile", "FILE", "Accepted; veilfs writes no Go profile" },
	{ "ctlsock", "PATH", "Create a control socket at PATH" },
	{ "d", NULL, "Alias for -debug" },
	{ "debug", NULL, "Enable debug output" },
	{ "deterministic-names", NULL, "Disable diriv name randomisation" },
	{ "dev", NULL, "Allow device files (root only)" },
	{ "devrandom", NULL, "Obsolete, accepted and ignored" },
	{ "dumpmasterkey", NULL, "Print the master key of CIPHERDIR" },
	{ "e", "PATH", "Alias for -exclude" },
	{ "ew", "PATTERN", "Alias for -exclude-wildcard" },
	{ "exclude", "PATH", "Reverse mode: hide PATH from the view" },
	{ "exclude-from", "FILE",
	  "Reverse mode: hide what FILE's gitignore patterns match" },
	{ "exclude-wildcard", "PATTERN",
	  "Reverse mode: hide what the gitignore PATTERN matches" },
	{ "exec", NULL, "Allow executables (default)" },
	{ "extpass", "CMD", "Use an external program for the password" },
	{ "f", NULL, "Alias for -fg" },
	{ "fg", NULL, "Stay in the foreground" },
	{ "fido2", "DEV", "Refused: veilfs cannot use FIDO2 tokens (exit 31)" },
	{ "force-impl", "NAME", "Alias for -cipher-impl" },
	{ "force_owner", "UID:GID", "Show every file as owned by UID:GID" },
	{ "forcedecode", NULL, "Obsolete, accepted and ignored" },
	{ "foreground", NULL, "Alias for -fg" },
	{ "fsck", NULL, "Check CIPHERDIR without mounting it" },
	{ "fsname", "NAME", "Override the filesystem name" },
	{ "fusedebug", NULL, "Enable libfuse debug output" },
	{ "gcm", NULL, "AES-GCM encryption (-init; the default)" },
	{ "h", NULL, "Short help" },
	{ "help", NULL, "Short help" },
	{ "hh", NULL, "This long help" },
	{ "hkdf", NULL, "HKDF key derivation (default true)" },
	{ "i", "DURATION", "Alias for -idle" },
	{ "idle", "DURATION",
	  "Unmount after this idle time, e.g. 90s or 2h45m (0: never)" },
	{ "impl", "NAME", "Alias for -cipher-impl" },
	{ "info", NULL, "Display information about CIPHERDIR" },
	{ "init", NULL, "Initialize encrypted directory" },
	{ "kernel_cache", NULL, "Keep the kernel's page cache across opens" },
	{ "ko", "OPTS", "Pass mount options to the kernel (last word)" },
	{ "longnamemax", "N", "Hash encrypted names longer than N (-init)" },
	{ "longnames", NULL, "Hash long names (default true)" },
	{ "masterkey", "HEX|stdin", "Mount with explicit master key" },
	{ "memprofile", "FILE", "Accepted; veilfs writes no Go profile" },
	{ "nodev", NULL, "Deny device files (default; wins over -dev)" },
	{ "noexec", NULL, "Deny executables (wins over -exec)" },
	{ "nofail", NULL, "For /etc/fstab; accepted, no effect" },
	{ "nonempty", NULL, "Allow mounting over non-empty directories" },
	{ "noprealloc", NULL, "Disable preallocation before writing" },
	{ "nosuid", NULL, "Deny suid binaries (default; wins over -suid)" },
	{ "nosyslog", NULL, "Do not log to syslog in the background" },
	{ "noxattr", NULL, "No extended attributes (faster ls -l)" },
	{ "notifypid", "PID", "Send SIGUSR1 to PID after a successful mount" },
	{ "o", "OPTS", "Flags without dash, others to FUSE (mount(8) style)" },
	{ "one-file-system", NULL,
	  "Reverse mode: show other filesystems' mount points empty" },
	{ "openssl", "true|false|auto", "Prefer OpenSSL, or not (default auto)" },
	{ "passfile", "FILE", "Read the password from FILE" },
	{ "passwd", NULL, "Change password" },
	{ "plaintextnames", NULL, "Do not encrypt file names (-init)" },
	{ "q", NULL, "Alias for -quiet" },
	{ "quarantine", "DIR", "Keep what -repair replaces in DIR" },
	{ "quiet", NULL, "Silence informational messages" },
	{ "raw64", NULL, "Unpadded base64 for names (default true)" },
	{ "repair", NULL, "-fsck: repair what can be saved, keeping copies" },
	{ "repair-truncate", NULL,
	  "Like -repair, cutting files before their first bad block" },
	{ "reverse", NULL, "Reverse mode: an encrypted view of a plain dir" },
	{ "ro", NULL, "Mount read-only (wins over -rw)" },
	{ "rw", NULL, "Mount read-write (default)" },
	{ "scryptn", "N", "scrypt cost parameter logN (default 16)" },
	{ "serialize_reads", NULL, "Serve one read at a time" },
	{ "sharedstorage", NULL, "Several mounts share the cipherdir (locks)" },
	{ "speed", NULL, "Run crypto speed test" },
	{ "suid", NULL, "Allow suid binaries (root only)" },
	{ "trace", "FILE", "Accepted; veilfs writes no Go trace" },
	{ "version", NULL, "Print version and exit" },
	{ "wpanic", NULL, "Exit at the first warning" },
	{ "xchacha", NULL, "XChaCha20-Poly1305 encryption (-init)" },
	{ "xray", NULL, "Show the blocks of a ciphertext FILE (gocryptfs-xray)" },
	{ "zerokey", NULL, "All-zero dummy master key (tests only)" },
};

struct entry {
	const char *name;
	bool value;
};

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct entry *)x)->name,
		      ((const struct entry *)y)->name);
}

int cli_long_help(const struct args *a)
{
	struct entry e[256];
	size_t n = 0;

	(void)a;
	cli_usage(stdout);
	fputs("\nAll options can use \"-\" or \"--\"; a standalone \"--\" ends "
	      "them.\n\nOptions:\n", stdout);
	while (n < sizeof(e) / sizeof(e[0]) &&
	       (e[n].name = args_flag(n, &e[n].value)))
		n++;
	qsort(e, n, sizeof(e[0]), by_name);
	for (size_t i = 0; i < n; i++) {
		const char *arg = "VALUE", *text = "(see veilfs(1))";
		char left[64];

		for (size_t k = 0; k < sizeof(lines) / sizeof(lines[0]); k++)
			if (!strcmp(lines[k].name, e[i].name)) {
				arg = lines[k].arg ? lines[k].arg : arg;
				text = lines[k].text;
			}
		snprintf(left, sizeof(left), "-%s%s%s", e[i].name,
			 e[i].value ? " " : "", e[i].value ? arg : "");
		printf("  %-30s %s\n", left, text);
	}
	return EXIT_OK;
}
