/* Structured output at the API: the request fields that constrain output
 * (response_format, grammar, tools + tool_choice) compiled into one engine
 * constraint, and the model's output parsed back into OpenAI's shape
 * (reasoning_content, content, tool_calls), whole or as a stream.
 *
 * Qwen3's formats, as its chat template writes them:
 *   reasoning   <think>\n ... \n</think>\n\n  before the answer
 *   tool call   <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>
 *               (several, one per line, when parallel calls are allowed)
 *
 * Compiled grammars are cached by their source (SERVER_GRAMMAR_CACHE
 * entries, least recently used out), so requests with the same schema share
 * one grammar and its mask cache. */
#ifndef SPLASH_SERVER_STRUCTURED_H
#define SPLASH_SERVER_STRUCTURED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/constrain.h"
#include "server/internal.h"

#define SERVER_GRAMMAR_CACHE 32           /* compiled grammars kept by source */
#define SERVER_MAX_TOOLS 128              /* entries in `tools` */
#define SERVER_MAX_TOOL_CALLS 32          /* tool calls parsed from one answer */
#define SERVER_TOOL_TRIGGER "<tool_call>" /* where a lazily triggered tool-call grammar starts */

/* What a request asks of its output. */
typedef struct structured_req {
    constrain_spec_t spec; /* spec.grammar: a reference this struct owns */
    bool has_tools;        /* tools given and tool_choice not "none": parse tool calls */
    bool is_thinking;      /* the prompt leaves reasoning on: parse <think> */
} structured_req_t;

/* Reads response_format and grammar (both endpoints) and, for chat, tools,
 * tool_choice, parallel_tool_calls and enable_thinking (-1 absent, 0, 1).
 * -1 with a 400 reply naming the field (a schema error names its pointer). */
int structured_parse(server_t *s, const json_t *req, bool is_chat, int enable_thinking, structured_req_t *out,
                     reply_t *r);
void structured_free(structured_req_t *sr);
void structured_cache_clear(void); /* at server shutdown */

/* The output parser: text in pieces, OpenAI's message parts out. */
typedef struct tool_call_out {
    char id[40];
    char *name;
    char *arguments; /* a JSON text */
} tool_call_out_t;

typedef struct out_parser {
    bool has_tools, is_thinking;
    int state;  /* where the parser is (structured.c) */
    char *hold; /* bytes held back: a possible tag start, or a tool call's body */
    size_t n_hold, cap_hold;
    size_t n_call_clear; /* bytes of the held call body that cannot begin </tool_call>: not scanned again */
    tool_call_out_t calls[SERVER_MAX_TOOL_CALLS];
    int n_calls;
    int n_calls_emitted; /* streaming: calls already sent */
    unsigned seq;        /* for call ids */
} out_parser_t;

/* What one piece (or the end) produced. Strings are malloc'd or NULL. */
typedef struct out_delta {
    char *reasoning;
    size_t n_reasoning;
    char *content;
    size_t n_content;
    int first_call, n_new_calls; /* calls[first_call .. first_call + n_new_calls) completed now */
} out_delta_t;

void out_parser_init(out_parser_t *p, const structured_req_t *sr);
void out_parser_free(out_parser_t *p);
/* Feeds text (is_end: the answer is over: whatever is held back comes out). */
void out_parser_feed(out_parser_t *p, const char *text, size_t n, bool is_end, out_delta_t *d);
void out_delta_free(out_delta_t *d);

/* Counts an answer's reasoning tokens as generated (usage's
 * reasoning_tokens): fed each generated token's text in order, it counts
 * every token from the first while the answer is, or may still become,
 * "<think>...", up to and including the one that completes "</think>"; an
 * answer that does not open with <think> counts 0. Re-encoding the
 * reasoning text would not do: a sampled answer's tokens need not be the
 * encoder's. */
typedef struct think_counter {
    int n;       /* reasoning tokens so far */
    int state;   /* 0 deciding, 1 inside, 2 done */
    int matched; /* bytes of "<think>" (deciding) or "</think>" (inside) matched */
} think_counter_t;

void think_counter_feed(think_counter_t *tc, const char *text, size_t n);
/* calls[i] as OpenAI's {"id","type","function":{"name","arguments"}} (with "index" when is_stream). */
json_t *out_call_json(const out_parser_t *p, int i, bool is_stream);

#endif
