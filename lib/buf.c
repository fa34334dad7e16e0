/* buf.c — growable byte/text buffer (see buf.h). */
#include "buf.h"
#include "alloc.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_buf_init(struct mt_buf *buf)
{
	buf->data = NULL;
	buf->len = buf->cap = 0;
}

void mt_buf_free(struct mt_buf *buf)
{
	free(buf->data);
	mt_buf_init(buf);
}

void mt_buf_reset(struct mt_buf *buf)
{
	buf->len = 0;
	if (buf->data != NULL)
		buf->data[0] = '\0';
}

void mt_buf_reserve(struct mt_buf *buf, size_t extra)
{
	if (extra > (size_t)-1 / 2 - buf->len)
		mt_panic("buffer size overflow (%zu + %zu)", buf->len, extra);
	size_t need = buf->len + extra + 1;
	if (need <= buf->cap)
		return;
	size_t cap = buf->cap ? buf->cap : 64;
	while (cap < need)
		cap *= 2;
	buf->data = mt_xrealloc(buf->data, cap);
	buf->cap = cap;
	buf->data[buf->len] = '\0';	/* a first reserve keeps the NUL too */
}

void mt_buf_append(struct mt_buf *buf, const void *data, size_t len)
{
	mt_buf_reserve(buf, len);
	if (len != 0)
		memcpy(buf->data + buf->len, data, len);
	buf->len += len;
	buf->data[buf->len] = '\0';
}

void mt_buf_insert(struct mt_buf *buf, size_t pos, const void *data, size_t len)
{
	if (pos > buf->len)
		mt_panic("mt_buf_insert at %zu past the end (%zu)", pos, buf->len);
	mt_buf_reserve(buf, len);
	if (len == 0)
		return;
	memmove(buf->data + pos + len, buf->data + pos, buf->len - pos);
	memcpy(buf->data + pos, data, len);
	buf->len += len;
	buf->data[buf->len] = '\0';
}

void mt_buf_append_str(struct mt_buf *buf, const char *s)
{
	mt_buf_append(buf, s, strlen(s));
}

void mt_buf_append_char(struct mt_buf *buf, char c)
{
	mt_buf_append(buf, &c, 1);
}

void mt_buf_vappendf(struct mt_buf *buf, const char *fmt, va_list ap)
{
	va_list ap2;
	char probe[1];
	va_copy(ap2, ap);
	int n = vsnprintf(probe, sizeof(probe), fmt, ap2);
	va_end(ap2);
	if (n < 0)
		mt_panic("bad format string: %s", fmt);
	mt_buf_reserve(buf, (size_t)n);
	vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap);
	buf->len += (size_t)n;
}

void mt_buf_appendf(struct mt_buf *buf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_buf_vappendf(buf, fmt, ap);
	va_end(ap);
}

void mt_buf_consume(struct mt_buf *buf, size_t n)
{
	if (n > buf->len)
		mt_panic("mt_buf_consume past the end (%zu > %zu)", n, buf->len);
	memmove(buf->data, buf->data + n, buf->len - n);
	buf->len -= n;
	buf->data[buf->len] = '\0';
}

const char *mt_buf_cstr(const struct mt_buf *buf)
{
	return buf->data != NULL ? buf->data : "";
}

char *mt_buf_steal(struct mt_buf *buf)
{
	char *s = buf->data != NULL ? buf->data : mt_xstrdup("");
	mt_buf_init(buf);
	return s;
}
