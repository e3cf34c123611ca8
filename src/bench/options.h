/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * options.h: `ferry bench`'s command line. Two tables say what it may
 * hold: the scenario table (each scenario's function, its defaults for the
 * options whose default depends on the scenario, the ranges it narrows,
 * what it needs and which parameters its report names) and the option
 * table in options_table.c (how each option is read, where its value goes, and
 * the range a value must be in to give a figure worth the name).
 *
 * This room only reads arguments and says what is wrong with them (on
 * stderr, as a usage error): it starts nothing, measures nothing and
 * prints no report. Adding a scenario means adding a row here and its
 * function; adding an option means adding a row to the option table.
 */
#ifndef FERRY_BENCH_OPTIONS_H
#define FERRY_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/bench.h"

/* The options whose default, and perhaps range, depends on the scenario
 * (0 is "none": an option row without one). */
enum bench_sv { SV_NONE, SV_CONNECTIONS, SV_CONCURRENCY, SV_PAYLOAD, SV_COUNT };

/* The values an option may take, lo..hi; hi == 0: no range. */
struct bench_range {
    double lo, hi;
};

/* What a scenario is and needs. */
#define SCF_NO_PROXY      0x01u /* runs in this process: no proxy, no targets (rules) */
#define SCF_UDP           0x02u /* UDP: SOCKS5 or --direct only (no --relay, no --http-proxy) */
#define SCF_HTTP_ABSOLUTE 0x04u /* --http-proxy absolute (GET http://...) applies */
#define SCF_HOLDS         0x08u /* holds --connections open: descriptors checked first, more echo ports */
#define SCF_COLD          0x10u /* a fresh self-hosted ferry for each run */
#define SCF_OWN_SETUP                                                          \
    0x20u /* starts what it measures itself (edge): no targets, no SOCKS ferry \
           */

/* The parameters a scenario uses: its report's header names these, in this
 * order, and no others. */
#define SCP_WARMUP      0x0001u /* warm-up --warmup */
#define SCP_WINDOW      0x0002u /* window --duration */
#define SCP_HOLD        0x0004u /* hold --duration */
#define SCP_WINDOW_EACH 0x0008u /* window --duration per lookup kind */
#define SCP_THREADS     0x0010u
#define SCP_CONNECTIONS 0x0020u /* connections --connections */
#define SCP_CLIENTS     0x0040u /* clients --connections */
#define SCP_CONCURRENCY 0x0080u
#define SCP_REQUESTS    0x0100u /* requests and warm-up requests */
#define SCP_DOWNLOADS   0x0200u /* downloads x download size */
#define SCP_PAYLOAD     0x0400u
#define SCP_PING        0x0800u
#define SCP_UDP_MODES   0x1000u /* --blast, --no-echo-gro when given */
#define SCP_RULES       0x2000u
#define SCP_EDGE        0x4000u /* --hello, --hold */

/* One row of the scenario table. */
struct bench_scenario {
    const char *name;
    scenario_fn run;
    unsigned flags;                     /* SCF_* */
    unsigned shows;                     /* SCP_* */
    uint64_t def[SV_COUNT];             /* the defaults of the SV_* options */
    struct bench_range range[SV_COUNT]; /* narrower than the option's own ("for NAME"), or hi 0 */
    /* What it measures in words for the header (SCF_NO_PROXY, SCF_OWN_SETUP), or NULL. */
    void (*describe)(const struct bench_opts *o, char *out, size_t cap);
};

extern const struct bench_scenario bench_scenarios[];
extern const size_t bench_nscenarios;

/* The row of scenario name, or NULL (name may be NULL). */
const struct bench_scenario *bench_scenario_find(const char *name);

/* What the command line says beyond struct bench_opts. */
struct bench_cli {
    const struct bench_scenario *sc; /* the row of o->scenario */
    unsigned target_port;            /* --target-port; 0: any free port */
    char proxy_conf[4096];           /* --proxy-set K=V, as config lines "K = V\n" */
    unsigned given;                  /* 1u << SV_*: given, so the scenario's default yields */
    bool help;                       /* --help was given */
    bool edge_given;                 /* --hello, --edge-target or --hold was given */
    const char *args[128];           /* o->argv points here: argv as given */
};

/* bench_opts_parse(): the options are good, run the bench. */
#define BENCH_RUN (-1)

/* Read `bench SCENARIO [options]` (argv[0] is "bench") into o and cli:
 * the defaults, then the options, then the scenario's defaults for the
 * SV_* options not given, then the checks (combinations, ranges).
 * Returns BENCH_RUN when the bench should run; otherwise the exit status
 * to end with: 0 after --help (the usage on stdout), 2 after a usage error
 * (told on stderr). Uses getopt_long (restarted: optind = 0), which
 * reorders argv; o->argv keeps them as given (cli must outlive o). */
int bench_opts_parse(int argc, char **argv, struct bench_opts *o, struct bench_cli *cli);

/* o := every default for scenario sc, as if nothing but its name had been
 * given (o->argv stays NULL). */
void bench_opts_defaults(struct bench_opts *o, const struct bench_scenario *sc);

/* The whole --help text. */
void bench_usage(FILE *f);

#endif
