/* config.h — the typed, table-driven config file loader.
 *
 * One INI-style file (parsed by inih) with sections. Each section is
 * described by a const table of settings (name, type, default, bounds, the
 * struct field it fills, one line of documentation) plus an optional check
 * function for rules that join keys. Three section kinds:
 *   single  [mta]                     one instance
 *   family  [popstore] [popstore.s1]  a base plus named instances that
 *                                     inherit the base's values
 *   map     [shards]                  arbitrary keys, each value parsed by
 *                                     the section's entry parser
 * Every problem (unknown section or key, duplicate key, bad value, value out
 * of bounds, missing required key, failed check) is collected as
 * "FILE:LINE: message"; loading fails if there is any.
 * Trust boundary: the file is written by the operator (trusted, but checked
 * strictly so mistakes stop start-up with a clear message). */
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mt_setting_type {
	MT_SETTING_STRING,	/* char *, never NULL ("" when unset) */
	MT_SETTING_BOOL,	/* bool: yes/no, true/false, on/off, 1/0 */
	MT_SETTING_UINT,	/* uint64_t, decimal */
	MT_SETTING_SIZE,	/* uint64_t bytes: 640M, 16KiB, 2G, 512 */
	MT_SETTING_DURATION,	/* uint64_t milliseconds: 250ms, 30s, 5m, 1h, 5d */
	MT_SETTING_DURATION_LIST, /* struct mt_duration_list: "1m, 5m, 1h" */
	MT_SETTING_HOSTPORT,	/* struct mt_hostport: host:port, [v6]:port, empty = off */
	MT_SETTING_LIST,	/* struct mt_strlist: comma and/or space separated */
	MT_SETTING_ENUM,	/* unsigned int index into enum_values */
};

#define MT_SETTING_REQUIRED 0x1u	/* no default: the file must set it */

struct mt_hostport {
	char *host;	/* NULL when unset/empty; "*" means any address */
	uint16_t port;
};

struct mt_strlist {
	char **items;
	size_t count;
};

struct mt_duration_list {
	uint64_t *ms;
	size_t count;
};

struct mt_setting_def {
	const char *name;
	enum mt_setting_type type;
	size_t offset;			/* of the field in the section struct */
	const char *default_value;	/* parsed like file input; NULL = empty */
	uint64_t min, max;		/* numeric bounds (in ms/bytes); max 0 = none */
	const char *const *enum_values;	/* ENUM: NULL-terminated */
	unsigned int flags;
	const char *doc;		/* one line: meaning (and unit) */
	const char *readers;		/* for docs: who reads this key, when
					 * not every reader of its section */
};

#define MT_SETTINGS_END { .name = NULL }

struct mt_config;
struct mt_section;
struct mt_config_checker;

enum mt_section_kind { MT_SECTION_SINGLE, MT_SECTION_FAMILY, MT_SECTION_MAP };

struct mt_section_def {
	const char *name;
	enum mt_section_kind kind;
	const char *readers;		/* which daemons read it, for docs */
	const char *doc;
	/* SINGLE and FAMILY */
	size_t struct_size;
	const struct mt_setting_def *settings;
	/* MAP: parse one value into a new object (freed with free_entry). */
	void *(*parse_entry)(const char *key, const char *value, const char **error_r);
	void (*free_entry)(void *entry);
	/* Rules across keys or sections; report with mt_config_check_error(). */
	void (*check)(struct mt_config_checker *checker,
		      const struct mt_config *config,
		      const struct mt_section *section);
};

struct mt_map_entry {
	char *key;
	void *value;
	unsigned int line;
};

struct mt_section {
	const struct mt_section_def *def;
	char *instance;		/* FAMILY: NULL for the base, "s1" for [name.s1] */
	unsigned int line;	/* of the header; 0 when not in the file */
	void *settings;		/* SINGLE/FAMILY: the typed struct */
	unsigned int *key_lines; /* per setting: line that set it, 0 = default */
	struct mt_map_entry *entries;	/* MAP */
	size_t n_entries;
};

struct mt_config {
	char *path;
	struct mt_section *sections;
	size_t n_sections;
};

/* Load and check FILE against the NULL-terminated section tables. On
 * success returns the config; on failure NULL with every problem appended to
 * *errors_r (one "FILE:LINE: message" per line; caller frees). */
struct mt_config *mt_config_load(const char *path,
				 const struct mt_section_def *const *defs,
				 char **errors_r);
void mt_config_free(struct mt_config **config_p);

/* The typed settings of a SINGLE section, or of a FAMILY instance
 * (instance NULL = the base). NULL when a FAMILY instance does not exist;
 * SINGLE sections always exist (defaults when absent from the file). */
const void *mt_config_get(const struct mt_config *config, const char *section,
			  const char *instance);
const struct mt_section *mt_config_section(const struct mt_config *config,
					   const char *section,
					   const char *instance);
/* MAP section value for key, or NULL. */
const void *mt_config_map_get(const struct mt_config *config,
			      const char *section, const char *key);

/* For check functions: report a problem at the line that set KEY (or the
 * section header when KEY is NULL or was not set). */
void mt_config_check_error(struct mt_config_checker *checker,
			   const struct mt_section *section, const char *key,
			   const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Parsers shared with command lines; false with a reason on bad input. */
bool mt_parse_size(const char *s, uint64_t *bytes_r, const char **error_r);
bool mt_parse_duration(const char *s, uint64_t *ms_r, const char **error_r);
bool mt_parse_hostport(const char *s, struct mt_hostport *hp_r,
		       const char **error_r);
void mt_hostport_clear(struct mt_hostport *hp);
/* "host:port", or "[v6]:port" for an IPv6 host (malloc'd): the form
 * mt_parse_hostport() and mt_listener_add() read, and logs show. */
char *mt_hostport_string(const struct mt_hostport *hp);

#endif
