/* ctl.h — mailtierctl's command table and the context every command gets.
 * Each command group lives in its own ctl-*.c file. */
#ifndef MT_CTL_H
#define MT_CTL_H

struct ctl_context {
	const char *config_path;	/* -c FILE, or the default */
	const char *progname;
};

struct ctl_command {
	const char *group;	/* "config" */
	const char *name;	/* "check" */
	const char *usage;	/* arguments, for the usage message */
	const char *help;	/* one line */
	int (*run)(struct ctl_context *ctx, int argc, char **argv);
};

/* Exit statuses: 0 ok, 1 the operation failed or found problems, 2 usage. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAIL 1
#define CTL_EXIT_USAGE 2

int ctl_config_check(struct ctl_context *ctx, int argc, char **argv);
int ctl_config_doc(struct ctl_context *ctx, int argc, char **argv);
int ctl_directory_up(struct ctl_context *ctx, int argc, char **argv);
int ctl_directory_down(struct ctl_context *ctx, int argc, char **argv);
int ctl_users_add(struct ctl_context *ctx, int argc, char **argv);
int ctl_users_del(struct ctl_context *ctx, int argc, char **argv);
int ctl_users_show(struct ctl_context *ctx, int argc, char **argv);
int ctl_users_passwd(struct ctl_context *ctx, int argc, char **argv);
int ctl_users_bulk(struct ctl_context *ctx, int argc, char **argv);
int ctl_users_set_host(struct ctl_context *ctx, int argc, char **argv);
int ctl_queue(struct ctl_context *ctx, int argc, char **argv);
int ctl_store_stat(struct ctl_context *ctx, int argc, char **argv);
int ctl_store_backup(struct ctl_context *ctx, int argc, char **argv);
int ctl_store_folders(struct ctl_context *ctx, int argc, char **argv);
int ctl_store_messages(struct ctl_context *ctx, int argc, char **argv);
int ctl_cluster(struct ctl_context *ctx, int argc, char **argv);

/* Send one request line to the running mailtier-mta's admin socket in
 * queue_dir; the whole reply (NUL-terminated, "+OK"/"-ERR" line first) or
 * NULL after a message on stderr. ctl-queue.c. */
char *ctl_admin_ask(const char *queue_dir, const char *request);

#endif
