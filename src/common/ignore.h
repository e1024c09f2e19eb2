/* SPDX-License-Identifier: MIT */
/*
 * Exclusion patterns of reverse mode (spec §5.6): lines in gitignore syntax
 * matched against relative plaintext paths ("dir/file", no leading slash),
 * the way gocryptfs 2.3 applies them, so that one list hides the same files
 * under both programs. In the examples, S stands for a slash.
 *
 *  - A line starting with '#' is a comment. Spaces around a line and a
 *    trailing CR are cut. A leading '!' negates; after it, one more leading
 *    '#' or '!' is dropped. A backslash makes the next byte literal ("\#",
 *    "\!", "\*"); a line ending in a lone backslash matches nothing.
 *  - '*' is a run of bytes other than a slash. Two stars next to a slash
 *    are git's: "**Sb" (b at any depth), "aS**" (a and all below it),
 *    "aS**Sb" (b anywhere below a). '?' and '.' are literal. [...] is a
 *    class of bytes, [^...] its complement ('!' in it is a member); an
 *    unterminated '[' makes the line match nothing.
 *  - A line beginning with a slash is anchored at the root, and so is one
 *    in which a slash right after a name is followed, later, by a star and
 *    a dot ("dirS*.txt"). Every other line matches at any depth, even with
 *    slashes inside: "bSh" matches "dSbSh".
 *  - A match covers the path and everything below it; a line ending in a
 *    slash covers only what is below ("aS" hides what a holds, not a).
 *  - The last line that matches decides (a negated one shows again).
 *
 * gocryptfs hands a line to a regular-expression engine; the other
 * characters of that syntax ('+', '|', '(', '^', '$', '{', ...) are literal
 * here.
 */
#ifndef COMMON_IGNORE_H
#define COMMON_IGNORE_H

#include <stdbool.h>
#include <stddef.h>

/* Longest line accepted. */
#define IGNORE_LINE_MAX 4096

struct ignore;

/* An empty list (matches nothing). Returns 0 or -ENOMEM. Caller frees. */
int ignore_new(struct ignore **out);
void ignore_free(struct ignore *ig);

/* Add one line (len bytes, no newline; comments and blank lines add
 * nothing). Returns 0, -ENOMEM, or -EINVAL for a line longer than
 * IGNORE_LINE_MAX or containing NUL. */
int ignore_add(struct ignore *ig, const char *line, size_t len);
/* Add every line of a text (split at '\n'). Returns as ignore_add. */
int ignore_add_text(struct ignore *ig, const char *text, size_t len);
/* Number of patterns added (comments and blank lines not counted). */
size_t ignore_count(const struct ignore *ig);

/* Does the list exclude path (len bytes)? Thread-safe for concurrent
 * callers once no ignore_add runs. */
bool ignore_match(const struct ignore *ig, const char *path, size_t len);

#endif
