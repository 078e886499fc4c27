/* splash tokenize | splash detokenize: the model's tokenizer on the command
 * line, one text at a time or as JSON lines (the conformance suite's and
 * scripts' interface), plus an encode-throughput benchmark. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "model/gguf.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

#define TOK_MAX_LINE (64 << 20) /* longest JSON line accepted on stdin */
#define TOK_BENCH_MAX_REPS 100

static const char tokenize_usage[] =
    "usage: splash tokenize [--model FILE] [--no-parse-special] TEXT\n"
    "       splash tokenize [--model FILE] [--no-parse-special] --jsonl\n"
    "       splash tokenize [--model FILE] --bench FILE [--reps N]\n"
    "\n"
    "Encodes text with the model's tokenizer. TEXT: prints the ids, space-separated.\n"
    "--jsonl: reads one JSON string per stdin line, writes one JSON array of ids per line\n"
    "(or {\"error\": ...} for a bad line). Special-token text (<|im_start|>, ...) becomes the\n"
    "special token unless --no-parse-special. --bench: single-thread encode throughput of\n"
    "the file's contents, median of --reps runs (default 3).\n";

static const char detokenize_usage[] =
    "usage: splash detokenize [--model FILE] IDS      (comma-separated)\n"
    "       splash detokenize [--model FILE] --jsonl\n"
    "\n"
    "Decodes token ids to text. IDS: writes the bytes as they are. --jsonl: reads one JSON\n"
    "array of ids per stdin line, writes one JSON string per line; bytes that are not valid\n"
    "UTF-8 become U+FFFD (as Hugging Face decode does).\n";

typedef struct tok_cli {
    gguf_t *g;
    vocab_t vocab;
    tokenizer_t *tok;
} tok_cli_t;

static int open_tokenizer(tok_cli_t *c, const char *path, err_t *err)
{
    memset(c, 0, sizeof *c);
    c->g = gguf_open(path, err);
    if (!c->g)
        return -1;
    const gguf_tensor_t *embd = gguf_find_tensor(c->g, "token_embd.weight");
    if (vocab_load(&c->vocab, c->g, embd ? (int)embd->ne[1] : 0, err) || !(c->tok = tok_load(&c->vocab, c->g, err))) {
        err_prefix(err, "%s: ", path);
        return -1;
    }
    return 0;
}

static void close_tokenizer(tok_cli_t *c)
{
    tok_free(c->tok);
    vocab_free(&c->vocab);
    gguf_close(c->g);
}

/* Reads stdin line by line into a growing buffer; returns the length or -1 at EOF. */
static long read_line(char **buf, size_t *cap)
{
    size_t n = 0;
    int ch;
    while ((ch = getchar()) != EOF) {
        if (n + 1 >= *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            if (nc > TOK_MAX_LINE)
                nc = TOK_MAX_LINE;
            char *b = n + 1 < nc ? realloc(*buf, nc) : NULL;
            if (!b) { /* line too long: skip the rest of it */
                while ((ch = getchar()) != EOF && ch != '\n')
                    ;
                return (long)n;
            }
            *buf = b;
            *cap = nc;
        }
        if (ch == '\n')
            break;
        (*buf)[n++] = (char)ch;
    }
    if (ch == EOF && n == 0)
        return -1;
    (*buf)[n] = '\0';
    return (long)n;
}

static void print_error_line(const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    puts(s ? s : "{\"error\": \"out of memory\"}");
    free(s);
    json_decref(o);
}

static int tokenize_jsonl(const tok_cli_t *c, bool parse_special)
{
    char *line = NULL;
    size_t cap = 0;
    long n;
    tok_ids_t ids = {0};
    while ((n = read_line(&line, &cap)) >= 0) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        err_t err;
        if (!j || !json_is_string(j)) {
            print_error_line(j ? "each line must be a JSON string" : je.text);
            json_decref(j);
            continue;
        }
        ids.n = 0;
        if (tok_encode(c->tok, json_string_value(j), json_string_length(j), parse_special, &ids, &err)) {
            print_error_line(err.msg);
        } else {
            putchar('[');
            for (size_t i = 0; i < ids.n; i++)
                printf(i ? ",%d" : "%d", ids.v[i]);
            puts("]");
        }
        json_decref(j);
    }
    tok_ids_free(&ids);
    free(line);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int tokenize_bench(const tok_cli_t *c, const char *path, int reps, err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(err, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = size > 0 ? malloc((size_t)size) : NULL;
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(text);
        return err_set(err, "%s: cannot read (empty or unreadable)", path);
    }
    fclose(f);
    double secs[TOK_BENCH_MAX_REPS] = {0};
    tok_ids_t ids = {0};
    for (int r = 0; r < reps; r++) {
        ids.n = 0;
        int64_t t0 = clock_now_ns();
        if (tok_encode(c->tok, text, (size_t)size, true, &ids, err)) {
            free(text);
            tok_ids_free(&ids);
            return -1;
        }
        secs[r] = (clock_now_ns() - t0) / 1e9;
    }
    qsort(secs, (size_t)reps, sizeof secs[0], cmp_double);
    double med = reps % 2 ? secs[reps / 2] : (secs[reps / 2 - 1] + secs[reps / 2]) / 2;
    printf("encode: %.2f MB, %zu tokens, median %.3f s over %d reps, %.2f MB/s\n", size / 1e6, ids.n, med, reps,
           size / 1e6 / med);
    free(text);
    tok_ids_free(&ids);
    return 0;
}

/* The options of tokenize and detokenize (detokenize takes --jsonl and --model). */
typedef struct tok_opts {
    const char *model, *bench, *arg; /* arg: the one word besides the options, or NULL */
    bool parse_special, jsonl, help;
    int64_t reps;
} tok_opts_t;

enum { K_NO_SPECIAL = 0x100, K_JSONL, K_MODEL, K_BENCH, K_REPS };

static int tok_opt(int opt, const char *v, const char *word, void *ctx, err_t *err)
{
    tok_opts_t *o = ctx;
    switch (opt) {
    case 'h': o->help = true; return 1;
    case K_NO_SPECIAL: o->parse_special = false; return 0;
    case K_JSONL: o->jsonl = true; return 0;
    case K_MODEL: o->model = v; return 0;
    case K_BENCH: o->bench = v; return 0;
    case K_REPS: return cli_parse_i64("--reps", v, 1, TOK_BENCH_MAX_REPS, &o->reps, err);
    case ':': return err_set(err, "%s needs a value", word);
    default: return err_set(err, "unknown option '%s'", word);
    }
}

/* argv into o: 0, or EXIT_USAGE with the message printed; `what` names
 * the one word allowed besides the options, `hint` how to give one. */
static int tok_parse(int argc, char **argv, bool is_detok, tok_opts_t *o, const char *what, const char *hint)
{
    static const struct option all[] = {
        {"jsonl", no_argument, NULL, K_JSONL},
        {"model", required_argument, NULL, K_MODEL},
        {"help", no_argument, NULL, 'h'},
        {"no-parse-special", no_argument, NULL, K_NO_SPECIAL},
        {"bench", required_argument, NULL, K_BENCH},
        {"reps", required_argument, NULL, K_REPS},
        {NULL, 0, NULL, 0},
    };
    static const struct option detok[] = {
        {"jsonl", no_argument, NULL, K_JSONL},
        {"model", required_argument, NULL, K_MODEL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (tok_opts_t){.model = cli_default_model(), .parse_special = true, .reps = 3};
    err_t err;
    int bad = cli_getopt(argc, argv, "h", is_detok ? detok : all, tok_opt, o, &err);
    if (!bad && !o->help && optind + 1 < argc)
        bad = err_set(&err, "more than one %s given; %s", what, hint);
    if (bad) {
        fprintf(stderr, "splash %s: %s\n", is_detok ? "detokenize" : "tokenize", err.msg);
        return EXIT_USAGE;
    }
    o->arg = optind < argc ? argv[optind] : NULL;
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    tok_opts_t o;
    if (tok_parse(argc, argv, false, &o, "text", "quote the text"))
        return EXIT_USAGE;
    if (o.help) {
        fputs(tokenize_usage, stdout);
        return 0;
    }
    const char *model = o.model, *text = o.arg, *bench = o.bench;
    bool parse_special = o.parse_special, jsonl = o.jsonl;
    int64_t reps = o.reps;
    err_t err;
    if ((text != NULL) + jsonl + (bench != NULL) != 1) {
        fprintf(stderr, "splash tokenize: give exactly one of TEXT, --jsonl or --bench FILE\n");
        return EXIT_USAGE;
    }
    tok_cli_t c;
    if (open_tokenizer(&c, model, &err)) {
        fprintf(stderr, "splash tokenize: %s\n", err.msg);
        close_tokenizer(&c);
        return 1;
    }
    int rc = 0;
    if (jsonl) {
        rc = tokenize_jsonl(&c, parse_special);
    } else if (bench) {
        if (tokenize_bench(&c, bench, (int)reps, &err)) {
            fprintf(stderr, "splash tokenize: %s\n", err.msg);
            rc = 1;
        }
    } else {
        tok_ids_t ids = {0};
        if (tok_encode(c.tok, text, strlen(text), parse_special, &ids, &err)) {
            fprintf(stderr, "splash tokenize: %s\n", err.msg);
            rc = 1;
        } else {
            for (size_t i = 0; i < ids.n; i++)
                printf(i ? " %d" : "%d", ids.v[i]);
            putchar('\n');
        }
        tok_ids_free(&ids);
    }
    close_tokenizer(&c);
    return rc;
}

static int detokenize_line(const tok_cli_t *c, const char *line, size_t n)
{
    json_error_t je;
    json_t *j = json_loadb(line, n, 0, &je);
    err_t err;
    if (!j || !json_is_array(j)) {
        print_error_line(j ? "each line must be a JSON array of token ids" : je.text);
        json_decref(j);
        return 0;
    }
    size_t count = json_array_size(j);
    int32_t *ids = malloc((count ? count : 1) * sizeof *ids);
    size_t i;
    json_t *v;
    bool ok = ids != NULL;
    json_array_foreach(j, i, v)
    {
        if (!ok || !json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
            ok = false;
            break;
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    char *bytes = NULL;
    size_t n_bytes = 0;
    if (!ok) {
        print_error_line("each line must be a JSON array of non-negative token ids");
    } else if (tok_decode(c->tok, ids, count, &bytes, &n_bytes, &err)) {
        print_error_line(err.msg);
    } else {
        char *text = malloc(3 * n_bytes + 1);
        size_t len = text ? utf8_lossy(bytes, n_bytes, text) : 0;
        json_t *s = text ? json_stringn(text, len) : NULL;
        char *out = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        if (out)
            puts(out);
        else
            print_error_line("out of memory");
        free(out);
        json_decref(s);
        free(text);
    }
    free(bytes);
    free(ids);
    json_decref(j);
    return 0;
}

int cmd_detokenize(int argc, char **argv)
{
    tok_opts_t o;
    if (tok_parse(argc, argv, true, &o, "id list", "separate the ids with commas"))
        return EXIT_USAGE;
    if (o.help) {
        fputs(detokenize_usage, stdout);
        return 0;
    }
    const char *model = o.model, *list = o.arg;
    bool jsonl = o.jsonl;
    err_t err;
    int32_t *ids = NULL;
    int n_ids = 0;
    if ((list != NULL) == jsonl) {
        fprintf(stderr, "splash detokenize: give either IDS or --jsonl\n");
        return EXIT_USAGE;
    }
    if (list && cli_parse_i32_list("IDS", list, 0, INT32_MAX, &ids, &n_ids, &err)) {
        fprintf(stderr, "splash detokenize: %s\n", err.msg);
        return EXIT_USAGE;
    }
    tok_cli_t c;
    if (open_tokenizer(&c, model, &err)) {
        fprintf(stderr, "splash detokenize: %s\n", err.msg);
        close_tokenizer(&c);
        free(ids);
        return 1;
    }
    int rc = 0;
    if (jsonl) {
        char *line = NULL;
        size_t cap = 0;
        long n;
        while ((n = read_line(&line, &cap)) >= 0)
            detokenize_line(&c, line, (size_t)n);
        free(line);
    } else {
        char *bytes = NULL;
        size_t n_bytes = 0;
        if (tok_decode(c.tok, ids, (size_t)n_ids, &bytes, &n_bytes, &err)) {
            fprintf(stderr, "splash detokenize: %s\n", err.msg);
            rc = 1;
        } else {
            fwrite(bytes, 1, n_bytes, stdout);
            putchar('\n');
        }
        free(bytes);
    }
    free(ids);
    close_tokenizer(&c);
    return rc;
}
