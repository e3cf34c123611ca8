/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verifier.c: the verifier pool. A mutex guards the job queue: it is taken
 * once per Argon2 verification (tens of milliseconds of work), never on the
 * relay path and never for a cache hit. Results go back lock-free.
 */
#include "auth/verifier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log/log.h"

int verifier_check(const struct userlist *ul, const struct user *u, const char *pass, size_t plen)
{
    if (!u || u->kind == USER_PLAIN) {
        /* Pay what an Argon2id user of this list pays, whatever the outcome. */
        (void)fcrypto_pwhash_verify(ul->dummy, pass, plen);
        if (!u)
            return -1;
        /* Compare tags of equal length: constant time whatever the lengths. */
        static const uint8_t key[FCRYPTO_KEY_LEN] = {0};
        uint8_t a[FCRYPTO_TAG_LEN], b[FCRYPTO_TAG_LEN];
        fcrypto_tag2(a, key, "", 0, u->secret, u->slen_plain);
        fcrypto_tag2(b, key, "", 0, pass, plen);
        return fcrypto_equal(a, b, sizeof(a)) ? 0 : -1;
    }
    return fcrypto_pwhash_verify(u->secret, pass, plen);
}

static void deliver(struct auth_job *job)
{
    struct auth_port *p = job->port;
    struct auth_job *head = atomic_load_explicit(&p->done, memory_order_relaxed);
    do {
        job->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&p->done, &head, job, memory_order_release,
                                                    memory_order_relaxed));
    if (!head) { /* the stack was empty: the worker may be asleep */
        uint64_t one = 1;
        ssize_t rc = write(p->io.fd, &one, sizeof(one));
        (void)rc;
    }
}

static void *verifier_main(void *arg)
{
    struct verifier *v = arg;
    for (;;) {
        pthread_mutex_lock(&v->mu);
        while (!v->head && !v->stop)
            pthread_cond_wait(&v->cv, &v->mu);
        struct auth_job *job = v->head;
        if (job) {
            v->head = job->next;
            if (!v->head)
                v->tail = NULL;
            v->len--;
        }
        bool stop = v->stop;
        pthread_mutex_unlock(&v->mu);
        if (!job)
            break;
        if (stop)
            job->result = -1;
        else if (job->check)
            job->result = job->check(job);
        else
            job->result = verifier_check(job->ul, job->u, job->pass, job->plen);
        atomic_fetch_add_explicit(job->result ? &v->rejected : &v->verified, 1,
                                  memory_order_relaxed);
        explicit_bzero(job->pass, sizeof(job->pass));
        deliver(job);
    }
    return NULL;
}

int verifier_start(struct verifier *v, unsigned nthreads, unsigned queue_cap)
{
    memset(v, 0, sizeof(*v));
    if (fcrypto_init())
        return -EIO;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    v->cap = queue_cap;
    v->threads = calloc(nthreads, sizeof(*v->threads));
    if (!v->threads)
        return -ENOMEM;
    for (; v->nthreads < nthreads; v->nthreads++) {
        int rc = pthread_create(&v->threads[v->nthreads], NULL, verifier_main, v);
        if (rc) {
            verifier_stop(v);
            return -rc;
        }
    }
    return 0;
}

void verifier_stop(struct verifier *v)
{
    if (!v->threads)
        return;
    pthread_mutex_lock(&v->mu);
    v->stop = true;
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
    for (unsigned i = 0; i < v->nthreads; i++)
        pthread_join(v->threads[i], NULL);
    free(v->threads);
    v->threads = NULL;
    pthread_mutex_destroy(&v->mu);
    pthread_cond_destroy(&v->cv);
}

int verifier_submit(struct verifier *v, struct auth_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&v->mu);
    if (v->len >= v->cap || v->stop) {
        pthread_mutex_unlock(&v->mu);
        return -EAGAIN;
    }
    if (v->tail)
        v->tail->next = job;
    else
        v->head = job;
    v->tail = job;
    v->len++;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    return 0;
}

void auth_job_free(struct auth_job *job)
{
    if (!job)
        return;
    while (job->followers) {
        struct auth_job *f = job->followers;
        job->followers = f->next;
        f->followers = NULL;
        auth_job_free(f);
    }
    userlist_unref(job->ul);
    explicit_bzero(job, sizeof(*job));
    free(job);
}

/* Worker side: take every finished job, oldest first, and hand it over. */
static void auth_port_on_io(struct io *io, uint32_t events)
{
    (void)events;
    struct auth_port *p = container_of(io, struct auth_port, io);
    uint64_t v;
    while (read(io->fd, &v, sizeof(v)) > 0)
        ;
    struct auth_job *list = atomic_exchange_explicit(&p->done, NULL, memory_order_acquire);
    struct auth_job *fifo = NULL;
    while (list) {
        struct auth_job *next = list->next;
        list->next = fifo;
        fifo = list;
        list = next;
    }
    while (fifo) {
        struct auth_job *job = fifo;
        fifo = job->next;
        if (job->done)
            job->done(job->owner, job); /* frees the job; owner may be NULL */
        else
            auth_job_free(job);
    }
}

int auth_port_init(struct auth_port *p, struct loop *l)
{
    atomic_init(&p->done, NULL);
    io_init(&p->io, auth_port_on_io);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0)
        return -errno;
    int rc = loop_io_add(l, &p->io, efd, EPOLLIN);
    if (rc)
        close(efd);
    return rc;
}

void auth_port_fini(struct auth_port *p, struct loop *l)
{
    if (p->io.fd < 0)
        return;
    struct auth_job *list = atomic_exchange(&p->done, NULL);
    while (list) {
        struct auth_job *next = list->next;
        auth_job_free(list);
        list = next;
    }
    int fd = p->io.fd;
    loop_io_del(l, &p->io);
    close(fd);
}
