/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * report.h: what `ferry bench` prints on stdout: the header before the
 * first run (table mode) and the report of the runs done, as a table or
 * as one JSON line. Only printing: it decides nothing about the runs.
 */
#ifndef FERRY_BENCH_REPORT_H
#define FERRY_BENCH_REPORT_H

#include "bench/bench.h"

/* The table's header, before the first run: the scenario, target (what is
 * measured, in words) and the parameters this scenario uses (no others: a
 * warm-up the scenario does not have is not shown). Nothing in --json mode:
 * the JSON line carries them all. */
void bench_report_header(const struct bench *b, const char *target);

/* The report of runs[0..nruns) (nruns >= 1, at most BENCH_MAX_RUNS): the
 * median, min and max of each figure of the first run, and the notes and
 * shortfalls of every run. error is NULL when every run passed, else why
 * the last one failed (its figures are still shown). */
void bench_report(const struct bench *b, const char *target, const struct result *runs,
                  unsigned nruns, const char *error);

#endif
