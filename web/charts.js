// Hand-written <canvas> charts for the dashboard: lines over time and bars.
// Each chart also records what it drew in data-max and data-points on its
// canvas, so a test (or a person with the inspector) can read it.
"use strict";

const splashCharts = (() => {
    const COLORS = ["#2f6fde", "#e8590c", "#2b8a3e", "#ae3ec9", "#c92a2a", "#868e96"];
    const PAD = { l: 44, r: 8, t: 18, b: 16 };

    // a canvas sized to its CSS box at the screen's pixel density
    function prepare(canvas) {
        const dpr = window.devicePixelRatio || 1;
        const w = canvas.clientWidth || 300, h = canvas.clientHeight || 150;
        if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
            canvas.width = Math.round(w * dpr);
            canvas.height = Math.round(h * dpr);
        }
        const g = canvas.getContext("2d");
        g.setTransform(dpr, 0, 0, dpr, 0, 0);
        g.clearRect(0, 0, w, h);
        g.font = "11px system-ui, sans-serif";
        return { g, w, h };
    }

    function fmt(v) {
        if (v >= 1e9) return (v / 1e9).toFixed(1) + "G";
        if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
        if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
        return Number.isInteger(v) ? String(v) : v.toFixed(v < 1 ? 2 : 1);
    }

    function axes(g, w, h, max) {
        g.strokeStyle = "#dde1e8";
        g.fillStyle = "#667085";
        g.beginPath();
        for (const f of [0, 0.5, 1]) {
            const y = PAD.t + (h - PAD.t - PAD.b) * (1 - f);
            g.moveTo(PAD.l, y);
            g.lineTo(w - PAD.r, y);
            g.fillText(fmt(max * f), 2, y + 4);
        }
        g.stroke();
    }

    function legend(g, names) {
        let x = PAD.l;
        names.forEach((name, i) => {
            g.fillStyle = COLORS[i % COLORS.length];
            g.fillRect(x, 4, 10, 8);
            g.fillStyle = "#1d2330";
            g.fillText(name, x + 13, 12);
            x += g.measureText(name).width + 26;
        });
    }

    function record(canvas, values) {
        const finite = values.filter((v) => Number.isFinite(v));
        canvas.dataset.max = String(finite.length ? Math.max(...finite) : 0);
        canvas.dataset.points = String(finite.length);
    }

    // series: [{name, values: [numbers, null for a gap]}], all over the same times
    function lines(canvas, series, fixedMax) {
        const { g, w, h } = prepare(canvas);
        const all = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v));
        const max = fixedMax || (all.some((v) => v > 0) ? Math.max(...all) * 1.1 : 1);
        axes(g, w, h, max);
        const n = Math.max(2, ...series.map((s) => s.values.length));
        series.forEach((s, i) => {
            g.strokeStyle = COLORS[i % COLORS.length];
            g.lineWidth = 1.5;
            g.beginPath();
            let pen = false, last = null;
            s.values.forEach((v, j) => {
                if (!Number.isFinite(v)) { pen = false; return; }
                const x = PAD.l + (w - PAD.l - PAD.r) * (j + n - s.values.length) / (n - 1);
                const y = PAD.t + (h - PAD.t - PAD.b) * (1 - Math.min(v, max) / max);
                if (pen) g.lineTo(x, y); else g.moveTo(x, y);
                pen = true;
                last = [x, y];
            });
            g.stroke();
            if (last) { // the newest value as a dot, so a lone point shows too
                g.fillStyle = g.strokeStyle;
                g.beginPath();
                g.arc(last[0], last[1], 2.5, 0, 2 * Math.PI);
                g.fill();
            }
        });
        legend(g, series.map((s) => s.name));
        record(canvas, all);
    }

    // bars: [{label, value}]; an empty list draws "no data"
    function bars(canvas, items, fixedMax) {
        const { g, w, h } = prepare(canvas);
        const values = items.map((b) => b.value);
        const max = fixedMax || (values.some((v) => v > 0) ? Math.max(...values) * 1.1 : 1);
        axes(g, w, h, max);
        if (!items.length) {
            g.fillStyle = "#667085";
            g.fillText("no data yet", PAD.l + 8, h / 2);
        }
        const slot = (w - PAD.l - PAD.r) / Math.max(1, items.length);
        items.forEach((b, i) => {
            const bh = (h - PAD.t - PAD.b) * Math.min(b.value, max) / max;
            g.fillStyle = COLORS[0];
            g.fillRect(PAD.l + i * slot + slot * 0.15, h - PAD.b - bh, slot * 0.7, bh);
            g.fillStyle = "#667085";
            g.fillText(b.label, PAD.l + i * slot + slot * 0.15, h - 3);
        });
        record(canvas, values);
    }

    return { lines, bars, fmt };
})();
