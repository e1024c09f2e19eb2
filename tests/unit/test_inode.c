/* SPDX-License-Identifier: MIT */
/*
 * The inode table's names (src/fs/inode.c): every name the kernel was
 * given for an inode is kept while it lives, however many (hard links),
 * found through the table after it grew, moved and removed one by one; an
 * inode keeps its node id while any name of it is known, and a backing
 * number whose every known name is gone is taken for a new object. No
 * backing object is touched: the stats are made up, and only the table
 * (whose root is a real directory) is exercised.
 */
#include "fs/inode.h"
#include "harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAMES 20000

static struct fs *new_fs(void)
{
	struct fs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->root_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->root_fd < 0 || inode_table_init(fs) < 0) {
		free(fs);
		return NULL;
	}
	return fs;
}

static void free_fs(struct fs *fs)
{
	inode_table_fini(fs);
	close(fs->root_fd);
	free(fs);
}

static struct stat file_st(ino_t ino)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_dev = 4242; /* not the root's device */
	st.st_ino = ino;
	st.st_mode = S_IFREG | 0644;
	st.st_nlink = 1;
	return st;
}

static void name_of(char *buf, size_t n, int i)
{
	snprintf(buf, n, "link%05d", i);
}

/* Whether (parent, name) is a known name of in. */
static int knows(struct fs *fs, struct inode *in, const char *name)
{
	struct inode *f = inode_find_name_pin(fs, &fs->root, name);

	if (!f)
		return 0;
	inode_unpin(fs, f);
	return f == in;
}

TEST(many_names_of_one_file)
{
	struct fs *fs = new_fs();
	struct stat st = file_st(7);
	struct inode *in = NULL, *again;
	char name[32];
	struct loc l;
	int i;

	ASSERT(fs);
	for (i = 0; i < NAMES; i++) {
		name_of(name, sizeof(name), i);
		again = inode_lookup_add(fs, &fs->root, name, &st);
		ASSERT(again);
		if (!in)
			in = again;
		ASSERT(again == in);
	}
	ASSERT_INT_EQ(fs->lcount, NAMES);
	ASSERT(fs->hsize >= NAMES / 2); /* grew with the links */
	for (i = 0; i < NAMES; i++) {
		name_of(name, sizeof(name), i);
		if (!knows(fs, in, name))
			FAILF("name %s forgotten", name);
	}
	/* Looking a name up again makes no second link. */
	name_of(name, sizeof(name), 17);
	ASSERT(inode_lookup_add(fs, &fs->root, name, &st) == in);
	ASSERT_INT_EQ(fs->lcount, NAMES);
	/* Remove every other name, then all but the first one made. */
	for (i = 1; i < NAMES; i += 2) {
		name_of(name, sizeof(name), i);
		inode_unlink_name(fs, in, &fs->root, name);
	}
	ASSERT_INT_EQ(fs->lcount, NAMES / 2);
	for (i = NAMES - 2; i > 0; i -= 2) {
		name_of(name, sizeof(name), i);
		ASSERT(knows(fs, in, name));
		inode_unlink_name(fs, in, &fs->root, name);
		ASSERT(!knows(fs, in, name));
	}
	ASSERT_INT_EQ(fs->lcount, 1);
	/* The name left (the oldest) still leads to the same inode. */
	ASSERT(loc_get(fs, in, &l) == 0);
	ASSERT_STR_EQ(l.name, "link00000");
	loc_put(fs, &l);
	ASSERT(inode_lookup_add(fs, &fs->root, "link00000", &st) == in);
	inode_forget(fs, in, NAMES + 2);
	ASSERT_INT_EQ(fs->lcount, 0);
	ASSERT_INT_EQ(fs->count, 0);
	free_fs(fs);
}

TEST(moves_keep_every_name)
{
	struct fs *fs = new_fs();
	struct stat st = file_st(8);
	struct inode *in = NULL;
	char name[32], to[40];
	int i;

	ASSERT(fs);
	for (i = 0; i < 100; i++) {
		name_of(name, sizeof(name), i);
		in = inode_lookup_add(fs, &fs->root, name, &st);
		ASSERT(in);
	}
	for (i = 0; i < 100; i += 3) {
		name_of(name, sizeof(name), i);
		snprintf(to, sizeof(to), "moved-%s", name);
		inode_move(fs, in, &fs->root, name, &fs->root, to);
		ASSERT(!knows(fs, in, name));
		ASSERT(knows(fs, in, to));
	}
	ASSERT_INT_EQ(fs->lcount, 100);
	/* The most recent name comes first. */
	{
		struct loc l;

		ASSERT(loc_get(fs, in, &l) == 0);
		ASSERT_STR_EQ(l.name, "moved-link00099");
		loc_put(fs, &l);
	}
	inode_forget(fs, in, 100);
	ASSERT_INT_EQ(fs->lcount, 0);
	free_fs(fs);
}

TEST(a_number_without_names_is_a_new_object)
{
	struct fs *fs = new_fs();
	struct stat st = file_st(9);
	struct inode *a, *b;

	ASSERT(fs);
	a = inode_lookup_add(fs, &fs->root, "x", &st);
	ASSERT(a);
	ASSERT(inode_lookup_add(fs, &fs->root, "y", &st) == a);
	inode_unlink_name(fs, a, &fs->root, "x");
	/* A name of it is known still: the same object. */
	ASSERT(inode_lookup_add(fs, &fs->root, "z", &st) == a);
	inode_unlink_name(fs, a, &fs->root, "y");
	inode_unlink_name(fs, a, &fs->root, "z");
	/* Every known name gone, nothing open: the number was reused. */
	b = inode_lookup_add(fs, &fs->root, "w", &st);
	ASSERT(b && b != a);
	inode_forget(fs, a, 3);
	inode_forget(fs, b, 1);
	ASSERT_INT_EQ(fs->count, 0);
	ASSERT_INT_EQ(fs->lcount, 0);
	free_fs(fs);
}

RUN_TESTS(T(many_names_of_one_file), T(moves_keep_every_name),
	  T(a_number_without_names_is_a_new_object))
