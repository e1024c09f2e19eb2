/* SPDX-License-Identifier: MIT */
/*
 * Reverse mode (spec §5): the frontend fs_reverse shows a plaintext
 * directory as the read-only, deterministic ciphertext view gocryptfs
 * -reverse shows, byte for byte. This header is what the CLI needs: the
 * frontend's options for fs_new, and the path translation a control socket
 * answers with.
 */
#ifndef FS_RFS_H
#define FS_RFS_H

#include <stdbool.h>

struct fs;
struct ignore;

/* fs_new's fe_arg for fs_reverse (copied; exclude is borrowed and must
 * outlive the fs). */
struct rfs_options {
	/* Plaintext paths hidden from the view (EPERM when asked for by
	 * name); NULL: none. The root and the config are never hidden. */
	const struct ignore *exclude;
	/* Directories on another filesystem show up empty. */
	bool one_file_system;
	/* Show .gocryptfs.reverse.conf of the root as gocryptfs.conf, with
	 * its own bytes (false when -config names another file). */
	bool map_conf;
};

/*
 * Path translation for a control socket (gocryptfs's EncryptPath and
 * DecryptPath in reverse mode): a relative plaintext path of the directory
 * ("a/b", "" for the root; no leading slash, "." and ".." refused) to the
 * relative path of the same entry in the view, and back. Only string and
 * name work for the way up; the way back reads the directories the path
 * passes (long names are found by encrypting what a directory holds), all
 * relative to the root with O_NOFOLLOW. As with gocryptfs, only names are
 * translated: the config is not mapped. *out is malloc'ed (caller frees).
 * rfs_encrypt_path returns 0, -EINVAL (malformed path or name), -EPERM (an
 * excluded path) or -ENOMEM; rfs_decrypt_path 0, -ENOMEM or -ENOENT for
 * everything else (as gocryptfs answers). Safe to call from any thread
 * while the fs serves requests.
 */
int rfs_encrypt_path(struct fs *fs, const char *plain, char **out);
int rfs_decrypt_path(struct fs *fs, const char *cipher, char **out);

#endif
