/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * options_int.h: what options.c (the command line's parse, defaults and
 * range checks) and options_table.c (the option table and how each
 * option's argument is read) share, inside bench/ only: the row of the
 * option table and the usage error both report.
 */
#ifndef FERRY_BENCH_OPTIONS_INT_H
#define FERRY_BENCH_OPTIONS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/options.h"

/* The type of the field of struct bench_opts an option sets. */
enum field { F_NONE, F_UNSIGNED, F_INT, F_DOUBLE, F_SIZE, F_BOOL, F_STR };

/* A range's exceptions. */
#define RG_ZERO_OFF     1u /* 0 is allowed and means off ("0 (off) or lo..hi") */
#define RG_ZERO_DEFAULT 2u /* 0 means the default: not checked */
#define RG_NEG_DEFAULT  4u /* below 0 means the default: not checked */

struct optdef;

/* Apply one option's argument (NULL for a flag). Returns 0, or the exit
 * status of a usage error told on stderr. */
typedef int (*opt_set_fn)(const struct optdef *d, const char *arg, struct bench_opts *o,
                          struct bench_cli *c);

/* One row of the option table. */
struct optdef {
    const char *name; /* "--name": getopt_long sees name + 2 */
    int has_arg;      /* no_argument or required_argument */
    opt_set_fn set;
    enum field field;
    size_t off;            /* of the field in struct bench_opts */
    int val;               /* set_flag: the value; set_via, set_mode: enum bench_mode */
    uint64_t pmin;         /* set_count: what parses at all, pmin..pmax (pmax 0: UINT_MAX) */
    uint64_t pmax;         /* beyond it, a usage error at once */
    enum bench_sv sv;      /* its default depends on the scenario (and maybe its range) */
    struct bench_range ok; /* bench_params_check(): lo..hi, or hi 0: any */
    const char *unit;      /* of the range, in its message ("bytes", "seconds") */
    unsigned rg;           /* RG_* */
};

/* The number of rows of the option table (a definition with another count
 * does not compile). */
#define BENCH_NOPTS 44

/* The option table, in the order getopt_long lists them when an
 * abbreviation is ambiguous; bench_params_check() checks the ranges in this
 * order too (options_table.c). */
extern const struct optdef bench_optdefs[BENCH_NOPTS];

/* Tell a usage error on stderr ("ferry bench: what"). Returns 2, the exit
 * status of a usage error. */
static inline int bench_usage_error(const char *what)
{
    fprintf(stderr, "ferry bench: %s\n", what);
    return 2;
}

#endif
