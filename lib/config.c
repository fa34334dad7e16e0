/* config.c — loads one INI-style config file through typed section tables
 * (see config.h). Phase 1 reads raw "key = value" entries with their line
 * numbers (inih does the INI syntax; our reader counts lines, strips leading
 * blanks so indentation never means "continuation", and reports overlong
 * and malformed lines). Phase 2 types every value through the tables,
 * applies defaults and family inheritance, and runs the check functions.
 * Trust boundary: operator-written file; all problems are collected. */
#include "config.h"
#include "alloc.h"
#include "buf.h"
#include "log.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* inih's stack line buffer is INI_MAX_LINE (200) including the NUL. */
#define RAW_LINE_MAX (INI_MAX_LINE - 2)

struct raw_entry {
	char *key;
	char *value;
	unsigned int line;
};

struct raw_section {
	char *name;		/* full header, e.g. "popstore.s1" */
	unsigned int line;
	bool known;
	struct raw_entry *entries;
	size_t n_entries;
};

struct mt_config_checker {
	const char *path;
	struct mt_buf errors;
	unsigned int n_errors;
};

struct load_state {
	FILE *file;
	unsigned int lineno;
	char *linebuf;
	size_t linecap;
	const struct mt_section_def *const *defs;
	struct raw_section *raws;
	size_t n_raws;
	struct raw_section *current;	/* NULL before the first header */
	struct mt_config_checker checker;
};

static void add_error(struct mt_config_checker *checker, unsigned int line,
		      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add_error_v(struct mt_config_checker *checker, unsigned int line,
			const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

static void add_error_v(struct mt_config_checker *checker, unsigned int line,
			const char *fmt, va_list ap)
{
	if (line != 0)
		mt_buf_appendf(&checker->errors, "%s:%u: ", checker->path, line);
	else
		mt_buf_appendf(&checker->errors, "%s: ", checker->path);
	mt_buf_vappendf(&checker->errors, fmt, ap);
	mt_buf_append_char(&checker->errors, '\n');
	checker->n_errors++;
}

static void add_error(struct mt_config_checker *checker, unsigned int line,
		      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_error_v(checker, line, fmt, ap);
	va_end(ap);
}

/* Find the table for a section header; *instance_r gets the part after '.'. */
static const struct mt_section_def *
find_def(const struct mt_section_def *const *defs, const char *header,
	 const char **instance_r)
{
	const char *dot = strchr(header, '.');
	size_t base_len = dot != NULL ? (size_t)(dot - header) : strlen(header);
	*instance_r = dot != NULL ? dot + 1 : NULL;
	for (; *defs != NULL; defs++) {
		if (strlen((*defs)->name) == base_len &&
		    strncmp((*defs)->name, header, base_len) == 0)
			return *defs;
	}
	return NULL;
}

static struct raw_section *raw_section_get(struct load_state *st,
					   const char *name);

/* inih reader: one physical line per call, leading blanks removed. Section
 * headers are registered here so they carry their own line number and an
 * empty section is still checked. */
static char *reader(char *str, int num, void *stream)
{
	struct load_state *st = stream;
	ssize_t n = getline(&st->linebuf, &st->linecap, st->file);
	if (n < 0)
		return NULL;
	st->lineno++;
	char *line = st->linebuf;
	size_t len = (size_t)n;
	if (st->lineno == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
		line += 3;
		len -= 3;
	}
	while (len > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	str[0] = '\0';
	if (memchr(line, '\0', len) != NULL) {
		add_error(&st->checker, st->lineno, "NUL byte in line");
		return str;
	}
	line[len] = '\0';
	if (len > (size_t)num - 2 || len > RAW_LINE_MAX) {
		add_error(&st->checker, st->lineno,
			  "line too long (at most %d characters)", RAW_LINE_MAX);
		return str;
	}
	bool is_comment = line[0] == '#' || line[0] == ';' || line[0] == '\0';
	if (!is_comment && line[0] != '[' && strchr(line, '=') == NULL) {
		add_error(&st->checker, st->lineno,
			  "expected 'key = value' or '[section]'");
		return str;
	}
	if (line[0] == '[') {
		char *close = strchr(line, ']');
		if (close == NULL) {
			add_error(&st->checker, st->lineno, "section header lacks ']'");
			st->current = NULL;
			return str;
		}
		char *name = mt_xstrndup(line + 1, (size_t)(close - line - 1));
		st->current = raw_section_get(st, name);
		free(name);
	}
	memcpy(str, line, len);
	str[len] = '\n';
	str[len + 1] = '\0';
	return str;
}

static struct raw_section *raw_section_get(struct load_state *st,
					   const char *name)
{
	for (size_t i = 0; i < st->n_raws; i++) {
		if (strcmp(st->raws[i].name, name) == 0)
			return &st->raws[i];
	}
	st->raws = mt_xrealloc(st->raws, (st->n_raws + 1) * sizeof(*st->raws));
	struct raw_section *raw = &st->raws[st->n_raws++];
	memset(raw, 0, sizeof(*raw));
	raw->name = mt_xstrdup(name);
	raw->line = st->lineno;
	const char *instance;
	const struct mt_section_def *def = find_def(st->defs, name, &instance);
	raw->known = def != NULL &&
		(instance == NULL || (def->kind == MT_SECTION_FAMILY &&
				      *instance != '\0'));
	if (def == NULL)
		add_error(&st->checker, st->lineno, "unknown section [%s]", name);
	else if (!raw->known)
		add_error(&st->checker, st->lineno,
			  "section [%s] cannot have named instances", def->name);
	return raw;
}

static const struct mt_setting_def *find_setting(const struct mt_section_def *def,
						 const char *key, size_t *index_r)
{
	for (size_t i = 0; def->settings != NULL && def->settings[i].name != NULL; i++) {
		if (strcmp(def->settings[i].name, key) == 0) {
			*index_r = i;
			return &def->settings[i];
		}
	}
	return NULL;
}

static int handler(void *user, const char *section, const char *name,
		   const char *value)
{
	struct load_state *st = user;
	if (section[0] == '\0') {
		add_error(&st->checker, st->lineno,
			  "'%s' is outside any [section]", name);
		return 1;
	}
	struct raw_section *raw = st->current;
	if (raw == NULL || strcmp(raw->name, section) != 0)
		return 1;	/* a malformed header, already reported */
	if (!raw->known)
		return 1;	/* reported once at the header */
	const char *instance;
	const struct mt_section_def *def = find_def(st->defs, section, &instance);
	size_t index;
	if (def->kind != MT_SECTION_MAP && find_setting(def, name, &index) == NULL) {
		add_error(&st->checker, st->lineno, "unknown key '%s' in [%s]",
			  name, section);
		return 1;
	}
	for (size_t i = 0; i < raw->n_entries; i++) {
		if (strcmp(raw->entries[i].key, name) == 0) {
			add_error(&st->checker, st->lineno,
				  "duplicate key '%s' in [%s] (first set at line %u)",
				  name, section, raw->entries[i].line);
			return 1;
		}
	}
	raw->entries = mt_xrealloc(raw->entries,
				   (raw->n_entries + 1) * sizeof(*raw->entries));
	raw->entries[raw->n_entries++] = (struct raw_entry){
		mt_xstrdup(name), mt_xstrdup(value), st->lineno };
	return 1;
}

/* ---- typing values into section structs ---- */

static void split_list(const char *value, struct mt_strlist *list)
{
	const char *p = value;
	while (*p != '\0') {
		p += strspn(p, ", \t");
		size_t len = strcspn(p, ", \t");
		if (len == 0)
			break;
		list->items = mt_xrealloc(list->items,
					  (list->count + 2) * sizeof(char *));
		list->items[list->count++] = mt_xstrndup(p, len);
		list->items[list->count] = NULL;
		p += len;
	}
}

static void free_value(const struct mt_setting_def *s, void *settings)
{
	char *field = (char *)settings + s->offset;
	switch (s->type) {
	case MT_SETTING_STRING:
		MT_FREE((char **)field);
		break;
	case MT_SETTING_HOSTPORT:
		mt_hostport_clear((struct mt_hostport *)field);
		break;
	case MT_SETTING_LIST: {
		struct mt_strlist *list = (struct mt_strlist *)field;
		for (size_t i = 0; i < list->count; i++)
			free(list->items[i]);
		MT_FREE(&list->items);
		list->count = 0;
		break;
	}
	case MT_SETTING_DURATION_LIST: {
		struct mt_duration_list *list = (struct mt_duration_list *)field;
		MT_FREE(&list->ms);
		list->count = 0;
		break;
	}
	default:
		break;
	}
}

static bool check_bounds(const struct mt_setting_def *s, uint64_t v,
			 const char **error_r)
{
	if (v < s->min || (s->max != 0 && v > s->max)) {
		static _Thread_local char msg[128];
		snprintf(msg, sizeof(msg), "out of range (%llu..%llu)",
			 (unsigned long long)s->min,
			 (unsigned long long)(s->max != 0 ? s->max : UINT64_MAX));
		*error_r = msg;
		return false;
	}
	return true;
}

/* Parse VALUE into the field; on failure the field keeps its old value. */
static bool set_value(const struct mt_setting_def *s, void *settings,
		      const char *value, const char **error_r)
{
	char *field = (char *)settings + s->offset;
	uint64_t n;
	switch (s->type) {
	case MT_SETTING_STRING:
		free_value(s, settings);
		*(char **)field = mt_xstrdup(value);
		return true;
	case MT_SETTING_BOOL: {
		static const char *const yes[] = { "yes", "true", "on", "1", NULL };
		static const char *const no[] = { "no", "false", "off", "0", NULL };
		for (int i = 0; yes[i] != NULL; i++) {
			if (strcasecmp(value, yes[i]) == 0) {
				*(bool *)field = true;
				return true;
			}
			if (strcasecmp(value, no[i]) == 0) {
				*(bool *)field = false;
				return true;
			}
		}
		*error_r = "expected yes or no";
		return false;
	}
	case MT_SETTING_UINT: {
		char *end;
		errno = 0;
		if (value[0] < '0' || value[0] > '9') {
			*error_r = "expected a non-negative integer";
			return false;
		}
		n = strtoull(value, &end, 10);
		if (errno != 0 || *end != '\0') {
			*error_r = "expected a non-negative integer";
			return false;
		}
		if (!check_bounds(s, n, error_r))
			return false;
		*(uint64_t *)field = n;
		return true;
	}
	case MT_SETTING_SIZE:
		if (!mt_parse_size(value, &n, error_r) || !check_bounds(s, n, error_r))
			return false;
		*(uint64_t *)field = n;
		return true;
	case MT_SETTING_DURATION:
		if (!mt_parse_duration(value, &n, error_r) ||
		    !check_bounds(s, n, error_r))
			return false;
		*(uint64_t *)field = n;
		return true;
	case MT_SETTING_DURATION_LIST: {
		struct mt_strlist words = { NULL, 0 };
		struct mt_duration_list list = { NULL, 0 };
		split_list(value, &words);
		bool ok = true;
		list.ms = mt_xcalloc(words.count + 1, sizeof(uint64_t));
		for (size_t i = 0; i < words.count && ok; i++) {
			ok = mt_parse_duration(words.items[i], &list.ms[i], error_r) &&
			     check_bounds(s, list.ms[i], error_r);
		}
		list.count = words.count;
		for (size_t i = 0; i < words.count; i++)
			free(words.items[i]);
		free(words.items);
		if (!ok) {
			free(list.ms);
			return false;
		}
		free_value(s, settings);
		*(struct mt_duration_list *)field = list;
		return true;
	}
	case MT_SETTING_HOSTPORT: {
		struct mt_hostport hp = { NULL, 0 };
		if (value[0] != '\0' && !mt_parse_hostport(value, &hp, error_r))
			return false;
		free_value(s, settings);
		*(struct mt_hostport *)field = hp;
		return true;
	}
	case MT_SETTING_LIST:
		free_value(s, settings);
		split_list(value, (struct mt_strlist *)field);
		return true;
	case MT_SETTING_ENUM:
		for (unsigned i = 0; s->enum_values[i] != NULL; i++) {
			if (strcasecmp(value, s->enum_values[i]) == 0) {
				*(unsigned int *)field = i;
				return true;
			}
		}
		*error_r = "not one of the allowed values";
		return false;
	}
	*error_r = "internal: unknown setting type";
	return false;
}

static bool is_empty_value(const struct mt_setting_def *s, const void *settings)
{
	const char *field = (const char *)settings + s->offset;
	switch (s->type) {
	case MT_SETTING_STRING:
		return (*(char *const *)field)[0] == '\0';
	case MT_SETTING_HOSTPORT:
		return ((const struct mt_hostport *)field)->host == NULL;
	case MT_SETTING_LIST:
		return ((const struct mt_strlist *)field)->count == 0;
	case MT_SETTING_DURATION_LIST:
		return ((const struct mt_duration_list *)field)->count == 0;
	default:
		return false;
	}
}

static void apply_raw(struct load_state *st, struct mt_section *sec,
		      const struct raw_section *raw)
{
	for (size_t i = 0; i < raw->n_entries; i++) {
		const struct raw_entry *e = &raw->entries[i];
		size_t index = 0;
		const struct mt_setting_def *s = find_setting(sec->def, e->key, &index);
		const char *error = NULL;
		if (s == NULL)
			continue;	/* reported as an unknown key while reading */
		if (!set_value(s, sec->settings, e->value, &error)) {
			if (s->type == MT_SETTING_ENUM) {
				struct mt_buf allowed = MT_BUF_INIT;
				for (int j = 0; s->enum_values[j] != NULL; j++)
					mt_buf_appendf(&allowed, "%s%s", j ? ", " : "",
						       s->enum_values[j]);
				add_error(&st->checker, e->line,
					  "[%s] %s: '%s' is not one of: %s", raw->name,
					  e->key, e->value, mt_buf_cstr(&allowed));
				mt_buf_free(&allowed);
			} else {
				add_error(&st->checker, e->line, "[%s] %s: %s (got '%s')",
					  raw->name, e->key, error, e->value);
			}
		}
		sec->key_lines[index] = e->line;
	}
}

static struct mt_section *new_section(struct mt_config *config,
				      const struct mt_section_def *def,
				      const char *instance, unsigned int line)
{
	config->sections = mt_xrealloc(config->sections,
		(config->n_sections + 1) * sizeof(*config->sections));
	struct mt_section *sec = &config->sections[config->n_sections++];
	memset(sec, 0, sizeof(*sec));
	sec->def = def;
	sec->instance = instance != NULL ? mt_xstrdup(instance) : NULL;
	sec->line = line;
	if (def->kind == MT_SECTION_MAP)
		return sec;
	size_t n = 0;
	while (def->settings[n].name != NULL)
		n++;
	sec->settings = mt_xcalloc(1, def->struct_size);
	sec->key_lines = mt_xcalloc(n + 1, sizeof(unsigned int));
	for (size_t i = 0; i < n; i++) {
		const struct mt_setting_def *s = &def->settings[i];
		const char *error = NULL;
		const char *dflt = s->default_value != NULL ? s->default_value : "";
		if (s->type == MT_SETTING_STRING || s->default_value != NULL ||
		    s->type == MT_SETTING_HOSTPORT || s->type == MT_SETTING_LIST ||
		    s->type == MT_SETTING_DURATION_LIST) {
			if (!set_value(s, sec->settings, dflt, &error))
				mt_panic("config table [%s] %s: bad default '%s': %s",
					 def->name, s->name, dflt, error);
		}
	}
	return sec;
}

static void check_required(struct load_state *st, struct mt_section *sec)
{
	for (size_t i = 0; sec->def->settings[i].name != NULL; i++) {
		const struct mt_setting_def *s = &sec->def->settings[i];
		if ((s->flags & MT_SETTING_REQUIRED) != 0 && sec->key_lines[i] == 0 &&
		    is_empty_value(s, sec->settings)) {
			add_error(&st->checker, sec->line,
				  "[%s%s%s] missing required key '%s'", sec->def->name,
				  sec->instance ? "." : "",
				  sec->instance ? sec->instance : "", s->name);
		}
	}
}

static void build_map(struct load_state *st, struct mt_section *sec,
		      const struct raw_section *raw)
{
	for (size_t i = 0; raw != NULL && i < raw->n_entries; i++) {
		const struct raw_entry *e = &raw->entries[i];
		const char *error = "invalid value";
		void *value = sec->def->parse_entry(e->key, e->value, &error);
		if (value == NULL) {
			add_error(&st->checker, e->line, "[%s] %s: %s (got '%s')",
				  raw->name, e->key, error, e->value);
			continue;
		}
		sec->entries = mt_xrealloc(sec->entries,
			(sec->n_entries + 1) * sizeof(*sec->entries));
		sec->entries[sec->n_entries++] = (struct mt_map_entry){
			mt_xstrdup(e->key), value, e->line };
	}
}

static const struct raw_section *find_raw(const struct load_state *st,
					  const char *name)
{
	for (size_t i = 0; i < st->n_raws; i++) {
		if (strcmp(st->raws[i].name, name) == 0 && st->raws[i].known)
			return &st->raws[i];
	}
	return NULL;
}

static void build_sections(struct load_state *st, struct mt_config *config)
{
	for (const struct mt_section_def *const *d = st->defs; *d != NULL; d++) {
		const struct mt_section_def *def = *d;
		const struct raw_section *base = find_raw(st, def->name);
		struct mt_section *sec = new_section(config, def, NULL,
						     base ? base->line : 0);
		if (def->kind == MT_SECTION_MAP) {
			build_map(st, sec, base);
			continue;
		}
		if (base != NULL)
			apply_raw(st, sec, base);
		if (def->kind == MT_SECTION_SINGLE) {
			check_required(st, sec);
			continue;
		}
		/* FAMILY: the base itself is not checked for required keys;
		 * each instance inherits the base's entries, then its own. */
		size_t base_len = strlen(def->name);
		for (size_t i = 0; i < st->n_raws; i++) {
			const struct raw_section *raw = &st->raws[i];
			if (!raw->known || strncmp(raw->name, def->name, base_len) != 0 ||
			    raw->name[base_len] != '.')
				continue;
			struct mt_section *inst = new_section(config, def,
				raw->name + base_len + 1, raw->line);
			if (base != NULL)
				apply_raw(st, inst, base);
			apply_raw(st, inst, raw);
			check_required(st, inst);
		}
	}
}

static void run_checks(struct load_state *st, struct mt_config *config)
{
	for (size_t i = 0; i < config->n_sections; i++) {
		struct mt_section *sec = &config->sections[i];
		if (sec->def->check == NULL)
			continue;
		/* A family's base is only a template for its instances. */
		if (sec->def->kind == MT_SECTION_FAMILY && sec->instance == NULL)
			continue;
		sec->def->check(&st->checker, config, sec);
	}
}

static void free_raws(struct load_state *st)
{
	for (size_t i = 0; i < st->n_raws; i++) {
		for (size_t j = 0; j < st->raws[i].n_entries; j++) {
			free(st->raws[i].entries[j].key);
			free(st->raws[i].entries[j].value);
		}
		free(st->raws[i].entries);
		free(st->raws[i].name);
	}
	free(st->raws);
}

struct mt_config *mt_config_load(const char *path,
				 const struct mt_section_def *const *defs,
				 char **errors_r)
{
	struct load_state st;
	memset(&st, 0, sizeof(st));
	st.defs = defs;
	st.checker.path = path;
	mt_buf_init(&st.checker.errors);
	*errors_r = NULL;

	st.file = fopen(path, "r");
	if (st.file == NULL) {
		*errors_r = mt_xasprintf("%s: cannot open: %s\n", path,
					 strerror(errno));
		return NULL;
	}
	int rc = ini_parse_stream(reader, &st, handler, &st);
	fclose(st.file);
	free(st.linebuf);
	if (rc > 0)
		add_error(&st.checker, (unsigned int)rc, "syntax error");
	else if (rc < 0)
		add_error(&st.checker, 0, "cannot parse (out of memory)");

	struct mt_config *config = mt_xcalloc(1, sizeof(*config));
	config->path = mt_xstrdup(path);
	build_sections(&st, config);
	free_raws(&st);
	if (st.checker.n_errors == 0)
		run_checks(&st, config);
	if (st.checker.n_errors > 0) {
		*errors_r = mt_buf_steal(&st.checker.errors);
		mt_config_free(&config);
		return NULL;
	}
	mt_buf_free(&st.checker.errors);
	return config;
}

void mt_config_free(struct mt_config **config_p)
{
	struct mt_config *config = *config_p;
	if (config == NULL)
		return;
	for (size_t i = 0; i < config->n_sections; i++) {
		struct mt_section *sec = &config->sections[i];
		if (sec->settings != NULL) {
			for (size_t j = 0; sec->def->settings[j].name != NULL; j++)
				free_value(&sec->def->settings[j], sec->settings);
		}
		for (size_t j = 0; j < sec->n_entries; j++) {
			free(sec->entries[j].key);
			if (sec->def->free_entry != NULL)
				sec->def->free_entry(sec->entries[j].value);
			else
				free(sec->entries[j].value);
		}
		free(sec->entries);
		free(sec->settings);
		free(sec->key_lines);
		free(sec->instance);
	}
	free(config->sections);
	free(config->path);
	free(config);
	*config_p = NULL;
}

const struct mt_section *mt_config_section(const struct mt_config *config,
					   const char *section,
					   const char *instance)
{
	for (size_t i = 0; i < config->n_sections; i++) {
		const struct mt_section *sec = &config->sections[i];
		if (strcmp(sec->def->name, section) != 0)
			continue;
		if ((instance == NULL && sec->instance == NULL) ||
		    (instance != NULL && sec->instance != NULL &&
		     strcmp(instance, sec->instance) == 0))
			return sec;
	}
	return NULL;
}

const void *mt_config_get(const struct mt_config *config, const char *section,
			  const char *instance)
{
	const struct mt_section *sec = mt_config_section(config, section, instance);
	return sec != NULL ? sec->settings : NULL;
}

const void *mt_config_map_get(const struct mt_config *config,
			      const char *section, const char *key)
{
	const struct mt_section *sec = mt_config_section(config, section, NULL);
	for (size_t i = 0; sec != NULL && i < sec->n_entries; i++) {
		if (strcmp(sec->entries[i].key, key) == 0)
			return sec->entries[i].value;
	}
	return NULL;
}

void mt_config_check_error(struct mt_config_checker *checker,
			   const struct mt_section *section, const char *key,
			   const char *fmt, ...)
{
	unsigned int line = section->line;
	if (key != NULL && section->def->settings != NULL) {
		size_t index;
		if (find_setting(section->def, key, &index) != NULL &&
		    section->key_lines[index] != 0)
			line = section->key_lines[index];
	}
	struct mt_buf msg = MT_BUF_INIT;
	mt_buf_appendf(&msg, "[%s%s%s] ", section->def->name,
		       section->instance ? "." : "",
		       section->instance ? section->instance : "");
	if (key != NULL)
		mt_buf_appendf(&msg, "%s: ", key);
	va_list ap;
	va_start(ap, fmt);
	mt_buf_vappendf(&msg, fmt, ap);
	va_end(ap);
	add_error(checker, line, "%s", mt_buf_cstr(&msg));
	mt_buf_free(&msg);
}
