// The chat page: a conversation with the model over /v1/chat/completions,
// streamed (SSE read with fetch + ReadableStream), stoppable (AbortController:
// the server cancels the request when the connection closes), kept in
// localStorage. Model text reaches the page only as textContent or through
// splashMarkdown.render, which escapes everything first.
"use strict";

const $ = (id) => document.getElementById(id);
const STORE = "splash.chat", SETTINGS = "splash.chatSettings";
const FIELDS = ["system", "temperature", "top_p", "max_tokens", "seed", "schema", "tools", "extra"];
let messages = [];   // {role, content, reasoning, tool_calls, stats, state, error}
let modelId = null;
let running = null;  // the AbortController of the reply streaming now

function save() { localStorage.setItem(STORE, JSON.stringify(messages)); }
function load() {
    try { messages = JSON.parse(localStorage.getItem(STORE) || "[]"); } catch (e) { messages = []; }
    if (!Array.isArray(messages)) messages = [];
    const s = JSON.parse(localStorage.getItem(SETTINGS) || "{}");
    for (const f of FIELDS) if (typeof s[f] === "string") $(f).value = s[f];
}
function saveSettings() {
    const s = {};
    for (const f of FIELDS) s[f] = $(f).value;
    localStorage.setItem(SETTINGS, JSON.stringify(s));
}

function showError(text) { $("error").textContent = text || ""; $("error").hidden = !text; }

function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
}

// ---- views ----

function toolBlock(call) {
    const box = el("div", "tool");
    box.appendChild(el("div", "name", "tool call: " + ((call.function && call.function.name) || "?") + (call.id ? "  (" + call.id + ")" : "")));
    let args = (call.function && call.function.arguments) || "";
    try { args = JSON.stringify(JSON.parse(args), null, 2); } catch (e) { /* still streaming, or not JSON */ }
    box.appendChild(el("pre", "", args));
    return box;
}

function statsText(m) {
    const parts = [];
    const s = m.stats || {};
    if (s.usage) parts.push(s.usage.prompt_tokens + " prompt + " + s.usage.completion_tokens + " completion tokens");
    if (s.tokensPerS) parts.push(s.tokensPerS.toFixed(1) + " tok/s");
    if (s.finish) parts.push("finish: " + s.finish);
    if (m.state === "stopped") parts.push("stopped");
    return parts.join(" · ");
}

function updateView(m, view) {
    view.dataset.state = m.state || "done";
    const think = view.querySelector(".thinking");
    think.hidden = !m.reasoning;
    think.querySelector(".body").textContent = m.reasoning || "";
    view.querySelector(".content").innerHTML = splashMarkdown.render(m.content || "");
    const tools = view.querySelector(".tools");
    tools.replaceChildren(...(m.tool_calls || []).map(toolBlock));
    const err = view.querySelector(".error");
    err.textContent = m.error || "";
    err.hidden = !m.error;
    view.querySelector(".stats").textContent = statsText(m);
}

function assistantView(m, index) {
    const view = el("div", "msg assistant");
    const think = el("details", "thinking");
    think.appendChild(el("summary", "", "Thinking"));
    think.appendChild(el("div", "body"));
    view.append(think, el("div", "content"), el("div", "tools"), el("p", "error"));
    const meta = el("div", "meta");
    const copy = el("button", "copy", "Copy");
    copy.type = "button";
    copy.addEventListener("click", () => copyText(m.content || "", copy));
    meta.append(el("span", "stats"), copy);
    if (index === messages.length - 1) {
        const again = el("button", "regenerate", "Regenerate");
        again.type = "button";
        again.disabled = !!running;
        again.addEventListener("click", regenerate);
        meta.appendChild(again);
    }
    view.appendChild(meta);
    updateView(m, view);
    return view;
}

function renderAll() {
    const log = $("log");
    log.replaceChildren(...messages.map((m, i) => (m.role === "user" ? el("div", "msg user", m.content) : assistantView(m, i))));
    log.scrollTop = log.scrollHeight;
}

async function copyText(text, button) {
    try {
        await navigator.clipboard.writeText(text);
    } catch (e) { // no clipboard API outside secure contexts: select and copy
        const t = el("textarea");
        t.value = text;
        document.body.appendChild(t);
        t.select();
        document.execCommand("copy");
        t.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy"; }, 1200);
}

// ---- the request ----

function parseJsonField(id, what) {
    const text = $(id).value.trim();
    if (!text) return undefined;
    try { return JSON.parse(text); } catch (e) { throw new Error(what + " is not valid JSON: " + e.message); }
}

function numberField(id) {
    const v = $(id).value.trim();
    return v === "" ? undefined : Number(v);
}

function requestBody() {
    const history = [];
    const system = $("system").value.trim();
    if (system) history.push({ role: "system", content: system });
    for (const m of messages.slice(0, -1)) {
        if (m.role === "user") history.push({ role: "user", content: m.content });
        else if (m.content || (m.tool_calls && m.tool_calls.length)) {
            const a = { role: "assistant", content: m.content || null };
            if (m.tool_calls && m.tool_calls.length) a.tool_calls = m.tool_calls;
            history.push(a);
        }
    }
    const body = { messages: history, stream: true, stream_options: { include_usage: true } };
    if (modelId) body.model = modelId;
    for (const f of ["temperature", "top_p", "max_tokens", "seed"]) {
        const v = numberField(f);
        if (v !== undefined) body[f] = v;
    }
    const schema = parseJsonField("schema", "The JSON schema");
    if (schema !== undefined) body.response_format = { type: "json_schema", json_schema: { name: "reply", schema, strict: true } };
    const tools = parseJsonField("tools", "Tools");
    if (tools !== undefined) body.tools = tools;
    const extra = parseJsonField("extra", "Extra request fields");
    if (extra !== undefined) Object.assign(body, extra);
    return body;
}

// One SSE event's JSON into the reply being built.
function applyChunk(m, chunk, clock) {
    if (chunk.error) throw new Error(chunk.error.message || JSON.stringify(chunk.error));
    if (chunk.usage) m.stats.usage = chunk.usage;
    const choice = chunk.choices && chunk.choices[0];
    if (!choice) return;
    const d = choice.delta || {};
    if (d.content || d.reasoning_content || d.tool_calls) {
        if (!clock.first) clock.first = performance.now();
        clock.last = performance.now();
    }
    if (d.content) m.content += d.content;
    if (d.reasoning_content) m.reasoning = (m.reasoning || "") + d.reasoning_content;
    for (const t of d.tool_calls || []) {
        m.tool_calls = m.tool_calls || [];
        const i = t.index || 0;
        const call = m.tool_calls[i] || (m.tool_calls[i] = { id: "", type: "function", function: { name: "", arguments: "" } });
        if (t.id) call.id = t.id;
        if (t.function && t.function.name) call.function.name += t.function.name;
        if (t.function && t.function.arguments) call.function.arguments += t.function.arguments;
    }
    if (choice.finish_reason) m.stats.finish = choice.finish_reason;
}

// Reads the SSE stream: events end with a blank line, each data: line holds JSON or [DONE].
async function readStream(res, m, view, clock) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        const events = buf.split(/\r?\n\r?\n/);
        buf = events.pop();
        for (const ev of events) {
            const data = ev.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
            if (!data || data === "[DONE]") continue;
            applyChunk(m, JSON.parse(data), clock);
        }
        updateView(m, view);
        $("log").scrollTop = $("log").scrollHeight;
    }
}

async function reply() {
    const m = { role: "assistant", content: "", reasoning: "", stats: {}, state: "streaming" };
    let body;
    try { body = requestBody(); } catch (e) { showError(e.message); return; }
    messages.push(m);
    renderAll();
    const view = $("log").lastElementChild;
    const clock = { first: 0, last: 0 };
    running = new AbortController();
    setBusy(true);
    try {
        const res = await splashApi.call("/v1/chat/completions", {
            method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal: running.signal,
        });
        if (!res.ok) throw new Error(await splashApi.errorText(res));
        await readStream(res, m, view, clock);
        m.state = "done";
    } catch (e) {
        if (e.name === "AbortError") m.state = "stopped";
        else { m.state = "error"; m.error = e.message; }
    }
    const n = m.stats.usage ? m.stats.usage.completion_tokens : 0;
    if (n > 1 && clock.last > clock.first) m.stats.tokensPerS = (n - 1) / ((clock.last - clock.first) / 1000);
    running = null;
    setBusy(false);
    save();
    renderAll();
}

function setBusy(busy) {
    $("send").disabled = busy;
    $("stop").disabled = !busy;
    for (const b of document.querySelectorAll(".regenerate")) b.disabled = busy;
}

function send(ev) {
    ev.preventDefault();
    const text = $("input").value.trim();
    if (!text || running) return;
    showError("");
    messages.push({ role: "user", content: text });
    $("input").value = "";
    save();
    reply();
}

function regenerate() {
    if (running) return;
    while (messages.length && messages[messages.length - 1].role !== "user") messages.pop();
    if (messages.length) reply();
}

async function loadModel() {
    try {
        const res = await splashApi.call("/v1/models");
        if (!res.ok) { showError("models: " + (await splashApi.errorText(res))); return; }
        const body = await res.json();
        modelId = body.data && body.data[0] ? body.data[0].id : null;
        $("model").textContent = modelId || "";
    } catch (e) { showError("cannot reach the server: " + e.message); }
}

document.addEventListener("DOMContentLoaded", () => {
    load();
    renderAll();
    $("composer").addEventListener("submit", send);
    $("input").addEventListener("keydown", (e) => {
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) send(e);
    });
    $("stop").addEventListener("click", () => { if (running) running.abort(); });
    $("new-chat").addEventListener("click", () => { if (running) running.abort(); messages = []; save(); renderAll(); });
    for (const f of FIELDS) $(f).addEventListener("change", saveSettings);
    loadModel();
});
