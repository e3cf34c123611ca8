/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wan.h: `ferry bench wan`, an emulated wide-area path. Two network
 * namespaces (A: 10.77.0.1, fd77::1; B: 10.77.0.2, fd77::2), each with a
 * TUN device, and a forwarder in this process that moves every packet
 * from one to the other after a delay (with jitter), a random loss and a
 * rate limit with a bounded queue, in both directions.
 *
 * Three parts: the path's parameters and what happens to one packet
 * (wanpath.c, pure: no I/O, no clock, a seeded PRNG), the forwarder
 * (wanfwd.c: the TUN descriptors, the queues, the threads; with TUN
 * offloads it cuts GSO packets into their segments with wangso.c, pure),
 * and the namespaces and the commands run in them (wan.c).
 */
#ifndef FERRY_BENCH_WAN_H
#define FERRY_BENCH_WAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The addresses the two ends get (the TUN device is WAN_IFNAME in both). */
#define WAN_ADDR_A    "10.77.0.1"
#define WAN_ADDR_B    "10.77.0.2"
#define WAN_ADDR6_A   "fd77::1"
#define WAN_ADDR6_B   "fd77::2"
#define WAN_IFNAME    "wan0"
/* Namespaces are named PREFIX<pid>-a and PREFIX<pid>-b; names under the
 * prefix whose pid is gone are a crashed run's and removed at start. */
#define WAN_NS_PREFIX "ferrywan-"

/* The path, the same in both directions. */
struct wan_conf {
    uint64_t delay_ns;  /* one way */
    uint64_t jitter_ns; /* uniform in [-jitter, +jitter] around delay */
    double loss;        /* 0..1: probability that a packet is dropped */
    uint64_t rate_bps;  /* bits per second of IP packets; 0: no cap */
    uint64_t queue_ns;  /* with a rate: the queue before the link, in time at the rate */
    uint64_t seed;      /* of the PRNG (each direction derives its own) */
    unsigned mtu;       /* of both TUN devices */
    unsigned threads;   /* 2: one per direction; 1: one loop for both */
    bool gso;           /* TUN offloads: GSO packets in, cut into per-segment pieces */
    uint64_t loss_cut;  /* derived: a draw below it is a loss (loss * 2^64) */
};

/* The defaults: no delay, no loss, no cap, a 50 ms queue, seed 1, MTU
 * 1500, a thread per direction, gso on. */
void wan_conf_init(struct wan_conf *c);

/* Set one parameter by name, as `--NAME VALUE` or `NAME=VALUE` of a spec:
 * delay and jitter ("25ms", "500us", "1.5ms", "0"), loss ("0.5%", 0..100),
 * rate ("100mbit", "1gbit", "800kbit", "1000000bit", or "0"/"none" for no
 * cap), queue (a time, 1us..10s), seed (a whole number), mtu (576..9000),
 * threads (1 or 2), gso (on or off). Returns 0, -ENOENT for an unknown name, -EINVAL for a
 * malformed value, -ERANGE for one out of range. Pure. */
int wan_conf_set(struct wan_conf *c, const char *name, const char *value);

/* A spec "delay=25ms,loss=0.5%,rate=1000mbit": each NAME=VALUE through
 * wan_conf_set. On failure *bad points at the offending item (in spec) and
 * the error is returned. Pure. */
int wan_conf_parse(struct wan_conf *c, const char *spec, const char **bad);

/* The path in words ("delay 25 ms +- 1 ms, loss 0.5 %, rate 1000 Mbit/s,
 * queue 50 ms, MTU 1500, GSO off"; nothing said of GSO when on), into
 * out[cap]. */
void wan_conf_describe(const struct wan_conf *c, char *out, size_t cap);

/* What happens to one packet. */
enum wan_verdict {
    WAN_PASS,       /* it leaves at *release */
    WAN_DROP_LOSS,  /* the random loss took it */
    WAN_DROP_QUEUE, /* the queue before the link was full (tail drop) */
};

/* One direction's state: the PRNG, when the link is next free, the last
 * release time (packets leave in order: jitter never reorders, as netem's
 * does not with a rate), and the counts. Caller storage. */
struct wan_shaper {
    const struct wan_conf *conf;
    uint64_t prng;
    uint64_t link_free_ns;
    uint64_t last_release_ns;
    uint64_t in, passed, lost, tail_dropped, full_dropped, write_failed;
    uint64_t bytes_in;
    uint64_t queued_ns;            /* the sum over passed packets of their wait for the link */
    uint64_t late_ns, late_max_ns; /* the forwarder's: written after the release time */
};

/* Start a direction (dir 0 or 1 gives two different PRNG streams of one
 * seed). */
void wan_shaper_init(struct wan_shaper *s, const struct wan_conf *c, unsigned dir);

/* A packet of len bytes arrives at now_ns: is it lost, tail-dropped, or
 * when does it leave? The link serialises packets at the rate (a token
 * bucket of one packet's depth); a packet that would wait more than the
 * queue's time for the link is dropped. Then the delay and jitter.
 * Counts it. Pure. */
enum wan_verdict wan_shaper_admit(struct wan_shaper *s, uint64_t now_ns, size_t len,
                                  uint64_t *release_ns);

/* The next 64-bit draw of a splitmix64 generator. */
uint64_t wan_prng_next(uint64_t *state);

struct wan_fwd;

/* Start forwarding between the TUN descriptors fd_a and fd_b (non-blocking,
 * open in their namespaces; with c->gso, opened with IFF_VNET_HDR, a
 * 10-byte virtio_net_hdr, and TCP segmentation offload) with c's path:
 * c->threads threads. Each segment of a GSO packet is one packet for the
 * shaper (loss, rate, queue and counts are per segment, as on the wire);
 * the segments that pass leave as pieces: runs of consecutive passed
 * segments of one GSO packet, a run cut also where a segment's release
 * time is more than 250 us after the run's first one's, each piece one
 * write released at its last segment's release time (wanfwd.c). Returns
 * the forwarder, or NULL with errno set. c must outlive it. */
struct wan_fwd *wan_fwd_start(const struct wan_conf *c, int fd_a, int fd_b);

/* Stop and join the threads, print each direction's counts on stderr
 * (unless quiet), and free it (not the descriptors). NULL is a no-op. */
void wan_fwd_stop(struct wan_fwd *f, bool quiet);

/* A path up: its namespaces (A, B), their TUN descriptors, the forwarder.
 * Caller storage; zero it before wan_path_up(). */
struct wan_path {
    char ns[2][48]; /* WAN_NS_PREFIX<pid>-a, -b */
    bool made[2];
    int tun[2];
    int nsfd[2]; /* the namespaces, for wan_path_enter() */
    int selffd;  /* this process's own namespace */
    struct wan_fwd *fwd;
    int janitor_fd; /* the write end of the janitor's pipe (0: none) */
    pid_t janitor;  /* removes the namespaces once this process is gone */
};
enum wan_side { WAN_SIDE_A, WAN_SIDE_B, WAN_SIDE_OWN };

/* Make the path c says: remove a crashed run's namespaces, make A and B
 * with their TUN devices, addresses and TCP buffer maxima, start the
 * forwarder. A janitor process (out of the terminal's process group)
 * removes the namespaces when this process ends however it ends (a signal,
 * a crash): it waits for the end of a pipe only this process holds. Needs root and /dev/net/tun.
 * Returns 0, or 1 after telling why on stderr (what was made is removed again). */
int wan_path_up(struct wan_path *p, const struct wan_conf *c);

/* Move the calling thread into a side's namespace: sockets it opens, the
 * threads and the processes it starts from then on are there. Returns 0
 * or -errno. */
int wan_path_enter(struct wan_path *p, enum wan_side side);

/* Stop the forwarder (its counts on stderr unless quiet), close the TUN
 * devices, remove both namespaces; the calling thread goes back to its
 * own namespace. A path never made (zeroed) is a no-op. */
void wan_path_down(struct wan_path *p, bool quiet);

/* `ferry bench wan [options]`: argv[0] is "wan". Returns the exit status. */
int wan_main(int argc, char **argv);

#endif
