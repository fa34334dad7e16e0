/* secret.h — reading a secret from a file named in the config (the
 * directory's bind password, the proxy credential shared by the MMP and
 * the stores, the directory admin's password for mailtierctl): one rule
 * for every reader. The secret is the file's first line without its CR/LF;
 * a missing, unreadable or empty file (or first line) is an error.
 *
 * Trust boundary: the file is the administrator's; its content is never
 * logged, and mt_secret_free() wipes it before freeing.
 * error_r: as everywhere in lib/, a message valid until this thread's next
 * call into the same module. */
#ifndef MT_SECRET_H
#define MT_SECRET_H

/* The secret (malloc'd), or NULL and *error_r "PATH: reason". */
char *mt_secret_read(const char *path, const char **error_r);
/* Overwrite *secret_p, free it and set it to NULL (NULL is fine). */
void mt_secret_free(char **secret_p);

#endif
