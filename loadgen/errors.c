/* errors.c — the messages loadgen functions hand back, kept for the
 * process's life (the rule: errors.h). A short list searched by text: a
 * process sees a handful of distinct failures. A mutex, so that a message
 * may be kept from any thread.
 * Trust boundary: none (see errors.h). */
#include "errors.h"

#include "alloc.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct kept {
	struct kept *next;
	char text[];
};

static pthread_mutex_t lg_errors_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept *lg_errors_kept;

const char *lg_error_keep(const char *message)
{
	struct kept *k;

	if (message == NULL)
		message = "(no reason given)";
	pthread_mutex_lock(&lg_errors_lock);
	for (k = lg_errors_kept; k != NULL; k = k->next)
		if (strcmp(k->text, message) == 0)
			break;
	if (k == NULL) {
		size_t len = strlen(message);
		k = mt_xmalloc(sizeof(*k) + len + 1);
		memcpy(k->text, message, len + 1);
		k->next = lg_errors_kept;
		lg_errors_kept = k;
	}
	pthread_mutex_unlock(&lg_errors_lock);
	return k->text;
}

const char *lg_error_fmt(const char *fmt, ...)
{
	/* Formatted on the stack first: an argument may be a kept message. */
	char text[LG_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return lg_error_keep(text);
}

bool lg_error_kept(const char **error_r)
{
	*error_r = lg_error_keep(*error_r);
	return false;
}
