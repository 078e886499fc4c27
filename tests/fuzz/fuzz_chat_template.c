/* Fuzz target: the Qwen3 chat template renderer. The input is a JSON
 * document {"messages": ..., "tools": ...} (or anything else; the first byte
 * sets the options); whatever parses is rendered. A refusal must say why. */
#include <jansson.h>

#include "fuzz_common.h"
#include "text/chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    json_t *doc = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!doc)
        return 0;
    const json_t *messages = json_is_object(doc) ? json_object_get(doc, "messages") : doc;
    const json_t *tools = json_is_object(doc) ? json_object_get(doc, "tools") : NULL;
    chat_opts_t opts = {.add_generation_prompt = data[0] & 1, .enable_thinking = (data[0] >> 1) % 3 - 1};
    char *out = NULL;
    size_t out_len = 0;
    err_t err = {{0}};
    if (messages) {
        if (chat_render_qwen3(messages, tools, &opts, &out, &out_len, &err) == 0) {
            if (!out || out[out_len] != '\0')
                abort();
        } else if (out || err.msg[0] == '\0') {
            abort();
        }
    }
    free(out);
    json_decref(doc);
    return 0;
}
