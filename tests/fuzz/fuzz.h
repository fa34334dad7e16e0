/* fuzz.h — shared by the libFuzzer targets in tests/fuzz/: the entry point,
 * a property check that aborts with a message (so libFuzzer and the
 * standalone regression runner both report a broken property as a crash),
 * a reader that splits one fuzz input into parameters, data and command
 * lines, and reference models written independently of the code under
 * test: a UTF-8 validator and the verb lookup of a command table.
 *
 * Trust boundary: the input is arbitrary bytes from the fuzzer or a corpus
 * file. Each target is built twice: with clang and -fsanitize=fuzzer (`make
 * fuzz`), and with the normal compiler and standalone-main.c (`make check`,
 * which runs every corpus file once). */
#ifndef MT_FUZZ_H
#define MT_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the code under test must keep: abort() with why when not. */
#define FUZZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: property failed: %s: ",	\
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

/* The unread part of a fuzz input; parameters are taken from its front. */
struct fuzz_input {
	const uint8_t *data;
	size_t len;
};

/* One parameter octet from the front (0 once the input is used up). */
static inline uint8_t fuzz_byte(struct fuzz_input *in)
{
	uint8_t b;

	if (in->len == 0)
		return 0;
	b = in->data[0];
	in->data++;
	in->len--;
	return b;
}

/* The next command line, up to LF (a CR before it is dropped, as
 * lib/lineio does), as a malloc'd C string (a NUL inside ends it, as for
 * the dispatcher); NULL once the input is used up. */
static inline char *fuzz_line(struct fuzz_input *in)
{
	if (in->len == 0)
		return NULL;
	const uint8_t *nl = memchr(in->data, '\n', in->len);
	size_t len = nl != NULL ? (size_t)(nl - in->data) : in->len;
	char *line = malloc(len + 1);
	FUZZ_CHECK(line != NULL, "malloc");
	memcpy(line, in->data, len);
	line[len] = '\0';
	if (len > 0 && line[len - 1] == '\r')
		line[len - 1] = '\0';
	in->data += nl != NULL ? len + 1 : len;
	in->len -= nl != NULL ? len + 1 : len;
	return line;
}

/* Reference verb lookup (RFC 1939 3, RFC 5321 4.1.1): the index in
 * names[0..count) of the text before line's first space, compared without
 * case, or count; *arg_r: what follows that space (NULL without one). */
static inline size_t fuzz_ref_command(const char *line, const char *const *names,
				      size_t count, const char **arg_r)
{
	const char *space = strchr(line, ' ');
	size_t vlen = space != NULL ? (size_t)(space - line) : strlen(line);

	*arg_r = space != NULL ? space + 1 : NULL;
	for (size_t i = 0; i < count; i++)
		if (strlen(names[i]) == vlen && strncasecmp(names[i], line, vlen) == 0)
			return i;
	return count;
}

/* A tiny deterministic generator for chunk sizes and split points, so one
 * input always replays the same way. */
static inline uint32_t fuzz_rand(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

/* Chunk strategy 0..3: whole input, octet by octet, 1..7, 1..limit. */
static inline size_t fuzz_chunk(unsigned int strategy, uint32_t *state,
				size_t left, size_t limit)
{
	size_t n;

	switch (strategy & 3) {
	case 0:
		n = left;
		break;
	case 1:
		n = 1;
		break;
	case 2:
		n = 1 + fuzz_rand(state) % 7;
		break;
	default:
		n = 1 + fuzz_rand(state) % (limit > 0 ? limit : 1);
		break;
	}
	return n < left ? n : left;
}

/* Reference RFC 3629 validator: decode each sequence to its code point and
 * reject overlong forms, surrogates and anything above U+10FFFF. */
static inline bool fuzz_utf8_valid(const uint8_t *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n;

		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0) {
			n = 2;
			cp = s[i] & 0x1f;
		} else if ((s[i] & 0xf0) == 0xe0) {
			n = 3;
			cp = s[i] & 0x0f;
		} else if ((s[i] & 0xf8) == 0xf0) {
			n = 4;
			cp = s[i] & 0x07;
		} else {
			return false;
		}
		if (len - i < n)
			return false;
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		    (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

#endif
