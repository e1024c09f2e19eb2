/* SPDX-License-Identifier: MIT */
/*
 * The command-line actions, one file each under src/cli/. Each takes the
 * parsed flags and returns the process exit code (src/exitcodes.h); main.c
 * picks one and exits with its result.
 */
#ifndef CLI_ACTIONS_H
#define CLI_ACTIONS_H

struct args;

int cli_init(const struct args *a);	     /* init.c: -init */
int cli_passwd(const struct args *a);	     /* passwd.c: -passwd */
int cli_info(const struct args *a);	     /* info.c: -info */
int cli_dumpmasterkey(const struct args *a); /* info.c: -dumpmasterkey */
int cli_mount(const struct args *a);	     /* mount.c: the default */
int cli_speed(const struct args *a);	     /* speed.c: -speed */
int cli_long_help(const struct args *a);    /* help.c: -hh */
int cli_xray(const struct args *a);	     /* xray.c: -xray */
int cli_fsck(const struct args *a);	     /* fsck.c: -fsck [-repair] */

#endif
