/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reader.c: a configuration's text into key settings. inih does not report
 * line numbers to its handler in Debian's build, so the text is split into
 * lines here and fed to inih one line per reader call; the reader therefore
 * always knows the line being handled, and every message names FILE:LINE.
 * Each line's shape is judged before inih sees it; [rules] and [quota] lines
 * are taken whole; [outbound NAME] and [edge NAME] sections go to their
 * rooms; include= reads another file with this same code, nested; a key is
 * found in the key table (keys.c), with a "did you mean" for unknown ones.
 * This room must not interpret values (the setters do) nor check keys
 * against each other (config.c does, once every file is read).
 */
#include <errno.h>
#include <glob.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/loader.h"
#include "util/file.h"
#include "util/parse.h"

/* Sections a file may contain; keys in them are named "section.key". */
static const char *const sections[] = {"auth",    "udp", "http", "rules", "limits",
                                       "metrics", "dns", "tls",  "http2", "quota"};

/* Edit distance, for "did you mean" on unknown keys. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
            diag = up;
        }
    }
    return row[lb];
}

/* Strip one pair of surrounding double quotes, if present. */
static const char *unquote(const char *v, char *buf, size_t cap)
{
    size_t n = strlen(v);
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"' && n - 2 < cap) {
        memcpy(buf, v + 1, n - 2);
        buf[n - 2] = '\0';
        return buf;
    }
    return v;
}

/* The places where a key named name exists other than qname, the key as
 * written ("per_ip" at the top finds "[limits] per_ip"; "workers" in
 * [limits] finds "'workers' at the top (before any section)"). Returns how
 * many were found; out lists them joined by " or ". */
static size_t misplaced_hint(const char *qname, const char *name, char *out, size_t cap)
{
    size_t n = 0, used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < config_nkeys && used < cap; i++) {
        const char *dot = strchr(config_keys[i].name, '.');
        const char *base = dot ? dot + 1 : config_keys[i].name;
        if (strcmp(base, name) != 0 || strcmp(config_keys[i].name, qname) == 0)
            continue;
        int w;
        if (dot)
            w = snprintf(out + used, cap - used, "%s[%.*s] %s", n ? " or " : "",
                         (int)(dot - config_keys[i].name), config_keys[i].name, base);
        else
            w = snprintf(out + used, cap - used, "%s'%s' at the top (before any section)",
                         n ? " or " : "", base);
        if (w < 0)
            break;
        used += (size_t)w;
        n++;
    }
    return n;
}

/* "FILE:LINE" of the line being read, the file's base name as rules have it. */
static void here(const struct loader *ld, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%d", ld->file ? ld->file : "?", ld->line);
}

/* [outbound NAME]: p points after "outbound", end at the ']'. */
static void outbound_header(struct loader *ld, const char *p, const char *end)
{
    char name[160], origin[160], err[300];
    size_t n = (size_t)(end - p);
    snprintf(name, sizeof(name), "%.*s", (int)MIN(n, sizeof(name) - 1), p);
    here(ld, origin, sizeof(origin));
    ld->ob_seen[0] = '\0';
    if (!ld->obs.v && outbound_list_init(&ld->obs) < 0) {
        bad(ld, NULL, "out of memory");
        return;
    }
    int rc = outbound_section(&ld->obs, str_trim(name), origin, &ld->cur_ob, err, sizeof(err));
    if (rc)
        bad(ld, NULL, "%s", rc == -ENOMEM ? "out of memory" : err);
}

/* A key of the [outbound NAME] section being read. */
static void outbound_key(struct loader *ld, const char *section, const char *key, const char *v)
{
    char qname[200], err[600], dir[4096], mark[80];
    snprintf(qname, sizeof(qname), "%s.%s", section, key);
    if (!ld->cur_ob)
        return; /* the header was bad, and said so */
    snprintf(mark, sizeof(mark), "|%s|", key);
    if (strstr(ld->ob_seen, mark) && strcmp(key, "reverse") != 0) { /* reverse adds up */
        bad(ld, qname, "set twice in this section");
        return;
    }
    size_t used = strlen(ld->ob_seen);
    snprintf(ld->ob_seen + used, sizeof(ld->ob_seen) - used, "%s", mark);
    const char *slash = ld->file ? strrchr(ld->file, '/') : NULL;
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - ld->file) : 0, ld->file);
    int rc = outbound_set_key(ld->cur_ob, key, v, dir, ld->line, err, sizeof(err));
    if (rc)
        bad(ld, qname, "%s", rc == -ENOMEM ? "out of memory" : err);
}

static int ini_handler_cb(void *user, const char *section, const char *name, const char *value)
{
    struct loader *ld = user;
    char qbuf[CONFIG_LINE_MAX], qname[160];
    if (!strncmp(section, "outbound", 8) && (section[8] == ' ' || section[8] == '\0')) {
        outbound_key(ld, section, name, unquote(value, qbuf, sizeof(qbuf)));
        return 1;
    }
    if (!strncmp(section, "edge ", 5)) {
        config_edge_key(ld->c, name, unquote(value, qbuf, sizeof(qbuf)), ld->file ? ld->file : "?",
                        ld->line, ld->errs);
        return 1;
    }
    if (!section[0] && strncmp(name, "quota.", 6) == 0) {
        /* "quota.accounting = no" at the top, as other sections' keys may
         * be written (ferry bench --proxy-set). */
        snprintf(qbuf, sizeof(qbuf), "%s = %s", name + 6, value);
        config_quota_line(&ld->c->quota, ld->file, ld->line, qbuf, ld->errs);
        return 1;
    }
    if (strcmp(section, "http2") == 0) {
        if (!config_http2_key(ld->c, name, unquote(value, qbuf, sizeof(qbuf)), ld->file, ld->line))
            bad(ld, "http2", "unknown key '%s'", name);
        return 1;
    }
    if (section[0] != '\0') {
        bool known = false;
        for (size_t i = 0; i < ARRAY_LEN(sections); i++)
            known = known || strcmp(section, sections[i]) == 0;
        if (!known)
            return 1; /* the reader reported the unknown section at its header */
        snprintf(qname, sizeof(qname), "%s.%s", section, name);
    } else {
        snprintf(qname, sizeof(qname), "%s", name);
    }
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct key *k = &config_keys[i];
        if (strcmp(qname, k->name) != 0)
            continue;
        if (ld->seen[i] && !k->repeatable) {
            if (ld->seen_file[i] == ld->file)
                bad(ld, qname, "set twice (first on line %d)", ld->seen[i]);
            else
                bad(ld, qname, "set twice (first at %s:%d)", ld->seen_file[i], ld->seen[i]);
            return 1;
        }
        if (!ld->seen[i]) {
            ld->seen[i] = ld->line;
            ld->seen_file[i] = ld->file;
        }
        k->set(ld, k, unquote(value, qbuf, sizeof(qbuf)));
        return 1;
    }
    char where[400];
    if (!section[0] && config_edge_is_key(name)) {
        bad(ld, qname, "unknown key (it goes in an [edge NAME] section)");
        return 1;
    }
    if (misplaced_hint(qname, name, where, sizeof(where))) {
        bad(ld, qname, "unknown key (did you mean %s?)", where);
        return 1;
    }
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < config_nkeys; i++) {
        size_t d = edit_distance(qname, config_keys[i].name);
        if (d < best_d) {
            best_d = d;
            best = config_keys[i].name;
        }
    }
    if (best)
        bad(ld, qname, "unknown key (did you mean '%s'?)", best);
    else
        bad(ld, qname, "unknown key");
    return 1;
}

/* Judge a line's shape before inih sees it, so that syntax errors are
 * reported at their own line and in order with the others. */
/* A rule line: "# comment" ends it; errors name FILE:LINE. */
void reader_add_rule(struct loader *ld, const char *file, int line, const char *text)
{
    char buf[CONFIG_LINE_MAX + 1], name[4112], err[256];
    snprintf(buf, sizeof(buf), "%s", text);
    char *hash = strchr(buf, '#');
    if (hash)
        *hash = '\0';
    char *t = str_trim(buf);
    size_t n = strlen(t);
    while (n && (t[n - 1] == '\r' || t[n - 1] == '\n' || t[n - 1] == ' '))
        t[--n] = '\0';
    if (!*t || *t == ';')
        return;
    const char *base = strrchr(file, '/');
    snprintf(name, sizeof(name), "%s:%d", base ? base + 1 : file, line);
    if (ld->nrules == ld->caprules) {
        uint32_t cap = ld->caprules ? ld->caprules * 2 : 16;
        struct acl_rule *v = realloc(ld->rules, cap * sizeof(*v));
        if (!v) {
            msglist_push(ld->errs, "%s:%d: out of memory", file, line);
            return;
        }
        ld->rules = v;
        ld->caprules = cap;
    }
    if (acl_rule_parse(t, name, &ld->rules[ld->nrules], err, sizeof(err)) == 0)
        ld->nrules++;
    else
        msglist_push(ld->errs, "%s:%d: rule: %s", file, line, err);
}

/* ---- include ------------------------------------------------------------
 * "include = PATH-OR-GLOB", anywhere in a file (at the top, in a section,
 * in [rules]): relative to the including file's directory; a glob's files
 * are read in sorted order and a glob that matches nothing is fine, a
 * plain path that does not exist is an error. Each included file is read
 * like the main file: it starts outside any section and its sections end
 * with it; after the include line, the including file goes on in the
 * section it was in. CONFIG_INCLUDE_MAX files deep at most; a file that
 * is already being read is a cycle. Keys keep their rules across files
 * (one set twice is an error naming both places). */

static char *ini_reader_cb(char *str, int num, void *stream);
static int ini_handler_cb(void *user, const char *section, const char *name, const char *value);

/* Record path as a file of this config (errors and key origins point into
 * c->files); returns the stored copy, or NULL when out of memory. */
static const char *loader_file(struct loader *ld, const char *path)
{
    msglist_push(&ld->c->files, "%s", path);
    return ld->c->files.n ? ld->c->files.msg[ld->c->files.n - 1] : NULL;
}

/* Read and parse one file: the main one (depth 0) or an included one.
 * Returns 0, or -errno when it could not be read (not said here). */
int reader_parse_text(struct loader *ld, const char *path, char *text)
{
    static char comment_prefixes[] = ";#";
    const char *file = loader_file(ld, path);
    /* Includes are told apart by their real path (cycles); text from the
     * command line has no file, and its name stands in. */
    char *real = realpath(path, NULL);
    if (!real && errno != ENOMEM)
        real = strdup(path);
    if (!file || !real) {
        free(real);
        free(text);
        return -ENOMEM;
    }
    /* What the including file was doing, restored after. */
    const char *o_file = ld->file;
    int o_line = ld->line;
    char *o_text = ld->text, *o_next = ld->next;
    bool o_rules = ld->in_rules, o_quota = ld->in_quota;
    struct config_outbound *o_ob = ld->cur_ob;
    char o_seen[sizeof(ld->ob_seen)];
    memcpy(o_seen, ld->ob_seen, sizeof(o_seen));

    ld->stack[ld->depth++] = real;
    ld->file = file;
    ld->line = 0;
    ld->text = ld->next = text;
    ld->in_rules = ld->in_quota = false;
    ld->cur_ob = NULL;
    /* Runtime knobs of Debian's libinih: '#' and ';' start comments
     * anywhere, continuation lines are errors, lines up to 4000; with the
     * heap buffer, Debian's build sizes it from ini_initial_alloc. */
    ini_inline_comment_prefixes = comment_prefixes;
    ini_allow_multiline = false;
    ini_use_stack = false;
    ini_max_line = CONFIG_LINE_MAX + 3;
    ini_initial_alloc = CONFIG_LINE_MAX + 3;
    /* Syntax errors were reported line by line by check_line(), so inih's
     * own "first bad line" result adds nothing. */
    if (ini_parse_stream(ini_reader_cb, ld, ini_handler_cb, ld) == -2)
        msglist_push(ld->errs, "%s: out of memory while parsing", path);
    free(ld->text);
    free(ld->stack[--ld->depth]);

    ld->file = o_file;
    ld->line = o_line;
    ld->text = o_text;
    ld->next = o_next;
    ld->in_rules = o_rules;
    ld->in_quota = o_quota;
    ld->cur_ob = o_ob;
    memcpy(ld->ob_seen, o_seen, sizeof(o_seen));
    return 0;
}

/* One file named by an include line at ld->file:ld->line. */
static void include_one(struct loader *ld, const char *path)
{
    char *real = realpath(path, NULL);
    for (int i = 0; real && i < ld->depth; i++) {
        if (strcmp(ld->stack[i], real) == 0) {
            bad(ld, "include", "%s is already being read (an include cycle: %s includes it)", path,
                ld->file);
            free(real);
            return;
        }
    }
    free(real);
    if (ld->depth >= CONFIG_INCLUDE_MAX) {
        bad(ld, "include", "%s: includes nested more than %d files deep", path, CONFIG_INCLUDE_MAX);
        return;
    }
    char *text;
    int rc = file_read_text(path, CONFIG_FILE_MAX, &text, NULL);
    if (rc) {
        bad(ld, "include", "cannot read %s: %s", path,
            rc == -EFBIG    ? "larger than 1 MiB"
            : rc == -EINVAL ? "contains a NUL byte; not a text file"
                            : strerror(-rc));
        return;
    }
    if (reader_parse_text(ld, path, text) < 0)
        bad(ld, "include", "%s: out of memory", path);
}

/* "include = PATTERN" at ld->file:ld->line. */
static void include_line(struct loader *ld, const char *value)
{
    char buf[CONFIG_LINE_MAX + 1], qbuf[CONFIG_LINE_MAX + 1], pat[4096 + CONFIG_LINE_MAX];
    snprintf(buf, sizeof(buf), "%s", value);
    buf[strcspn(buf, "\r\n")] = '\0';
    char *hash = strpbrk(buf, "#;"); /* comments, as inih strips them */
    if (hash && (hash == buf || hash[-1] == ' ' || hash[-1] == '\t'))
        *hash = '\0';
    const char *v = unquote(str_trim(buf), qbuf, sizeof(qbuf));
    if (!*v) {
        bad(ld, "include", "expected a file or a glob such as conf.d/*.conf");
        return;
    }
    const char *slash = strrchr(ld->file, '/');
    if (v[0] != '/' && slash)
        snprintf(pat, sizeof(pat), "%.*s/%s", (int)(slash - ld->file), ld->file, v);
    else
        snprintf(pat, sizeof(pat), "%s", v);
    if (!strpbrk(v, "*?[")) {
        include_one(ld, pat);
        return;
    }
    glob_t g;
    int rc = glob(pat, 0, NULL, &g); /* sorted (C locale: byte order) */
    if (rc == GLOB_NOMATCH)
        return; /* an empty conf.d is fine */
    if (rc) {
        bad(ld, "include", "%s: %s", pat, rc == GLOB_NOSPACE ? "out of memory" : "read error");
        return;
    }
    if (g.gl_pathc > CONFIG_INCLUDE_GLOB)
        bad(ld, "include", "%s matches %zu files (at most %d)", pat, g.gl_pathc,
            CONFIG_INCLUDE_GLOB);
    else
        for (size_t i = 0; i < g.gl_pathc; i++)
            include_one(ld, g.gl_pathv[i]);
    globfree(&g);
}

/* Whether line p is an include line; if so, it is handled here. */
static bool check_include(struct loader *ld, const char *p)
{
    if (strncmp(p, "include", 7) != 0)
        return false;
    const char *q = p + 7 + strspn(p + 7, " \t");
    if (*q != '=' && *q != ':')
        return false;
    include_line(ld, q + 1);
    return true;
}

/* Judge a line before inih sees it. Returns true when the line was a rule
 * (consumed here; inih gets a blank line instead). */
static bool check_line(struct loader *ld, const char *line)
{
    const char *p = line + strspn(line, " \t\r\n");
    if (*p == '\0' || *p == '#' || *p == ';')
        return false;
    if (check_include(ld, p))
        return true;
    if (*p != '[' && ld->in_rules) {
        reader_add_rule(ld, ld->file, ld->line, p);
        return true;
    }
    if (*p != '[' && ld->in_quota) {
        config_quota_line(&ld->c->quota, ld->file, ld->line, p, ld->errs);
        return true;
    }
    if (*p == '[') {
        const char *end0 = strchr(p, ']');
        ld->in_rules = end0 && (size_t)(end0 - p - 1) == 5 && strncmp(p + 1, "rules", 5) == 0;
        ld->in_quota = end0 && (size_t)(end0 - p - 1) == 5 && strncmp(p + 1, "quota", 5) == 0;
        ld->cur_ob = NULL;
        ld->c->cur_edge = -1;
        if (end0 && !strncmp(p + 1, "edge ", 5)) {
            char name[160];
            snprintf(name, sizeof(name), "%.*s", (int)MIN((size_t)(end0 - p - 6), 159), p + 6);
            config_edge_section(ld->c, str_trim(name), ld->file ? ld->file : "?", ld->line,
                                ld->errs);
            return false;
        }
        if (end0 && !strncmp(p + 1, "outbound", 8) && (p[9] == ' ' || p[9] == ']')) {
            outbound_header(ld, p + 9, end0);
            return false;
        }
    }
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (!end) {
            bad(ld, NULL, "syntax error: section header without ']'");
            return false;
        }
        for (size_t i = 0; i < ARRAY_LEN(sections); i++) {
            if ((size_t)(end - p - 1) == strlen(sections[i]) &&
                strncmp(p + 1, sections[i], strlen(sections[i])) == 0)
                return false;
        }
        bad(ld, NULL,
            "unknown section [%.*s] (known: [auth], [udp], [http], [rules], [limits], [metrics], "
            "[dns], [tls], [http2], [quota], [outbound NAME], [edge NAME]; "
            "other keys go at the top)",
            (int)(end - p - 1), p + 1);
        return false;
    }
    if (!strpbrk(p, "=:"))
        bad(ld, NULL, "syntax error: expected 'key = value', a comment, or a blank line");
    return false;
}

/* inih reader: hand out one line of ld->text per call, tracking its number. */
static char *ini_reader_cb(char *str, int num, void *stream)
{
    struct loader *ld = stream;
    if (!ld->next || !*ld->next)
        return NULL;
    char *nl = strchr(ld->next, '\n');
    size_t n = nl ? (size_t)(nl - ld->next) + 1 : strlen(ld->next);
    ld->line++;
    if (n + 1 > (size_t)num || memchr(ld->next, '\0', n)) {
        bad(ld, NULL, "line longer than %d characters", num - 2);
        str[0] = '\n';
        str[1] = '\0';
    } else {
        memcpy(str, ld->next, n);
        str[n] = '\0';
        if (check_line(ld, str)) {
            str[0] = '\n';
            str[1] = '\0';
        }
    }
    ld->next += n;
    return str;
}

int reader_read_file(struct loader *ld, const char *path)
{
    int rc = file_read_text(path, CONFIG_FILE_MAX, &ld->text, NULL);
    switch (rc) {
    case 0:
        ld->next = ld->text;
        return 0;
    case -EFBIG:
        msglist_push(ld->errs, "%s: larger than %u bytes", path, CONFIG_FILE_MAX);
        break;
    case -EINVAL:
        msglist_push(ld->errs, "%s: contains a NUL byte; not a text file", path);
        break;
    default:
        msglist_push(ld->errs, "%s: cannot open: %s", path, strerror(-rc));
        break;
    }
    return rc;
}
