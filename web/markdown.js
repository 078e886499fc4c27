// Model output as HTML, safely: every character is escaped first, then a small
// subset of Markdown is recognised in the escaped text (fenced code blocks,
// inline code, bold, italics, bullet and numbered lists, links to http(s)
// only). No model text can become a tag or an attribute of its own.
"use strict";

const splashMarkdown = (() => {
    const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
    const escape = (s) => s.replace(/[&<>"']/g, (c) => ESC[c]);

    // inline spans over escaped text; code spans are set aside first so
    // nothing inside them is read as Markdown
    function inline(text) {
        const codes = [];
        let s = text.replace(/`([^`\n]+)`/g, (m, code) => { codes.push(code); return "\u0000" + (codes.length - 1) + "\u0000"; });
        s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s()]+)\)/g,
            (m, label, url) => '<a href="' + url + '" target="_blank" rel="noopener noreferrer">' + label + "</a>");
        s = s.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
        s = s.replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, "$1<em>$2</em>");
        s = s.replace(/(^|[^\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>");
        return s.replace(/\u0000(\d+)\u0000/g, (m, i) => "<code>" + codes[Number(i)] + "</code>");
    }

    // paragraphs and lists in a stretch of text outside code blocks
    function blocks(text) {
        const out = [];
        let list = null, para = [];
        const flushPara = () => { if (para.length) out.push("<p>" + para.map(inline).join("<br>") + "</p>"); para = []; };
        const flushList = () => { if (list) out.push("<" + list.tag + ">" + list.items.map((i) => "<li>" + inline(i) + "</li>").join("") + "</" + list.tag + ">"); list = null; };
        for (const line of text.split("\n")) {
            const m = line.match(/^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/);
            if (m) {
                const tag = m[1] ? "ul" : "ol";
                flushPara();
                if (!list || list.tag !== tag) { flushList(); list = { tag, items: [] }; }
                list.items.push(m[3]);
            } else if (!line.trim()) {
                flushPara(); flushList();
            } else {
                flushList();
                para.push(line);
            }
        }
        flushPara(); flushList();
        return out.join("");
    }

    function render(source) {
        const text = escape(String(source).replace(/\u0000/g, ""));
        const parts = text.split(/^```[^\n]*\n?/m); // odd parts are inside a fence (an open one runs to the end)
        return parts.map((p, i) => (i % 2 ? "<pre><code>" + p.replace(/\n$/, "") + "</code></pre>" : blocks(p))).join("");
    }

    return { render, escape };
})();
