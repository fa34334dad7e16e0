/* alloc.h — allocation wrappers: the one place where running out of memory is
 * handled (logged as a panic, then abort). Callers never check for NULL.
 * Trust boundary: none (internal). */
#ifndef MT_ALLOC_H
#define MT_ALLOC_H

#include <stddef.h>

void *mt_xmalloc(size_t size);
void *mt_xcalloc(size_t nmemb, size_t size);
void *mt_xrealloc(void *ptr, size_t size);
char *mt_xstrdup(const char *s);
char *mt_xstrndup(const char *s, size_t n);
/* printf into a freshly allocated string. */
char *mt_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Free *ptr_p and set it to NULL (destructors take &ptr). */
#define MT_FREE(ptr_p) do { free(*(ptr_p)); *(ptr_p) = NULL; } while (0)

#endif
