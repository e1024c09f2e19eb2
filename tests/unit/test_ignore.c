/* SPDX-License-Identifier: MIT */
/*
 * Exclusion patterns: the cases below were run through the real gocryptfs
 * 2.3 -reverse -plaintextnames on the tree below (as -exclude-wildcard
 * flags), and the list of what it still showed recorded; our matcher, with
 * an entry hidden when it or a directory above it matches, must show the
 * same. Then the line syntax (comments, CR, spaces, negation), texts, limits,
 * and patterns that would make a backtracking matcher take exponential time.
 */
#include "common/ignore.h"
#include "harness.h"

#include <errno.h>
#include <time.h>

/* The probe tree (plaintext paths). */
static const char *const tree[] = {
	"!bang",
	"#c",
	".hidden",
	"[!n]3",
	"a",
	"a(b)",
	"a/.hidden",
	"a/b",
	"a/b/c",
	"a/b/c/deep.txt",
	"a/b/c/g.bin",
	"a/b/f.txt",
	"a/f.txt",
	"ab",
	"br[a]",
	"bra",
	"d",
	"d/b",
	"d/b/h",
	"f.txt",
	"fo+",
	"foo",
	"foo.d",
	"foo.d/z",
	"fooo",
	"n1",
	"n2",
	"n3",
	"q?x",
	"qax",
	"sp ace",
	"sp ace/s",
	"st*r",
	"star",
	"tr ",
	"x",
	"x/a",
	"x/a/i",
	"x|y",
	"y",
};

/* Pattern lines -> paths gocryptfs 2.3 -reverse still showed. */
static const struct {
	const char *lines[3];
	const char *visible;
} gcases[] = {
	{ { "/a" },
	  "!bang\n#c\n.hidden\n[!n]3\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "/a/b" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "b" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/f.txt\nab\nbr[a]\nbra\nd\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "*.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/g.bin\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a/" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx|y\ny" },
	{ { "q?x" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "br[a]" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "st\\*r" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "st*r" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "\\#c" },
	  "!bang\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "#c" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "\\!bang" },
	  "#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "!bang" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "tr " },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "**/b" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/f.txt\nab\nbr[a]\nbra\nd\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a/**" },
	  "!bang\n#c\n.hidden\n[!n]3\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx|y\ny" },
	{ { "a/**/g.bin" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "/b" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "b/h" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "x/a" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx|y\ny" },
	{ { "*/b" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/f.txt\nab\nbr[a]\nbra\nd\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "f*" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { ".hidden" },
	  "!bang\n#c\n[!n]3\na\na(b)\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "sp ace" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "*.d" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "*.d/" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a/b/" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "n[^1]" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "n[1-2]" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "*" },
	  "" },
	{ { "**" },
	  "" },
	{ { "/*" },
	  "" },
	{ { "/**" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a/*" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx|y\ny" },
	{ { "/a/*" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a/*.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a/b/*.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "**/c/*.bin" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "c/*.bin" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "/a/**/deep.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a**" },
	  "!bang\n#c\n.hidden\n[!n]3\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx|y\ny" },
	{ { "x/" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx|y\ny" },
	{ { "q[" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "!" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "x", "!" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx|y\ny" },
	{ { "x", "!x" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "x", "!x/a" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx|y\ny" },
	{ { "f.txt", "!a/f.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "a", "!a/b" },
	  "!bang\n#c\n.hidden\n[!n]3\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx|y\ny" },
	{ { "//a" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "/a/" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "  f.txt  " },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "x\r" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx|y\ny" },
	{ { "a/b/c/" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "**/f.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "/**/f.txt" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "d/**/h" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "*/*/*" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx|y\ny" },
	{ { "[nq]*" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
	{ { "[]]" },
	  "!bang\n#c\n.hidden\n[!n]3\na\na(b)\na/.hidden\na/b\na/b/c\na/b/c/deep.txt\na/b/c/g.bin\na/b/f.txt\na/f.txt\nab\nbr[a]\nbra\nd\nd/b\nd/b/h\nf.txt\nfo+\nfoo\nfoo.d\nfoo.d/z\nfooo\nn1\nn2\nn3\nq?x\nqax\nsp ace\nsp ace/s\nst*r\nstar\ntr \nx\nx/a\nx/a/i\nx|y\ny" },
};

static bool visible(const struct ignore *ig, const char *path)
{
	/* hidden when the path or a directory above it is excluded */
	for (size_t i = 1; path[i - 1]; i++)
		if ((path[i] == '/' || path[i] == '\0') &&
		    ignore_match(ig, path, i))
			return false;
	return true;
}

TEST(same_as_gocryptfs)
{
	char got[4096];

	for (size_t c = 0; c < sizeof(gcases) / sizeof(gcases[0]); c++) {
		struct ignore *ig = NULL;
		size_t o = 0;

		ASSERT_INT_EQ(ignore_new(&ig), 0);
		for (size_t l = 0; l < 3 && gcases[c].lines[l]; l++)
			ASSERT_INT_EQ(ignore_add(ig, gcases[c].lines[l],
						 strlen(gcases[c].lines[l])),
				      0);
		got[0] = '\0';
		for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++) {
			if (!visible(ig, tree[i]))
				continue;
			o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%s",
					      o ? "\n" : "", tree[i]);
		}
		ignore_free(ig);
		if (strcmp(got, gcases[c].visible)) {
			printf("# case %zu, first line '%s'\n", c,
			       gcases[c].lines[0]);
			ASSERT_STR_EQ(got, gcases[c].visible);
		}
	}
}

static bool m1(const char *line, const char *path)
{
	struct ignore *ig = NULL;
	bool r;

	if (ignore_new(&ig) || ignore_add(ig, line, strlen(line)))
		abort();
	r = ignore_match(ig, path, strlen(path));
	ignore_free(ig);
	return r;
}

TEST(line_syntax)
{
	struct ignore *ig = NULL;

	ASSERT_INT_EQ(ignore_new(&ig), 0);
	ASSERT(!ignore_match(ig, "a", 1)); /* empty list */
	ASSERT_INT_EQ(ignore_add(ig, "# comment", 9), 0);
	ASSERT_INT_EQ(ignore_add(ig, "", 0), 0);
	ASSERT_INT_EQ(ignore_add(ig, "   ", 3), 0);
	ASSERT_INT_EQ(ignore_add(ig, "!", 1), 0);
	ASSERT_INT_EQ(ignore_count(ig), 0);
	ASSERT_INT_EQ(ignore_add(ig, "a\0b", 3), -EINVAL);
	ignore_free(ig);
	ignore_free(NULL);

	ASSERT(m1("x\r", "x"));
	ASSERT(m1("  f.txt  ", "a/f.txt"));
	ASSERT(!m1("#c", "#c"));
	ASSERT(m1("\\#c", "#c"));
	ASSERT(m1("!#c", "#c") == false);
	ASSERT(m1("st\\*r", "st*r") && !m1("st\\*r", "star"));
	ASSERT(m1("q?x", "q?x") && !m1("q?x", "qax"));
	ASSERT(m1("a\\", "a") == false); /* dangling escape */
	ASSERT(!m1("q[", "q[")); /* unterminated class */
	ASSERT(m1("n[^1]", "n2") && !m1("n[^1]", "n1"));
	ASSERT(m1("n[!1]", "n!") && m1("n[!1]", "n1") && !m1("n[!1]", "n2"));
	ASSERT(m1("[a-c]x", "bx") && !m1("[a-c]x", "dx"));
	ASSERT(m1("[]]", "]"));
	/* literal here (a regular expression to gocryptfs) */
	ASSERT(m1("fo+", "fo+") && !m1("fo+", "foo"));
	ASSERT(m1("x|y", "x|y") && !m1("x|y", "x"));
	/* anchoring, subtrees */
	ASSERT(m1("/a", "a/b") && !m1("/a", "x/a"));
	ASSERT(m1("a/*.txt", "a/f.txt") && !m1("a/*.txt", "x/a/f.txt"));
	ASSERT(m1("b/h", "d/b/h"));
	ASSERT(m1("a/", "a/x") && !m1("a/", "a"));
	ASSERT(m1("a/**", "a") && m1("a/**", "x/a/y"));
	ASSERT(m1("a/**/g", "a/g") && m1("a/**/g", "a/b/c/g"));
	ASSERT(m1("**/b", "b") && m1("**/b", "x/y/b/z"));
	ASSERT(m1("*", "anything/at/all"));
	ASSERT(!m1("/**", "a"));
}

TEST(last_match_decides)
{
	struct ignore *ig = NULL;
	static const char text[] = "*.bin\r\n# not this\n\n!keep.bin\n"
				   "sub/keep.bin\n";

	ASSERT_INT_EQ(ignore_new(&ig), 0);
	ASSERT_INT_EQ(ignore_add_text(ig, text, strlen(text)), 0);
	ASSERT_INT_EQ(ignore_count(ig), 3);
	ASSERT(ignore_match(ig, "x.bin", 5));
	ASSERT(!ignore_match(ig, "keep.bin", 8));
	ASSERT(ignore_match(ig, "sub/keep.bin", 12));
	ASSERT(!ignore_match(ig, "x.txt", 5));
	ignore_free(ig);
}

TEST(limits_and_no_backtracking)
{
	struct ignore *ig = NULL;
	char *line = malloc(IGNORE_LINE_MAX + 2), *path = malloc(8192);
	struct timespec t0, t1;
	size_t i;

	ASSERT(line && path);
	memset(line, 'a', IGNORE_LINE_MAX + 1);
	ASSERT_INT_EQ(ignore_new(&ig), 0);
	ASSERT_INT_EQ(ignore_add(ig, line, IGNORE_LINE_MAX + 1), -EINVAL);
	/* "*a*a*...*a*b" against "aaaa...": exponential for backtracking */
	for (i = 0; i + 2 < IGNORE_LINE_MAX; i += 2) {
		line[i] = '*';
		line[i + 1] = 'a';
	}
	line[i++] = 'b';
	ASSERT_INT_EQ(ignore_add(ig, line, i), 0);
	ASSERT_INT_EQ(ignore_add(ig, "**/**/**/**/**/**/**/**/**/z", 28), 0);
	memset(path, 'a', 8191);
	path[8191] = '\0';
	for (i = 100; i < 8191; i += 100)
		path[i] = '/';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT(!ignore_match(ig, path, 8191));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* a hang guard, not a speed requirement */
	ASSERT(t1.tv_sec - t0.tv_sec < 60);
	ignore_free(ig);
	free(line);
	free(path);
}

RUN_TESTS(T(same_as_gocryptfs), T(line_syntax), T(last_match_decides),
	  T(limits_and_no_backtracking))
