// deploy/ checked without a cluster: the Kubernetes manifest parsed with npm's
// yaml and validated against the Kubernetes API schemas (kubernetes-models,
// pinned in package.json), plus the fields that draining and routing depend
// on; the systemd template through systemd-analyze verify; deploy/haproxy.cfg
// through haproxy -c. A mutated manifest must fail, so the validation can.
//   node manifests.test.mjs --splash BIN --model GGUF --deps DIR
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { test } from "node:test";
import { options, requireDeps } from "../server/lib.mjs";

const opts = options();
const deps = requireDeps(opts.deps);
const DEPLOY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy");
const YAML = deps("yaml");
// kubernetes-models is ES modules only: imported from the deps folder
const K8S = path.resolve(opts.deps, "node_modules/kubernetes-models");
const { Deployment } = await import(pathToFileURL(path.join(K8S, "apps/v1/Deployment.js")));
const { Service } = await import(pathToFileURL(path.join(K8S, "v1/Service.js")));
const MODELS = { Deployment, Service };

function manifests() {
    const docs = YAML.parseAllDocuments(readFileSync(path.join(DEPLOY, "kubernetes.yaml"), "utf8"));
    for (const d of docs) assert.equal(d.errors.length, 0, `YAML: ${d.errors.map((e) => e.message).join("; ")}`);
    return docs.map((d) => d.toJS());
}

function validate(obj) {
    const Model = MODELS[obj.kind];
    assert.ok(Model, `no schema for kind ${obj.kind}`);
    new Model(obj).validate(); // throws, naming the path, when the object breaks the schema
}

const arg = (args, flag) => args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);

test("kubernetes.yaml: a Deployment and its Services, valid against the API schemas", () => {
    const objs = manifests();
    assert.deepEqual(objs.map((o) => o.kind), ["Deployment", "Service", "Service"]);
    for (const o of objs) validate(o);
    const [dep, svc, headless] = objs;
    const pod = dep.spec.template;
    assert.deepEqual(dep.spec.selector.matchLabels, pod.metadata.labels);
    for (const s of [svc, headless]) assert.deepEqual(s.spec.selector, pod.metadata.labels, s.metadata.name);
    assert.equal(headless.spec.clusterIP, "None");
    const c = pod.spec.containers[0];
    assert.equal(c.args[0], "serve");
    // readiness on /ready (503 from the moment draining starts), liveness on /health
    assert.equal(c.readinessProbe.httpGet.path, "/ready");
    assert.equal(c.readinessProbe.failureThreshold, 1);
    assert.equal(c.livenessProbe.httpGet.path, "/health");
    assert.ok(c.ports.some((p) => p.name === svc.spec.ports[0].targetPort));
    assert.equal(Number(arg(c.args, "--port")), c.ports[0].containerPort);
    // the pod's share of the machine, said to splash too
    assert.deepEqual(c.resources.requests, c.resources.limits);
    assert.equal(arg(c.args, "--threads"), c.resources.limits.cpu);
    const gib = (v) => Number(v.replace(/Gi?$/, ""));
    assert.ok(gib(arg(c.args, "--max-memory")) < gib(c.resources.limits.memory), "--max-memory under the limit");
    assert.equal(arg(c.args, "--replica-id"), "$(POD_NAME)");
    assert.equal(c.env.find((e) => e.name === "POD_NAME").valueFrom.fieldRef.fieldPath, "metadata.name");
    // preStop drains and waits; the grace period covers it and the drain
    assert.match(c.lifecycle.preStop.exec.command.join(" "), /kill -TERM 1; while kill -0 1/);
    const drain = Number(arg(c.args, "--drain-timeout"));
    assert.ok(pod.spec.terminationGracePeriodSeconds >= 5 + drain + 5);
});

test("the validator rejects manifests that break the schema", () => {
    const good = manifests();
    const mutations = {
        "containerPort a string": (o) => { o[0].spec.template.spec.containers[0].ports[0].containerPort = "8000"; },
        "replicas a string": (o) => { o[0].spec.replicas = "two"; },
        "no containers": (o) => { delete o[0].spec.template.spec.containers; },
        "probe port an object": (o) => { o[0].spec.template.spec.containers[0].readinessProbe.httpGet.port = {}; },
        "service ports not a list": (o) => { o[1].spec.ports = { port: 80 }; },
    };
    for (const [name, mutate] of Object.entries(mutations)) {
        const objs = structuredClone(good);
        mutate(objs);
        assert.throws(() => objs.forEach(validate), undefined, `accepted: ${name}`);
    }
});

test("splash@.service passes systemd-analyze verify", (t) => {
    if (spawnSync("systemd-analyze", ["--version"]).status !== 0) {
        t.skip("systemd-analyze not installed");
        return;
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), "splash-unit-"));
    try {
        // an instance of the template, pointing at the binary under test
        const unit = path.join(dir, "splash@r1.service");
        writeFileSync(unit, readFileSync(path.join(DEPLOY, "splash@.service"), "utf8")
            .replaceAll("/usr/local/bin/splash", path.resolve(opts.splash)));
        const r = spawnSync("systemd-analyze", ["verify", unit], { encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stderr.trim(), "", "systemd-analyze warned");
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
});

test("haproxy -c accepts deploy/haproxy.cfg", () => {
    const haproxy = spawnSync("haproxy", ["-v"]).status === 0 ? "haproxy" : "/usr/sbin/haproxy";
    const r = spawnSync(haproxy, ["-c", "-f", path.join(DEPLOY, "haproxy.cfg")], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
});
