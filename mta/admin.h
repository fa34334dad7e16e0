/* admin.h — the MTA's admin socket: a UNIX stream socket in queue_dir
 * (admin.sock, mode 0600) over which `mailtierctl queue ...` lists and
 * changes the queue, so the queue database keeps one owner.
 *
 * Protocol (one request line, then the reply; LF line ends):
 *   LIST | SHOW id | FLUSH [id] | HOLD id | RELEASE id | DELETE id | STATS
 *   reply: "+OK text" then data lines and "." alone, or "-ERR text".
 *   No data line starts with ".", so "." alone always ends the reply.
 * Trust boundary: anyone who can connect owns the queue: the socket lives
 * in the daemon's private queue_dir with mode 0600; requests are still
 * bounded (one line of at most 512 octets) and ids checked. */
#ifndef MT_MTA_ADMIN_H
#define MT_MTA_ADMIN_H

struct mta;
struct mta_admin;

#define MTA_ADMIN_SOCKET "admin.sock"

/* Listen on queue_dir/admin.sock; NULL and an error on failure. */
struct mta_admin *mta_admin_new(struct mta *mta, const char **error_r);
void mta_admin_free(struct mta_admin **admin_p);

#endif
