/* Chat messages for the template (chat_msgs.h). */
#include "server/chat_msgs.h"
#include "server/fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Content parts OpenAI defines that carry no text: named in the refusal. */
static const char *const non_text_parts[] = {"image_url", "input_image", "input_audio", "file",
                                             "image",     "audio",       "input_file",  NULL};

/* Text parts [{"type": "text", "text": ...}, ...] joined into one string,
 * or NULL with a reply naming the part. */
static json_t *join_parts(const json_t *content, size_t i, reply_t *r)
{
    char param[64];
    if (json_array_size(content) == 0) {
        snprintf(param, sizeof param, "messages[%zu].content", i);
        reply_error(r, 400, param, "%s is an empty array; give at least one text part", param);
        return NULL;
    }
    size_t j, total = 0;
    json_t *part;
    json_array_foreach(content, j, part)
    {
        snprintf(param, sizeof param, "messages[%zu].content[%zu]", i, j);
        const json_t *t = json_object_get(part, "type"), *text = json_object_get(part, "text");
        const char *type = json_is_string(t) ? json_string_value(t) : NULL;
        if (!json_is_object(part) || !type) {
            reply_error(r, 400, param, "%s must be an object with a \"type\"", param);
            return NULL;
        }
        if (field_in_list(type, non_text_parts)) {
            reply_error(r, 400, param, "%s: '%s' parts are not supported (this model reads text only)", param, type);
            return NULL;
        }
        if (strcmp(type, "text")) {
            reply_error(r, 400, param, "%s: '%s' parts are not supported (only \"text\" parts are)", param, type);
            return NULL;
        }
        if (!json_is_string(text)) {
            reply_error(r, 400, param, "%s.text must be a string", param);
            return NULL;
        }
        total += json_string_length(text);
    }
    char *joined = malloc(total + 1);
    if (!joined) {
        reply_nomem(r, "joining a message's text parts", total + 1);
        return NULL;
    }
    size_t at = 0;
    json_array_foreach(content, j, part)
    {
        const json_t *text = json_object_get(part, "text");
        memcpy(joined + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    json_t *out = json_stringn(joined, at);
    free(joined);
    return out;
}

/* messages[i]'s content, normalised into copy: 0, or -1 with a reply. */
static int normalise_content(json_t *copy, const char *role, size_t i, reply_t *r)
{
    char param[64];
    snprintf(param, sizeof param, "messages[%zu].content", i);
    json_t *content = json_object_get(copy, "content");
    if (!content || json_is_null(content)) {
        const json_t *calls = json_object_get(copy, "tool_calls");
        if (!strcmp(role, "assistant") && json_is_array(calls) && json_array_size(calls)) {
            json_object_set_new(copy, "content", json_string(""));
            return 0;
        }
        reply_error(r, 400, param, "%s is required%s (a string or an array of text parts)", param,
                    !strcmp(role, "assistant") ? " in an assistant message without tool_calls" : "");
        return -1;
    }
    if (json_is_array(content)) {
        json_t *joined = join_parts(content, i, r);
        if (!joined)
            return -1;
        json_object_set_new(copy, "content", joined);
        return 0;
    }
    if (!json_is_string(content)) {
        reply_error(r, 400, param, "%s must be a string or an array of text parts", param);
        return -1;
    }
    return 0;
}

/* messages[i] checked and copied, or NULL with a reply. */
static json_t *normalise_message(const json_t *m, size_t i, reply_t *r)
{
    char param[64];
    snprintf(param, sizeof param, "messages[%zu]", i);
    if (!json_is_object(m)) {
        reply_error(r, 400, param, "%s must be an object", param);
        return NULL;
    }
    const json_t *role = json_object_get(m, "role");
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", NULL};
    if (!json_is_string(role) || !field_in_list(json_string_value(role), roles)) {
        snprintf(param, sizeof param, "messages[%zu].role", i);
        reply_error(r, 400, param, "%s must be one of system, developer, user, assistant, tool", param);
        return NULL;
    }
    /* "parsed": the OpenAI SDK's own annotation of an answer it sends back
     * (runTools, parse helpers); it carries nothing the template renders */
    static const char *const fields[] = {
        "role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "refusal", "parsed", NULL};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        if (!field_in_list(key, fields)) {
            snprintf(param, sizeof param, "messages[%zu].%s", i, key);
            reply_error(r, 400, param, "unknown field %s", param);
            return NULL;
        }
    }
    json_t *copy = json_deep_copy(m);
    if (!copy) {
        reply_nomem(r, "a copy of a message", 0);
        return NULL;
    }
    json_object_del(copy, "parsed");
    if (!strcmp(json_string_value(role), "developer"))
        json_object_set_new(copy, "role", json_string("system"));
    if (normalise_content(copy, json_string_value(role), i, r)) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

json_t *chat_messages_normalise(const json_t *msgs, reply_t *r)
{
    if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
        reply_error(r, 400, "messages", "'messages' must be a non-empty array");
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        json_t *copy = normalise_message(m, i, r);
        if (!copy) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, copy);
    }
    return out;
}
