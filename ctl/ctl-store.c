/* ctl-store.c — `mailtierctl store stat SHARD`, `mailtierctl store
 * folders SHARD USER` (a user's IMAP folders and their counts), `mailtierctl
 * store messages SHARD USER [FOLDER]` (each message's uid, MODSEQ, UIDL,
 * flags: what replicas compare) and `mailtierctl store backup SHARD DIR`: a shard's store inspected and copied while its daemon
 * serves, by joining the Berkeley DB environment in the store's ADMIN mode
 * (store/store.h; it recovers the environment first if its owner died).
 *
 * A site of a replicated shard (replication_listen set) is opened only
 * while its mailtier-popstore runs (the store's ADMIN open refuses it
 * otherwise, told by .replication): with the daemon gone, opening would run
 * Berkeley DB recovery without replication, writing log records of this
 * site's own into a group whose log only the master writes (HA.md §5.3:
 * mailtierctl never recovers a replicated environment; the daemon does,
 * as it rejoins).
 *
 * Trust boundary: run by the operator; SHARD must name a [popstore.SHARD]
 * section (or [popstore] with shard=SHARD), DIR must be absent or empty
 * (the store refuses anything else). Nothing from the network. */
#include "ctl.h"
#include "mailtier-settings.h"
#include "popstore/popstore-settings.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The shard's settings, chosen as mailtier-popstore -s SHARD does. */
static const struct mt_popstore_settings *
shard_settings(struct ctl_context *ctx, const struct mt_config *config,
	       const char *shard)
{
	const struct mt_popstore_settings *set = mt_config_get(config, "popstore", shard);
	if (set == NULL) {
		const struct mt_popstore_settings *base = mt_config_get(config, "popstore", NULL);
		if (strcmp(base->shard, shard) == 0)
			set = base;
	}
	if (set == NULL || set->db_home[0] == '\0') {
		fprintf(stderr, "%s: %s: no [popstore.%s] section with a db_home\n",
			ctx->progname, ctx->config_path, shard);
		return NULL;
	}
	return set;
}

static struct mt_store *admin_open(struct ctl_context *ctx,
				   const struct mt_popstore_settings *set)
{
	/* A site of a replicated shard: the store refuses to open it unless
	 * its daemon runs (it would recover it without replication). */
	const struct mt_store_replication repl = { .listen = set->replication_listen };
	const struct mt_store_settings ss = {
		.home = set->db_home, .mode = MT_STORE_MODE_ADMIN,
		.cache_size = set->db_cache_size,
		.replication = set->replication_listen[0] != '\0' ? &repl : NULL,
	};
	struct mt_store *store = NULL;
	const char *error;
	enum mt_store_status status = mt_store_open(&ss, &store, &error);
	if (status != MT_STORE_OK) {
		fprintf(stderr, "%s: store %s: %s: %s\n", ctx->progname, set->db_home,
			mt_store_status_name(status), error);
		return NULL;
	}
	return store;
}

/* Check the arguments (argv[1] the shard; usage names the subcommand and
 * its arguments), load the config and open the shard's store; CTL_EXIT_OK
 * or the exit code. */
static int store_begin(struct ctl_context *ctx, int argc, char **argv, int args_min,
		       int args_max, const char *usage, struct mt_config **config_r,
		       const struct mt_popstore_settings **set_r, struct mt_store **store_r)
{
	if (argc < args_min || argc > args_max) {
		fprintf(stderr, "usage: %s [-c FILE] store %s\n", ctx->progname, usage);
		return CTL_EXIT_USAGE;
	}
	const char *shard = argv[1];
	char *errors = NULL;
	*config_r = mt_mailtier_config_load(ctx->config_path, &errors);
	if (*config_r == NULL) {
		fputs(errors, stderr);
		free(errors);
		return CTL_EXIT_FAIL;
	}
	*set_r = shard_settings(ctx, *config_r, shard);
	*store_r = *set_r != NULL ? admin_open(ctx, *set_r) : NULL;
	if (*store_r == NULL) {
		mt_config_free(config_r);
		return CTL_EXIT_FAIL;
	}
	return CTL_EXIT_OK;
}

int ctl_store_stat(struct ctl_context *ctx, int argc, char **argv)
{
	struct mt_config *config;
	const struct mt_popstore_settings *set;
	struct mt_store *store;
	int ret = store_begin(ctx, argc, argv, 2, 2, "stat SHARD", &config, &set, &store);
	if (ret != CTL_EXIT_OK)
		return ret;

	struct mt_store_stat st;
	const char *error;
	enum mt_store_status status = mt_store_stat_get(store, &st, &error);
	if (status != MT_STORE_OK) {
		fprintf(stderr, "%s: store stat: %s: %s\n", ctx->progname,
			mt_store_status_name(status), error);
		ret = CTL_EXIT_FAIL;
	} else {
		char when[64] = "never";
		if (st.ckp_time != 0) {
			time_t t = (time_t)st.ckp_time;
			struct tm tm;
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z",
				 localtime_r(&t, &tm));
		}
		printf("shard: %s\n", argv[1]);
		printf("db_home: %s\n", set->db_home);
		printf("format_version: %" PRIu32 "\n", st.format_version);
		printf("mailboxes: %" PRIu64 "\n", st.mailboxes);
		printf("messages: %" PRIu64 "\n", st.messages);
		printf("bytes: %" PRIu64 "\n", st.bytes);
		printf("purge_messages: %" PRIu64 "\n", st.purge_messages);
		printf("purge_bytes: %" PRIu64 "\n", st.purge_bytes);
		printf("partial_bodies: %" PRIu64 "\n", st.partial_bodies);
		printf("partial_bytes: %" PRIu64 "\n", st.partial_bytes);
		printf("log_files: %u\n", st.log_files);
		printf("log_first_file: %" PRIu32 "\n", st.log_first_file);
		printf("log_end: %" PRIu32 "/%" PRIu32 "\n", st.log_file, st.log_offset);
		printf("checkpoint: %" PRIu32 "/%" PRIu32 "\n", st.ckp_file, st.ckp_offset);
		printf("checkpoint_time: %s\n", when);
		printf("env_log_flushes: %" PRIu64 "\n", st.env_log_flushes);
		printf("env_commits: %" PRIu64 "\n", st.env_commits);
		printf("env_flushes_per_commit: %.3f\n", st.env_commits == 0 ? 0.0 :
		       (double)st.env_log_flushes / (double)st.env_commits);
		printf("cache_size: %" PRIu64 "\n", st.cache_size);
		printf("cache_hits: %" PRIu64 "\n", st.cache_hits);
		printf("cache_misses: %" PRIu64 "\n", st.cache_misses);
	}
	mt_store_close(&store);
	mt_config_free(&config);
	return ret;
}

int ctl_store_backup(struct ctl_context *ctx, int argc, char **argv)
{
	struct mt_config *config;
	const struct mt_popstore_settings *set;
	struct mt_store *store;
	int ret = store_begin(ctx, argc, argv, 3, 3, "backup SHARD DIR", &config, &set, &store);
	if (ret != CTL_EXIT_OK)
		return ret;
	const char *error;
	enum mt_store_status status = mt_store_backup(store, argv[2], &error);
	if (status != MT_STORE_OK) {
		fprintf(stderr, "%s: store backup: %s: %s\n", ctx->progname,
			mt_store_status_name(status), error);
		ret = CTL_EXIT_FAIL;
	} else
		printf("backup of shard %s (%s) written to %s\n", argv[1], set->db_home,
		       argv[2]);
	mt_store_close(&store);
	mt_config_free(&config);
	return ret;
}

int ctl_store_folders(struct ctl_context *ctx, int argc, char **argv)
{
	struct mt_config *config;
	const struct mt_popstore_settings *set;
	struct mt_store *store;
	int ret = store_begin(ctx, argc, argv, 3, 3, "folders SHARD USER", &config, &set,
			      &store);
	if (ret != CTL_EXIT_OK)
		return ret;
	struct mt_store_folder *folders;
	unsigned int count;
	const char *error;
	enum mt_store_status status =
		mt_store_folders_list_sync(store, argv[2], &folders, &count, &error);
	if (status != MT_STORE_OK) {
		fprintf(stderr, "%s: store folders: %s: %s\n", ctx->progname,
			mt_store_status_name(status), error);
		ret = CTL_EXIT_FAIL;
	} else {
		printf("%-40s %8s %8s %8s %12s %10s %8s %s\n", "folder", "messages", "unseen",
		       "deleted", "bytes", "uidvalid", "uidnext", "flags");
		for (unsigned int i = 0; i < count; i++) {
			const struct mt_store_folder *f = &folders[i];
			const char *use = mt_store_special_use_name(f->special_use);
			printf("%-40s %8u %8u %8u %12" PRIu64 " %10u %8u %s%s%s\n", f->name,
			       f->messages, f->messages - f->seen, f->deleted, f->bytes,
			       f->uidvalidity, f->uidnext, use != NULL ? use : "",
			       f->subscribed ? (use != NULL ? " subscribed" : "subscribed") : "",
			       f->exists ? "" : " nonexistent");
		}
		mt_store_folders_free(&folders, count);
	}
	mt_store_close(&store);
	mt_config_free(&config);
	return ret;
}

/* One folder's state and its messages, a line each (what a replica or a
 * moved mailbox must hold the same). */
static void messages_print(const char *folder, const struct mt_store_mailbox *mbox)
{
	printf("folder %s uidvalidity %u uidnext %u highestmodseq %" PRIu64 " messages %u\n",
	       folder, mt_store_mailbox_uidvalidity(mbox), mt_store_mailbox_uidnext(mbox),
	       mt_store_mailbox_highest_modseq(mbox), mt_store_mailbox_count(mbox));
	for (unsigned int i = 0; i < mt_store_mailbox_count(mbox); i++) {
		const struct mt_store_msg *m = mt_store_mailbox_msg(mbox, i);
		printf("%u modseq %" PRIu64 " size %" PRIu64 " internaldate %" PRId64
		       " uidl %s flags (", m->uid, m->modseq, m->size, m->arrival, m->uidl);
		const char *sep = "";
		for (size_t k = 0; k < MT_STORE_FLAG_COUNT; k++) {
			if (m->flags & mt_store_flag_names[k].bit) {
				printf("%s%s", sep, mt_store_flag_names[k].name);
				sep = " ";
			}
		}
		for (unsigned int k = 0; k < MT_STORE_KEYWORDS_MAX; k++) {
			const char *kw;
			if ((m->keywords & UINT64_C(1) << k) &&
			    (kw = mt_store_mailbox_keyword(mbox, k)) != NULL) {
				printf("%s%s", sep, kw);
				sep = " ";
			}
		}
		printf(")\n");
	}
}

int ctl_store_messages(struct ctl_context *ctx, int argc, char **argv)
{
	struct mt_config *config;
	const struct mt_popstore_settings *set;
	struct mt_store *store;
	int ret = store_begin(ctx, argc, argv, 3, 4, "messages SHARD USER [FOLDER]", &config,
			      &set, &store);
	if (ret != CTL_EXIT_OK)
		return ret;
	struct mt_store_folder *folders = NULL;
	unsigned int count = 0;
	const char *error;
	enum mt_store_status status = MT_STORE_OK;
	if (argc == 3)
		status = mt_store_folders_list_sync(store, argv[2], &folders, &count, &error);
	for (unsigned int i = 0; status == MT_STORE_OK && i < (argc == 4 ? 1u : count); i++) {
		const char *name = argc == 4 ? argv[3] : folders[i].name;
		if (argc == 3 && !folders[i].exists)
			continue;
		struct mt_store_mailbox *mbox;
		status = mt_store_folder_open_sync(store, argv[2], name, &mbox, &error);
		if (status == MT_STORE_OK) {
			messages_print(name, mbox);
			mt_store_mailbox_close(&mbox);
		}
	}
	if (status != MT_STORE_OK) {
		fprintf(stderr, "%s: store messages: %s: %s\n", ctx->progname,
			mt_store_status_name(status), error);
		ret = CTL_EXIT_FAIL;
	}
	mt_store_folders_free(&folders, count);
	mt_store_close(&store);
	mt_config_free(&config);
	return ret;
}
