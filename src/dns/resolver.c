/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * resolver.c: c-ares on a ferry loop. c-ares tells us which sockets it wants
 * watched (sock_state_cb); we register them level-triggered on the worker's
 * epoll and keep one timer at ares_timeout(). Results are copied into a
 * fixed-size answer and delivered from a deferred task, so a callback never
 * runs inside the caller's own resolver_query() (c-ares answers /etc/hosts
 * hits synchronously).
 */
#include "dns/resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dns/hosts.h"
#include "util/compiler.h"

struct dns_sock {
    struct dns_sock *next;
    struct io io;
    struct resolver *r;
};

struct dns_req {
    struct task task; /* delivers the result on the loop */
    struct resolver *r;
    dns_cb cb;
    void *arg;
    int status;
    bool in_ares; /* c-ares still holds a pointer to us */
    bool cancelled;
    uint16_t port;
    struct dns_answer ans;
    char name[256];
};

struct dns_cache_entry {
    uint64_t expires_ms;
    int status;
    struct dns_answer ans; /* ports 0 */
    char name[];
};

int resolver_global_init(void)
{
    int rc = ares_library_init(ARES_LIB_INIT_ALL);
    return rc == ARES_SUCCESS ? 0 : -ENOMEM;
}

void resolver_global_fini(void)
{
    ares_library_cleanup();
}

const char *dns_status_str(int status)
{
    switch (status) {
    case DNS_OK:
        return "ok";
    case DNS_NOTFOUND:
        return "name not found";
    case DNS_TIMEOUT:
        return "DNS timeout";
    default:
        return "DNS failure";
    }
}

static void resolver_rearm(struct resolver *r)
{
    struct timeval tv;
    if (!ares_timeout(r->channel, NULL, &tv)) {
        loop_timer_stop(r->l, &r->timer);
        return;
    }
    uint64_t ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
    loop_timer_arm(r->l, &r->timer, ms ? ms : 1);
}

static void resolver_on_timer(struct timer *t)
{
    struct resolver *r = container_of(t, struct resolver, timer);
    ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    resolver_rearm(r);
}

static void resolver_on_io(struct io *io, uint32_t events)
{
    struct dns_sock *s = container_of(io, struct dns_sock, io);
    struct resolver *r = s->r;
    int fd = io->fd;
    ares_socket_t rfd = (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? fd : ARES_SOCKET_BAD;
    ares_socket_t wfd = (events & EPOLLOUT) ? fd : ARES_SOCKET_BAD;
    ares_process_fd(r->channel, rfd, wfd);
    resolver_rearm(r);
}

/* c-ares opens and closes its sockets itself; we only watch them. Entries
 * are kept for reuse rather than freed, because an event for a closed socket
 * may still be queued in the loop's current batch. */
static void sock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
    struct resolver *r = data;
    struct dns_sock *s, *spare = NULL;
    for (s = r->socks; s; s = s->next) {
        if (s->io.fd == fd)
            break;
        if (s->io.fd < 0 && !spare)
            spare = s;
    }
    uint32_t ev = (readable ? EPOLLIN : 0u) | (writable ? EPOLLOUT : 0u);
    if (!ev) {
        if (s)
            loop_io_del(r->l, &s->io);
        return;
    }
    if (s) {
        (void)loop_io_mod(r->l, &s->io, ev);
        return;
    }
    if (!spare) {
        spare = calloc(1, sizeof(*spare));
        if (!spare)
            return; /* the query will time out and fail cleanly */
        spare->r = r;
        io_init(&spare->io, resolver_on_io);
        spare->next = r->socks;
        r->socks = spare;
    }
    (void)loop_io_add(r->l, &spare->io, fd, ev);
}

void resolver_opts_default(struct resolver_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->cache_size = DNS_CACHE_SIZE;
    o->max_ttl_ms = 300 * 1000;
    o->timeout_ms = 2000;
    o->tries = 2; /* a second try only when a server does not answer */
    o->hosts_system = true;
}

static uint32_t cache_slots(uint32_t n)
{
    uint32_t s = 1;
    while (s < n && s < DNS_CACHE_MAX)
        s <<= 1;
    return s;
}

/* A cache of slots for cache_size answers (none for 0) in place of r's. */
static int cache_resize(struct resolver *r, uint32_t cache_size)
{
    uint32_t slots = cache_size ? cache_slots(cache_size) : 0;
    if ((r->cache ? r->cache_mask + 1 : 0) == slots)
        return 0;
    struct dns_cache_entry **cache = NULL;
    if (slots && !(cache = calloc(slots, sizeof(*cache))))
        return -ENOMEM;
    if (r->cache) {
        for (size_t i = 0; i <= r->cache_mask; i++)
            free(r->cache[i]);
        free(r->cache);
    }
    r->cache = cache;
    r->cache_mask = slots ? slots - 1 : 0;
    return 0;
}

/* The c-ares channel for o; 0 or -errno. */
static int channel_open(struct resolver *r, const struct resolver_opts *o)
{
    struct ares_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.sock_state_cb = sock_state_cb;
    opts.sock_state_cb_data = r;
    opts.timeout = (int)o->timeout_ms; /* ms per try, with ARES_OPT_TIMEOUTMS */
    opts.tries = (int)o->tries;
    /* A client names a host as it is (a fully-qualified name): the search
     * list of this host's resolv.conf is not for it. Applied, it doubled
     * the queries for every name that does not resolve (A and AAAA for
     * "name", then for "name.search-domain"), sent clients' typos to the
     * local zone, and could turn a short name into an internal host's
     * (Squid's dns_defnames is off by default for the same reason). */
    opts.flags = ARES_FLAG_NOSEARCH;
    /* ares_getaddrinfo() of c-ares before 1.20 ignores that flag: an empty
     * search list, given here, keeps resolv.conf's from being read. */
    opts.domains = NULL;
    opts.ndomains = 0;
    int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_FLAGS |
               ARES_OPT_DOMAINS;
    /* Without the system's hosts file ([dns] hosts = PATH or none), c-ares
     * asks DNS only ("b"); otherwise its own "lookups" stay (resolv.conf,
     * nsswitch.conf or host.conf; "fb": /etc/hosts, then DNS). */
    static char dns_only[] = "b";
    if (!o->hosts_system) {
        opts.lookups = dns_only;
        mask |= ARES_OPT_LOOKUPS;
    }
    ares_channel ch;
    int rc = ares_init_options(&ch, &opts, mask);
    if (rc != ARES_SUCCESS)
        return rc == ARES_ENOMEM ? -ENOMEM : -EIO;
    if (o->servers && *o->servers) {
        rc = ares_set_servers_ports_csv(ch, o->servers);
        if (rc != ARES_SUCCESS) {
            ares_destroy(ch);
            return rc == ARES_ENOMEM ? -ENOMEM : -EINVAL;
        }
    }
    r->channel = ch;
    return 0;
}

int resolver_init(struct resolver *r, struct loop *l, const struct resolver_opts *o)
{
    struct resolver_opts defaults;
    if (!o) {
        resolver_opts_default(&defaults);
        o = &defaults;
    }
    memset(r, 0, sizeof(*r));
    r->l = l;
    r->min_ttl_ms = o->min_ttl_ms;
    r->max_ttl_ms = o->max_ttl_ms;
    r->unanswered = o->unanswered;
    r->unanswered_arg = o->unanswered_arg;
    timer_init(&r->timer, resolver_on_timer);
    int rc = cache_resize(r, o->cache_size);
    if (rc)
        return rc;
    rc = channel_open(r, o);
    if (rc) {
        free(r->cache);
        r->cache = NULL;
        return rc;
    }
    if (o->servers && *o->servers && !(r->servers = strdup(o->servers))) {
        resolver_fini(r);
        return -ENOMEM;
    }
    r->hosts = dns_hosts_ref(o->hosts);
    return 0;
}

int resolver_update(struct resolver *r, const struct resolver_opts *o)
{
    r->min_ttl_ms = o->min_ttl_ms;
    r->max_ttl_ms = o->max_ttl_ms;
    if (r->hosts != o->hosts) {
        dns_hosts_unref(r->hosts);
        r->hosts = dns_hosts_ref(o->hosts);
    }
    return cache_resize(r, o->cache_size);
}

void resolver_fini(struct resolver *r)
{
    if (r->channel) {
        ares_destroy(r->channel); /* runs pending callbacks with ARES_EDESTRUCTION */
        r->channel = NULL;
    }
    loop_timer_stop(r->l, &r->timer);
    while (r->socks) {
        struct dns_sock *s = r->socks;
        r->socks = s->next;
        free(s);
    }
    if (r->cache) {
        for (size_t i = 0; i <= r->cache_mask; i++)
            free(r->cache[i]);
        free(r->cache);
        r->cache = NULL;
    }
    dns_hosts_unref(r->hosts);
    r->hosts = NULL;
    free(r->servers);
    r->servers = NULL;
}

/* Lower-case copy without one trailing dot; false if it does not fit. */
static bool normalize(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (n > 0 && name[n - 1] == '.')
        n--;
    if (n == 0 || n >= cap)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)name[i]);
    out[n] = '\0';
    return true;
}

static bool has_label_suffix(const char *name, const char *label)
{
    size_t n = strlen(name), m = strlen(label);
    if (n == m)
        return strcmp(name, label) == 0;
    return n > m && name[n - m - 1] == '.' && strcmp(name + n - m, label) == 0;
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 16777619u;
    }
    return h;
}

static void answer_set_port(struct dns_answer *a, uint16_t port)
{
    for (unsigned i = 0; i < a->n; i++)
        a->a[i].port = port;
}

static bool cache_get(struct resolver *r, const char *key, int *status, struct dns_answer *ans)
{
    if (!r->cache)
        return false;
    struct dns_cache_entry *e = r->cache[fnv1a(key) & r->cache_mask];
    if (!e || strcmp(e->name, key) != 0 || e->expires_ms <= loop_now(r->l))
        return false;
    *status = e->status;
    *ans = e->ans;
    return true;
}

/* Keep an answer for its TTL (seconds) clamped to [min_ttl, max_ttl]. */
static void cache_put(struct resolver *r, const char *key, int status, const struct dns_answer *ans,
                      uint32_t ttl_s)
{
    uint64_t ttl_ms = (uint64_t)ttl_s * 1000;
    if (ttl_ms < r->min_ttl_ms)
        ttl_ms = r->min_ttl_ms;
    if (ttl_ms > r->max_ttl_ms)
        ttl_ms = r->max_ttl_ms;
    if (ttl_ms == 0 || !r->cache)
        return;
    size_t len = strlen(key);
    struct dns_cache_entry **slot = &r->cache[fnv1a(key) & r->cache_mask];
    struct dns_cache_entry *e = *slot;
    if (!e || strlen(e->name) < len) {
        free(e);
        *slot = NULL;
        e = malloc(sizeof(*e) + len + 1);
        if (!e)
            return;
        *slot = e;
    }
    memcpy(e->name, key, len + 1);
    e->status = status;
    e->ans = *ans;
    answer_set_port(&e->ans, 0);
    e->expires_ms = loop_now(r->l) + ttl_ms;
}

static bool special_name(const char *key, int *status, struct dns_answer *ans)
{
    memset(ans, 0, sizeof(*ans));
    if (has_label_suffix(key, "localhost")) {
        addr_parse_ip("127.0.0.1", 0, &ans->a[0]);
        addr_parse_ip("::1", 0, &ans->a[1]);
        ans->n = 2;
        *status = DNS_OK;
        return true;
    }
    if (has_label_suffix(key, "invalid")) {
        *status = DNS_NOTFOUND;
        return true;
    }
    return false;
}

bool resolver_lookup_now(struct resolver *r, const char *name, uint16_t port, int *status,
                         struct dns_answer *ans)
{
    char key[256];
    if (!normalize(name, key, sizeof(key))) {
        memset(ans, 0, sizeof(*ans));
        *status = DNS_FAILED;
        return true;
    }
    if (special_name(key, status, ans)) {
        answer_set_port(ans, port);
        return true;
    }
    if (dns_hosts_lookup(r->hosts, key, ans)) { /* before DNS, like /etc/hosts */
        *status = DNS_OK;
        answer_set_port(ans, port);
        return true;
    }
    if (cache_get(r, key, status, ans)) {
        r->stats.cache_hits++;
        answer_set_port(ans, port);
        return true;
    }
    return false;
}

static void req_free(struct dns_req *q)
{
    loop_task_cancel(&q->task);
    free(q);
}

static void req_deliver(struct task *t)
{
    struct dns_req *q = container_of(t, struct dns_req, task);
    if (!q->cancelled)
        q->cb(q->arg, q->status, &q->ans);
    free(q);
}

static int map_ares_status(int st)
{
    switch (st) {
    case ARES_SUCCESS:
        return DNS_OK;
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
    case ARES_ENONAME:
        return DNS_NOTFOUND;
    case ARES_ETIMEOUT:
        return DNS_TIMEOUT;
    default:
        return DNS_FAILED;
    }
}

static void on_ares_result(void *arg, int st, int timeouts, struct ares_addrinfo *res)
{
    (void)timeouts;
    struct dns_req *q = arg;
    struct resolver *r = q->r;
    uint32_t ttl = UINT32_MAX;
    q->in_ares = false;
    memset(&q->ans, 0, sizeof(q->ans));
    if (st == ARES_SUCCESS && res) {
        for (struct ares_addrinfo_node *n = res->nodes; n && q->ans.n < DNS_MAX_ADDRS;
             n = n->ai_next) {
            struct addr a;
            if (n->ai_family != AF_INET && n->ai_family != AF_INET6)
                continue;
            addr_from_sockaddr(&a, n->ai_addr);
            a.port = 0;
            bool dup = false;
            for (unsigned i = 0; i < q->ans.n && !dup; i++)
                dup = addr_equal(&q->ans.a[i], &a);
            if (dup)
                continue;
            q->ans.a[q->ans.n++] = a;
            if (n->ai_ttl >= 0 && (uint32_t)n->ai_ttl < ttl)
                ttl = (uint32_t)n->ai_ttl;
        }
    }
    if (res)
        ares_freeaddrinfo(res);
    q->status = map_ares_status(st);
    if (q->status == DNS_OK && q->ans.n == 0)
        q->status = DNS_NOTFOUND;
    if (st == ARES_EDESTRUCTION || st == ARES_ECANCELLED) {
        free(q); /* the resolver is going away; nobody is waiting */
        return;
    }
    if (q->status != DNS_OK)
        r->stats.failures++;
    if (st == ARES_ETIMEOUT || st == ARES_ECONNREFUSED) { /* no server answered */
        r->stats.unanswered++;
        if (r->unanswered)
            r->unanswered(r->unanswered_arg, q->name, q->status);
    }
    char key[256];
    if (normalize(q->name, key, sizeof(key))) {
        if (q->status == DNS_OK)
            cache_put(r, key, DNS_OK, &q->ans, ttl == UINT32_MAX ? 0 : ttl);
        else if (q->status == DNS_NOTFOUND)
            cache_put(r, key, DNS_NOTFOUND, &q->ans, DNS_NEGATIVE_TTL_S);
    }
    answer_set_port(&q->ans, q->port);
    if (q->cancelled) {
        free(q);
        return;
    }
    loop_defer(r->l, &q->task);
}

struct dns_req *resolver_query(struct resolver *r, const char *name, uint16_t port, dns_cb cb,
                               void *arg)
{
    struct dns_req *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    task_init(&q->task, req_deliver);
    q->r = r;
    q->cb = cb;
    q->arg = arg;
    q->port = port;
    size_t n = strlen(name);
    if (n >= sizeof(q->name))
        n = sizeof(q->name) - 1;
    memcpy(q->name, name, n);
    q->name[n] = '\0';
    r->stats.queries++;

    struct ares_addrinfo_hints hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    q->in_ares = true;
    ares_getaddrinfo(r->channel, q->name, NULL, &hints, on_ares_result, q);
    resolver_rearm(r);
    return q;
}

void resolver_cancel(struct dns_req *q)
{
    if (!q)
        return;
    if (q->in_ares) {
        q->cancelled = true; /* freed when c-ares reports back */
        return;
    }
    req_free(q);
}
