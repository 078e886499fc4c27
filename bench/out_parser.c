/* Time the streamed output parser (server/structured.c) on one tool call
 * whose arguments are long (an agent writing a file through a tool): the
 * call's text fed in pieces of a few bytes, as tokens arrive, with tools on.
 * The parser holds the call's body until </tool_call>, so this is where a
 * per-piece rescan of the held text would cost O(n^2). Prints, per
 * argument length, microseconds per piece, median of ROUNDS runs.
 *   cc -O2 -std=c17 -Isrc bench/out_parser.c build/libsplash_core.a -ljansson -lpcre2-8 \
 *      -lutf8proc -lcrypto -lm -lpthread -o /tmp/out_parser && /tmp/out_parser [ROUNDS] [PIECE]
 * (figures: the dialect overhead section of docs/benchmarks.md) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/structured.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* microseconds per piece to parse text in pieces of `piece` bytes */
static double run(const char *text, size_t n, size_t piece)
{
    structured_req_t sr = {.has_tools = true};
    out_parser_t p;
    out_delta_t d;
    out_parser_init(&p, &sr);
    double t0 = now_s();
    size_t at = 0, n_pieces = 0;
    for (; at < n; at += piece, n_pieces++) {
        out_parser_feed(&p, text + at, n - at < piece ? n - at : piece, false, &d);
        out_delta_free(&d);
    }
    out_parser_feed(&p, "", 0, true, &d);
    double us = (now_s() - t0) * 1e6 / (double)n_pieces;
    if (p.n_calls != 1 || strlen(p.calls[0].arguments) < n / 2) {
        fprintf(stderr, "out_parser: the call was not parsed\n");
        exit(1);
    }
    out_delta_free(&d);
    out_parser_free(&p);
    return us;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    size_t piece = argc > 2 ? (size_t)atoi(argv[2]) : 4;
    if (rounds < 1 || rounds > 99 || piece < 1) {
        fprintf(stderr, "usage: out_parser [ROUNDS 1-99] [PIECE >= 1]\n");
        return 2;
    }
    static const size_t lens[] = {1024, 8192, 65536};
    printf("| argument bytes | pieces of %zu bytes | us per piece (median of %d) |\n|---|---|---|\n", piece, rounds);
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        size_t len = lens[l];
        char *text = malloc(len + 128);
        if (!text)
            return 1;
        int k = sprintf(text, "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"");
        for (size_t i = 0; i < len; i++)
            text[k + i] = "abc defgh\\n"[i % 11];
        k += (int)len;
        k += sprintf(text + k, "\"}}\n</tool_call>");
        double t[99];
        for (int r = 0; r < rounds; r++)
            t[r] = run(text, (size_t)k, piece);
        qsort(t, (size_t)rounds, sizeof t[0], cmp_double);
        printf("| %zu | %zu | %.3f |\n", len, ((size_t)k + piece - 1) / piece, t[rounds / 2]);
        free(text);
    }
    return 0;
}
