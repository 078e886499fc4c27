/* splash template: renders conversations with the Qwen3 chat template, one
 * JSON request a line (--jsonl, for conformance runs against the reference
 * renderer) or one conversation from files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cli.h"
#include "cli/commands.h"
#include "model/gguf.h"
#include "text/chat.h"

#define TEMPLATE_MAX_LINE_BYTES (64u << 20) /* longest --jsonl request accepted */
/* JavaScript reads every number as a double: so does the reference renderer,
 * and so integers beyond int64 still load. NULs inside strings are kept. */
#define TEMPLATE_JSON_FLAGS (JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL)

static const char template_usage[] =
    "usage: splash template [--model FILE] --jsonl\n"
    "       splash template [--model FILE] --messages FILE [--tools FILE] [--add-generation-prompt]\n"
    "                       [--enable-thinking true|false]\n"
    "\n"
    "Renders conversations with the Qwen3 chat template (ChatML, <think> blocks, tool calls), byte for byte\n"
    "as @huggingface/jinja renders the template of Qwen3's tokenizer_config.json.\n"
    "\n"
    "  --model FILE              GGUF model (default: the built-in model, %s); a tokenizer.chat_template\n"
    "                            that differs from the built-in Qwen3 template is reported on stderr\n"
    "  --jsonl                   read requests from stdin, one JSON object a line:\n"
    "                              {\"messages\": [...], \"tools\": [...], \"add_generation_prompt\": bool,\n"
    "                               \"enable_thinking\": bool}   (all but messages optional)\n"
    "                            and write one line for each: the rendering as a JSON string, or\n"
    "                            {\"error\": \"...\"}\n"
    "  --messages FILE           a JSON array of messages; the rendering goes to stdout as it is\n"
    "  --tools FILE              a JSON array of tool definitions\n"
    "  --add-generation-prompt   end with the opening of the assistant's turn\n"
    "  --enable-thinking B       true or false (default: undefined, which renders like true)\n";

typedef struct template_opts {
    const char *model;
    bool is_jsonl;
    const char *messages, *tools;
    chat_opts_t chat;
    bool has_chat_flags; /* --tools, --add-generation-prompt or --enable-thinking given */
} template_opts_t;

enum { T_JSONL = 0x100, T_ADD_GEN, T_MODEL, T_MESSAGES, T_TOOLS, T_THINKING };

static int parse_opt(int opt, const char *v, const char *word, void *ctx, err_t *err)
{
    template_opts_t *o = ctx;
    o->has_chat_flags |= opt == T_ADD_GEN || opt == T_TOOLS || opt == T_THINKING;
    switch (opt) {
    case T_JSONL: o->is_jsonl = true; return 0;
    case T_ADD_GEN: o->chat.add_generation_prompt = true; return 0;
    case T_MODEL: o->model = v; return 0;
    case T_MESSAGES: o->messages = v; return 0;
    case T_TOOLS: o->tools = v; return 0;
    case T_THINKING:
        if (strcmp(v, "true") && strcmp(v, "false"))
            return err_set(err, "--enable-thinking: expected true or false, got '%s'", v);
        o->chat.enable_thinking = !strcmp(v, "true");
        return 0;
    case ':': return err_set(err, "%s needs a value", word);
    default: return err_set(err, "unknown option '%s' (splash template --help lists them)", word);
    }
}

static int parse(int argc, char **argv, template_opts_t *o, err_t *err)
{
    memset(o, 0, sizeof *o);
    o->model = cli_default_model();
    o->chat = (chat_opts_t){.add_generation_prompt = false, .enable_thinking = -1};
    static const struct option options[] = {
        {"jsonl", no_argument, NULL, T_JSONL},
        {"add-generation-prompt", no_argument, NULL, T_ADD_GEN},
        {"model", required_argument, NULL, T_MODEL},
        {"messages", required_argument, NULL, T_MESSAGES},
        {"tools", required_argument, NULL, T_TOOLS},
        {"enable-thinking", required_argument, NULL, T_THINKING},
        {NULL, 0, NULL, 0},
    };
    if (cli_getopt(argc, argv, "", options, parse_opt, o, err))
        return -1;
    if (optind < argc)
        return err_set(err, "unexpected argument '%s' (the conversation comes from --messages or --jsonl)",
                       argv[optind]);
    if (o->is_jsonl && o->messages)
        return err_set(err, "give either --jsonl or --messages, not both");
    if (!o->is_jsonl && !o->messages)
        return err_set(err, "nothing to render: give --jsonl or --messages FILE");
    if (o->is_jsonl && o->has_chat_flags)
        return err_set(err, "--tools, --add-generation-prompt and --enable-thinking go with --messages; with --jsonl "
                            "each line carries its own");
    return 0;
}

/* The model must be a valid GGUF file; its own template, if it has one, is
 * compared with the one splash renders. */
static int check_model(const char *path, err_t *err)
{
    gguf_t *g = gguf_open(path, err);
    if (!g)
        return -1;
    const gguf_kv_t *kv = gguf_find(g, "tokenizer.chat_template");
    if (kv && (kv->type != GGUF_TYPE_STRING || kv->str.len != strlen(chat_qwen3_template) ||
               memcmp(kv->str.ptr, chat_qwen3_template, kv->str.len) != 0))
        fprintf(stderr,
                "splash template: warning: %s has a tokenizer.chat_template that differs from the built-in Qwen3 "
                "template; rendering with the built-in one\n",
                path);
    gguf_close(g);
    return 0;
}

/* An optional boolean field of a request: absent or null leaves *out. */
static int request_bool(const json_t *req, const char *key, int *out, err_t *err)
{
    const json_t *v = json_object_get(req, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return err_set(err, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* One --jsonl request to its output line (malloc'd, no newline). */
static char *render_request(const char *line, size_t len, err_t *err)
{
    json_error_t jerr;
    json_t *req = json_loadb(line, len, TEMPLATE_JSON_FLAGS, &jerr);
    if (!req) {
        err_set(err, "bad JSON at column %d: %s", jerr.column, jerr.text);
        return NULL;
    }
    char *text = NULL, *result = NULL;
    size_t text_len = 0;
    int add_gen = 0;
    chat_opts_t opts = {.enable_thinking = -1};
    if (!json_is_object(req)) {
        err_set(err, "a request must be a JSON object");
    } else if (!json_object_get(req, "messages")) {
        err_set(err, "the request has no \"messages\"");
    } else if (request_bool(req, "add_generation_prompt", &add_gen, err) ||
               request_bool(req, "enable_thinking", &opts.enable_thinking, err)) {
        /* err is set */
    } else {
        opts.add_generation_prompt = add_gen;
        if (chat_render_qwen3(json_object_get(req, "messages"), json_object_get(req, "tools"), &opts, &text, &text_len,
                              err) == 0) {
            json_t *s = json_stringn(text, text_len);
            if (!s || !(result = json_dumps(s, JSON_ENCODE_ANY)))
                err_set(err, "the rendering could not be encoded as JSON");
            json_decref(s);
        }
    }
    free(text);
    json_decref(req);
    return result;
}

static int run_jsonl(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        err_t err = {{0}};
        char *out = NULL;
        if (len > TEMPLATE_MAX_LINE_BYTES)
            err_set(&err, "the line is longer than %u bytes", TEMPLATE_MAX_LINE_BYTES);
        else if (strspn(line, " \t\r") == len)
            err_set(&err, "empty line");
        else
            out = render_request(line, len, &err);
        if (!out) {
            json_t *e = json_pack("{s:s}", "error", err.msg);
            out = e ? json_dumps(e, 0) : NULL;
            json_decref(e);
        }
        if (!out) {
            free(line);
            fprintf(stderr, "splash template: out of memory\n");
            return 1;
        }
        fputs(out, stdout);
        fputc('\n', stdout);
        free(out);
        fflush(stdout); /* a line out for every line in, as it comes */
    }
    free(line);
    if (ferror(stdin) || ferror(stdout)) {
        fprintf(stderr, "splash template: %s\n", ferror(stdin) ? "reading stdin failed" : "writing stdout failed");
        return 1;
    }
    return 0;
}

static json_t *load_file(const char *flag, const char *path, err_t *err)
{
    json_error_t jerr;
    json_t *v = json_load_file(path, TEMPLATE_JSON_FLAGS, &jerr);
    if (!v && jerr.line < 1) /* the file could not be read */
        err_set(err, "%s %s", flag, jerr.text);
    else if (!v)
        err_set(err, "%s %s: %s (line %d, column %d)", flag, path, jerr.text, jerr.line, jerr.column);
    return v;
}

static int run_files(const template_opts_t *o)
{
    err_t err;
    json_t *messages = load_file("--messages", o->messages, &err), *tools = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = 1;
    if (messages && (!o->tools || (tools = load_file("--tools", o->tools, &err))) &&
        chat_render_qwen3(messages, tools, &o->chat, &text, &len, &err) == 0) {
        rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
        if (rc)
            err_set(&err, "writing stdout failed: %s", strerror(errno));
    }
    if (rc)
        fprintf(stderr, "splash template: %s\n", err.msg);
    free(text);
    json_decref(tools);
    json_decref(messages);
    return rc;
}

int cmd_template(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(template_usage, cli_default_model());
            return 0;
        }
    }
    template_opts_t o;
    err_t err;
    if (parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash template: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (check_model(o.model, &err)) {
        if (!strcmp(o.model, cli_default_model()) && access(o.model, F_OK) != 0)
            fprintf(stderr,
                    "splash template: the built-in model %s is missing (the build writes it; or pass --model)\n",
                    o.model);
        else
            fprintf(stderr, "splash template: %s\n", err.msg);
        return 1;
    }
    return o.is_jsonl ? run_jsonl() : run_files(&o);
}
