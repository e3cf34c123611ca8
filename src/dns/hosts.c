/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hosts.c: the hosts-file table of hosts.h: (name, address) pairs sorted by
 * name, then by line, so a lookup is a binary search and answers in file
 * order. Built once at configuration load; read-only afterwards, so workers
 * share it without locks.
 */
#include "dns/hosts.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/resolver.h"
#include "util/addr.h"
#include "util/file.h"

#define HOSTS_FILE_MAX (64u << 20)

struct hosts_entry {
    const char *name; /* into names */
    uint32_t seq;     /* position in the file, for a stable order */
    struct addr a;
};

struct dns_hosts {
    _Atomic uint32_t refs;
    size_t n, cap;
    struct hosts_entry *e;
    char *names; /* a lower-cased copy of the text the entries point into */
};

static int entry_cmp(const void *pa, const void *pb)
{
    const struct hosts_entry *a = pa, *b = pb;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int add_entry(struct dns_hosts *h, const char *name, const struct addr *a)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct hosts_entry *e = realloc(h->e, cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        h->e = e;
        h->cap = cap;
    }
    h->e[h->n] = (struct hosts_entry){.name = name, .seq = (uint32_t)h->n, .a = *a};
    h->n++;
    return 0;
}

/* Next whitespace-separated word of a line (NUL-terminated in place), or
 * NULL at its end. */
static char *next_word(char **p)
{
    char *s = *p + strspn(*p, " \t\r");
    if (!*s)
        return NULL;
    size_t n = strcspn(s, " \t\r");
    *p = s + n + (s[n] ? 1 : 0);
    s[n] = '\0';
    return s;
}

static int parse_line(struct dns_hosts *h, char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *p = line, *ip = next_word(&p), *name;
    struct addr a;
    if (!ip || addr_parse_ip(ip, 0, &a) != 0)
        return 0;
    addr_unmap(&a);
    while ((name = next_word(&p)) != NULL) {
        size_t n = strlen(name);
        if (n > 1 && name[n - 1] == '.')
            name[--n] = '\0';
        if (n == 0 || n > 253)
            continue;
        for (size_t i = 0; i < n; i++)
            name[i] = (char)tolower((unsigned char)name[i]);
        if (add_entry(h, name, &a))
            return -ENOMEM;
    }
    return 0;
}

int dns_hosts_parse(const char *text, struct dns_hosts **out)
{
    struct dns_hosts *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    atomic_init(&h->refs, 1);
    h->names = strdup(text);
    if (!h->names) {
        free(h);
        return -ENOMEM;
    }
    for (char *p = h->names; *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (parse_line(h, p)) {
            dns_hosts_unref(h);
            return -ENOMEM;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    if (h->n)
        qsort(h->e, h->n, sizeof(*h->e), entry_cmp);
    *out = h;
    return 0;
}

int dns_hosts_load(const char *path, struct dns_hosts **out)
{
    char *text;
    int rc = file_read_text(path, HOSTS_FILE_MAX, &text, NULL);
    if (rc)
        return rc;
    rc = dns_hosts_parse(text, out);
    free(text);
    return rc;
}

bool dns_hosts_lookup(const struct dns_hosts *h, const char *key, struct dns_answer *ans)
{
    size_t lo = 0, hi = h ? h->n : 0;
    while (lo < hi) { /* the first entry not below key */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(h->e[mid].name, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!h || lo == h->n || strcmp(h->e[lo].name, key) != 0)
        return false;
    memset(ans, 0, sizeof(*ans));
    for (size_t i = lo; i < h->n && strcmp(h->e[i].name, key) == 0; i++) {
        bool dup = false;
        for (unsigned j = 0; j < ans->n && !dup; j++)
            dup = addr_equal(&ans->a[j], &h->e[i].a);
        if (!dup && ans->n < DNS_MAX_ADDRS)
            ans->a[ans->n++] = h->e[i].a;
    }
    return true;
}

size_t dns_hosts_count(const struct dns_hosts *h)
{
    return h ? h->n : 0;
}

struct dns_hosts *dns_hosts_ref(struct dns_hosts *h)
{
    if (h)
        atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
    return h;
}

void dns_hosts_unref(struct dns_hosts *h)
{
    if (!h || atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
        return;
    free(h->e);
    free(h->names);
    free(h);
}
