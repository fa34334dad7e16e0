/* alloc.c — allocation wrappers; out of memory is a panic, handled here only. */
#include "alloc.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *check(void *p, size_t size)
{
	if (p == NULL && size != 0)
		mt_panic("out of memory allocating %zu bytes", size);
	return p;
}

void *mt_xmalloc(size_t size) { return check(malloc(size ? size : 1), size); }

void *mt_xcalloc(size_t nmemb, size_t size)
{
	if (size != 0 && nmemb > (size_t)-1 / size)
		mt_panic("allocation size overflow: %zu x %zu", nmemb, size);
	return check(calloc(nmemb ? nmemb : 1, size ? size : 1), nmemb * size);
}

void *mt_xrealloc(void *ptr, size_t size)
{
	return check(realloc(ptr, size ? size : 1), size);
}

char *mt_xstrdup(const char *s) { return check(strdup(s), strlen(s) + 1); }

char *mt_xstrndup(const char *s, size_t n) { return check(strndup(s, n), n + 1); }

char *mt_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *out = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&out, fmt, ap);
	va_end(ap);
	if (n < 0)
		mt_panic("out of memory formatting a string");
	return out;
}
