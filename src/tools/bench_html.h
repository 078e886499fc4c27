/* The pieces of splash bench's HTML report (bench_html*.c): JSON readers,
 * HTML escaping, and the inline SVG charts. One self-contained page, no
 * script, no external resource; a Content-Security-Policy meta element
 * forbids everything but its own style sheet (allowed by hash). */
#ifndef SPLASH_BENCH_HTML_H
#define SPLASH_BENCH_HTML_H

#include <jansson.h>
#include <stdio.h>

/* A number, a string ("" when absent) and an integer member of o. */
double bh_num(const json_t *o, const char *k);
const char *bh_str(const json_t *o, const char *k);
long long bh_int(const json_t *o, const char *k);

/* Writes s with &, <, >, " escaped (NULL writes nothing). */
void bh_esc(FILE *f, const char *s);

/* The anchor id of a request row ("req-<round>-<slot>-<index>") or, with
 * request < 0, of a slot's section ("slot-<round>-<slot>"). */
void bh_anchor(char *out, size_t cap, long long round, const char *slot, long long request);

/* Metric `key` per slot: A and B bars per round, each round's A and B
 * means, and the noise band (where B would be no change from A). */
void bh_chart_slots(FILE *f, const char *key, const json_t *metric);
/* Metric `key`'s change per round and combined, against +-needs. */
void bh_chart_change(FILE *f, const char *key, const json_t *metric);
/* The chunk-gap distribution of both arms (the report's chunk_gaps_ms). */
void bh_chart_gaps(FILE *f, const json_t *dist);

/* The environment table: the machine, the run, and both arms side by side. */
void bh_environment(FILE *f, const json_t *report);

#endif
