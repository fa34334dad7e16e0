/* buf.h — the one growable buffer type for bytes and text. The contents are
 * always NUL-terminated (data[len] == '\0') so text users can treat it as a C
 * string; binary users use len. Trust boundary: none (internal). */
#ifndef MT_BUF_H
#define MT_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct mt_buf {
	char *data;	/* NULL until the first append; mt_buf_cstr() never NULL */
	size_t len;
	size_t cap;
};

#define MT_BUF_INIT { NULL, 0, 0 }

void mt_buf_init(struct mt_buf *buf);
void mt_buf_free(struct mt_buf *buf);
void mt_buf_reset(struct mt_buf *buf);	/* len = 0, keeps the memory */
void mt_buf_reserve(struct mt_buf *buf, size_t extra);
void mt_buf_append(struct mt_buf *buf, const void *data, size_t len);
void mt_buf_append_str(struct mt_buf *buf, const char *s);
void mt_buf_append_char(struct mt_buf *buf, char c);
void mt_buf_appendf(struct mt_buf *buf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mt_buf_vappendf(struct mt_buf *buf, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Insert data[0..len) at offset pos (pos <= buf->len), moving the rest up. */
void mt_buf_insert(struct mt_buf *buf, size_t pos, const void *data, size_t len);
/* Drop the first n bytes (n <= len). */
void mt_buf_consume(struct mt_buf *buf, size_t n);
const char *mt_buf_cstr(const struct mt_buf *buf);
/* Hand over the NUL-terminated contents; the buffer is left empty. */
char *mt_buf_steal(struct mt_buf *buf);

#endif
