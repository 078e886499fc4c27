// Shared by the chat page and the dashboard: calls to this server's API with
// the API key, when it has one. The key is asked for once (on the first 401),
// kept in this browser's localStorage and sent as Authorization: Bearer.
"use strict";

const splashApi = (() => {
    const KEY = "splash.apiKey";

    function headers(extra) {
        const h = Object.assign({}, extra || {});
        const key = localStorage.getItem(KEY);
        if (key) h.Authorization = "Bearer " + key;
        return h;
    }

    let declined = false; // asked and cancelled: not again on this page (the dashboard polls)

    // fetch() on this origin; a 401 asks for the key once and tries again
    async function call(path, init) {
        init = init || {};
        let res = await fetch(path, Object.assign({}, init, { headers: headers(init.headers) }));
        if (res.status === 401 && !declined) {
            const key = window.prompt("This server needs an API key:");
            declined = !key;
            if (key) {
                localStorage.setItem(KEY, key.trim());
                res = await fetch(path, Object.assign({}, init, { headers: headers(init.headers) }));
            }
        }
        return res;
    }

    // The error message of a failed reply: OpenAI's {"error": {"message"}} or the status line
    async function errorText(res) {
        try {
            const body = await res.json();
            if (body && body.error && body.error.message) return res.status + ": " + body.error.message;
        } catch (e) { /* not JSON */ }
        return res.status + " " + res.statusText;
    }

    function forgetKey() { localStorage.removeItem(KEY); }

    return { call, errorText, forgetKey };
})();
