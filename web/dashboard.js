// The engine dashboard: polls /status (docs/status.schema.json) twice a
// second and draws rates from the difference between two snapshots. A
// snapshot older than the last one drawn (a lower snapshot.seq from the same
// server) is skipped; one with the same seq means the engine is idle.
"use strict";

const POLL_MS = 500, KEEP = 120; // 120 points: one minute of history
const $ = (id) => document.getElementById(id);
const points = [];
let prev = null;

function isStale(s) {
    // a restarted server counts from seq 0 again, but its monotonic clock runs on
    return prev && s.snapshot.seq < prev.snapshot.seq && s.snapshot.monotonic_ns <= prev.snapshot.monotonic_ns;
}

// One point of the time series from two snapshots.
function point(s, p) {
    const sc = s.scheduler, c = s.cache, r = s.requests, g = s.grammar;
    const dt = Math.max(1e-3, (s.snapshot.monotonic_ns - p.snapshot.monotonic_ns) / 1e9 || POLL_MS / 1000);
    const same = s.snapshot.seq === p.snapshot.seq;
    const dSteps = same ? 0 : sc.steps - p.scheduler.steps;
    const dPrefill = same ? 0 : sc.prefill_rows - p.scheduler.prefill_rows;
    const dDecode = same ? 0 : sc.decode_rows - p.scheduler.decode_rows;
    const dPrompt = r.prompt_tokens - p.requests.prompt_tokens;
    const dHit = c.hit_tokens - p.cache.hit_tokens;
    return {
        stepsPerS: dSteps / dt,
        rowsPerStep: dSteps ? (dPrefill + dDecode) / dSteps : 0,
        prefillPerS: dPrefill / dt,
        decodePerS: dDecode / dt,
        queued: sc.queued,
        active: sc.prefilling + sc.decoding,
        used: c.blocks_used,
        cached: c.blocks_cached,
        free: Math.max(0, c.blocks_total - c.blocks_used - c.blocks_cached),
        hitNow: dPrompt > 0 ? dHit / dPrompt : null,
        hitAll: r.prompt_tokens ? c.hit_tokens / r.prompt_tokens : 0,
        maskUs: g && g.masks ? g.mask_ns_per_token / 1000 : 0,
        maskP99Us: g ? g.mask_ns_p99 / 1000 : 0,
    };
}

const col = (k) => points.map((p) => p[k]);
const MIB = 1024 * 1024;

function draw(s) {
    const C = splashCharts;
    C.lines($("c-steps"), [{ name: "steps/s", values: col("stepsPerS") }]);
    C.lines($("c-rows-step"), [{ name: "rows/step", values: col("rowsPerStep") }]);
    C.lines($("c-rows"), [{ name: "prefill rows/s", values: col("prefillPerS") }, { name: "decode rows/s", values: col("decodePerS") }]);
    C.bars($("c-width"), s.scheduler.decode_width_histogram.filter((b) => b.min <= s.scheduler.max_seqs).map((b) => ({ label: b.min === b.max ? String(b.min) : b.min + "-" + (b.max == null ? "" : b.max), value: b.count })));
    C.lines($("c-queue"), [{ name: "queued", values: col("queued") }, { name: "active", values: col("active") }]);
    C.lines($("c-kv"), [{ name: "used", values: col("used") }, { name: "cached", values: col("cached") }, { name: "free", values: col("free") }]);
    C.lines($("c-hit"), [{ name: "this interval", values: col("hitNow") }, { name: "since start", values: col("hitAll") }], 1);
    const sp = s.spec;
    C.bars($("c-accept"), sp.acceptance_by_position.map((a) => ({ label: String(a.position), value: a.rate || 0 })), 1);
    $("spec-note").textContent = s.policy.drafter === "none" ? "no speculative decoding (drafter none)"
        : "drafter " + s.policy.drafter + ", acceptance " + (sp.acceptance_rate == null ? "n/a" : (sp.acceptance_rate * 100).toFixed(1) + " %") +
          ", " + sp.accepted + " of " + sp.verified + " verified";
    C.bars($("c-verify"), sp.fitter ? sp.fitter.width_histogram.map((n, i) => ({ label: String(i), value: n })) : []);
    $("verify-note").textContent = sp.fitter ? "verify rows " + s.policy.verify_rows + ": width " + sp.fitter.width + " now"
        : "verify rows " + s.policy.verify_rows + " (no fitted width)";
    C.lines($("c-mask"), [{ name: "mean", values: col("maskUs") }, { name: "p99", values: col("maskP99Us") }]);
    const m = s.memory;
    const plan = [["weights", m.weights_bytes], ["KV", m.kv_bytes], ["scratch", m.scratch_bytes], ["snapshots", m.state_snapshot_bytes]];
    C.bars($("c-memory"), plan.map(([label, v]) => ({ label, value: v / MIB })));
    $("memory-note").textContent = plan.map(([label, v]) => label + " " + C.fmt(v / MIB)).join(", ") + " MiB; resident " +
        C.fmt(m.resident_bytes / MIB) + " of a " + C.fmt(m.limit_bytes / MIB) + " MiB limit; host " + C.fmt(m.host_available_bytes / MIB) +
        " MiB available of " + C.fmt(m.host_total_bytes / MIB) + " (pressure " + (m.host_pressure * 100).toFixed(0) + " %)";
    info(s);
}

function info(s) {
    const md = s.model, pa = md.parameters, b = s.build, po = s.policy, r = s.requests;
    const rows = [
        ["model", md.id], ["arch", md.arch + ", " + C_fmt(pa.n_params) + " parameters, " + pa.n_layers + " layers, hidden " + pa.hidden],
        ["weights", (md.weight_types || []).join(", ")], ["context", pa.max_context + " tokens per sequence (trained " + pa.context_length + ")"],
        ["kernel path", md.kernel_path], ["build", b.version + " " + b.git_revision + " (" + b.build_type + ")"],
        ["CPU path", String(b.cpu_level)], ["CPU features", b.cpu_features],
        ["policy", "verify rows " + po.verify_rows + " (now " + po.verify_rows_effective + "), drafter " + po.drafter + ", draft max " + po.draft_max],
        ["sequences", s.scheduler.max_seqs + " at most, " + s.scheduler.waiting + " waiting"],
        ["kernel threads", poolText(s.scheduler)],
        ["requests", r.submitted + " submitted, " + r.completed + " completed, " + r.cancelled + " cancelled, " + r.failed + " failed, " + r.rejected + " rejected"],
        ["tokens", r.prompt_tokens + " prompt, " + r.generated_tokens + " generated"],
    ];
    $("info").replaceChildren(...rows.map(([k, v]) => {
        const tr = document.createElement("tr");
        const a = document.createElement("td"), z = document.createElement("td");
        a.textContent = k;
        z.textContent = v;
        tr.append(a, z);
        return tr;
    }));
}
const C_fmt = (v) => splashCharts.fmt(v);

// The pool's jobs run on the engine thread alone: its threads were found
// sharing one CPU (another process busy on the others; base/pool.c).
function poolText(sc) {
    if (sc.kernel_threads < 2) return String(sc.kernel_threads);
    const alone = sc.pool_jobs ? (100 * sc.pool_jobs_alone / sc.pool_jobs).toFixed(1) : "0.0";
    return sc.kernel_threads + " (" + alone + " % of " + sc.pool_jobs + " jobs run alone: threads found sharing a CPU)";
}

async function poll() {
    try {
        const res = await splashApi.call("/status");
        if (!res.ok) throw new Error(await splashApi.errorText(res));
        const s = await res.json();
        if (!isStale(s)) {
            if (prev) {
                points.push(point(s, prev));
                if (points.length > KEEP) points.shift();
            }
            prev = s;
            $("seq").textContent = "snapshot " + s.snapshot.seq + (s.ready ? "" : " (not ready)") + (s.draining ? " (draining)" : "");
            draw(s);
        }
        $("error").hidden = true;
    } catch (e) {
        $("error").textContent = "/status: " + e.message;
        $("error").hidden = false;
    }
    setTimeout(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", poll);
