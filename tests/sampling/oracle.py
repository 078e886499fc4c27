#!/usr/bin/python3
"""Independent oracle for splash's sampler (src/engine/sampler.h).

Generates random cases (ties, every filter combined, extreme and masked
logits, penalties with history), runs them through the C sampler via the
sampler_cases harness, and checks, for every case:
  - the distribution from sampler_distribution against a straightforward
    numpy recomputation (full sort, no thresholds, float64 except where the
    sampler's float32 arithmetic is part of the definition),
  - every draw of sampler_sample against the inverse CDF in id order of the
    oracle's distribution, replaying the request's xoshiro256** generator
    (re-implemented here from its published definition),
  - for a few cases with many draws, a chi-square test of the frequencies.
Cases whose filter decision sits within rounding of its threshold are
counted and skipped (exp is float32 in C, float64 here).

  oracle.py --cases PATH/sampler_cases [--n 400] [--seed 1] [--self-check]

--self-check: deliberately broken oracles (each a plausible bug) must each
disagree with the sampler on some case, so the comparison can fail.
"""
import argparse
import math
import subprocess
import sys

import numpy as np

M64 = (1 << 64) - 1
F32 = np.float32


# --- xoshiro256** seeded through splitmix64 -------------------------------

class Xoshiro:
    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & M64

    def next(self):
        s = self.s
        result = (self.rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self.rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53


# --- the oracle -------------------------------------------------------------

class Ambiguous(Exception):
    """A filter decision within rounding of its threshold."""


def oracle(case, mutant=None):
    """The distribution the next token is drawn from, float64 [vocab]."""
    vocab = case["vocab"]
    l = np.array(case["logits"], dtype=F32)
    l[np.isnan(l)] = -np.inf
    seen = np.zeros(vocab, dtype=bool)
    seen[case["prompt"]] = True
    seen[case["gen"]] = True
    counts = np.bincount(np.array(case["gen"], dtype=np.int64), minlength=vocab)
    rep, pres, freq = F32(case["rep"]), F32(case["pres"]), F32(case["freq"])
    if rep == 0:
        rep = F32(1)

    def repetition(l):
        m = seen if mutant != "rep-generated-only" else counts > 0
        pos = l > 0 if mutant != "rep-always-divide" else np.ones(vocab, dtype=bool)
        return np.where(m, np.where(pos, l / rep, l * rep), l).astype(F32)

    def openai(l):
        m = counts > 0
        l = l.copy()
        c = counts[m].astype(F32) if mutant != "freq-ignores-count" else np.ones(m.sum(), dtype=F32)
        l[m] = (l[m] - c * freq) - pres
        return l

    # 1. penalties (vLLM's order: repetition, then frequency and presence)
    if mutant == "penalty-order":
        l = repetition(openai(l))
    else:
        l = openai(repetition(l))
    ids = np.arange(vocab)
    T = F32(case["T"])
    if T == 0:  # 2. greedy
        probs = np.zeros(vocab)
        probs[int(np.argmax(l))] = 1.0
        return probs
    lmax = l.max()
    if np.isinf(lmax):
        w = (l == lmax).astype(np.float64)
    else:
        x = ((l - lmax).astype(F32) / T).astype(F32)
        w = np.exp(x.astype(np.float64))
    # 3. ranking: logit descending, ties by lower id
    order = np.lexsort((ids if mutant != "ties-higher-id" else -ids, -l.astype(np.float64)))
    keep = np.zeros(vocab, dtype=bool)
    k = case["top_k"]
    topk = order[:k] if 0 < k < vocab else order
    if mutant == "top-k-off-by-one" and 0 < k < vocab - 1:
        topk = order[: k + 1]
    # 5. top_p over what top_k left
    top_p = float(F32(case["top_p"]))
    if top_p < 1:
        wk = w[topk]
        total = wk.sum()
        before = np.cumsum(wk) - wk
        need = top_p * total
        if mutant == "top-p-over-all":
            need = top_p * w.sum()
        gap = np.abs(before - need)
        if np.any((gap > 0) & (gap <= 1e-6 * total)):
            raise Ambiguous()
        topk = topk[before < need] if mutant != "top-p-inclusive" else topk[before <= need - 0.02 * total]
    keep[topk] = True
    # 6. min_p relative to the most likely token
    min_p = float(F32(case["min_p"]))
    if min_p > 0:
        ratio = w / w.max()
        gap = np.abs(ratio - min_p)
        if np.any((gap > 0) & (gap <= 1e-6 * min_p)):
            raise Ambiguous()
        keep &= ratio >= min_p if mutant != "min-p-absolute" else w / w.sum() >= min_p
    p = np.where(keep, w, 0.0)
    return p / p.sum()


def draw(probs, u):
    """Inverse CDF in id order; None when u is within rounding of a step."""
    cum = np.cumsum(probs)
    i = int(np.searchsorted(cum, u, side="right"))
    i = min(i, len(probs) - 1)
    while probs[i] == 0 and i > 0:
        i -= 1
    if abs(cum[i] - u) < 1e-6 or (i > 0 and abs(cum[i - 1] - u) < 1e-6):
        return None
    return i


# --- cases -------------------------------------------------------------------

def f32s(x):
    """The exact float32 value as text strtof reads back to the same bits."""
    v = float(F32(x))
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def gen_logits(r, vocab):
    kind = r.integers(0, 9)
    if kind == 0:  # many ties
        l = r.integers(-3, 4, size=vocab).astype(np.float64)
    elif kind == 1:  # peaked
        l = r.normal(0, 1, vocab)
        l[r.integers(0, vocab)] += 15
    elif kind == 2:  # masked (a structured-output mask), one NaN
        l = r.normal(0, 3, vocab)
        l[r.random(vocab) < 0.5] = -np.inf
        l[r.integers(0, vocab)] = r.normal()
        if vocab > 3:
            l[r.integers(0, vocab)] = np.nan
    elif kind == 3:  # huge magnitudes
        l = r.normal(0, 1, vocab) * 1e30
    elif kind == 4:  # tiny differences (ties after rounding in exp)
        l = 5 + r.integers(0, 4, size=vocab) * 1e-6
    elif kind == 5:  # +inf present, or everything masked
        l = r.normal(0, 1, vocab)
        if r.random() < 0.5:
            l[r.integers(0, vocab, size=r.integers(1, 3))] = np.inf
        else:
            l[:] = -np.inf
    elif kind == 6:  # flat
        l = r.normal(0, 0.01, vocab)
    else:  # typical
        l = r.normal(0, r.choice([0.5, 2, 5, 20]), vocab)
    return l.astype(F32)


def gen_case(r, vocab=None, n_draws=40):
    if vocab is None:
        # 20000: past the sampler's sparse path's cap on candidates (vocab / 16)
        # for typical and peaked logits, as a real vocabulary is
        vocab = int(r.choice([1, 2, 3, 5, 10, 50, 300, 2000, 20000]))
    pick = lambda xs: xs[r.integers(0, len(xs))]
    on = lambda: r.random() < 0.5
    case = {
        "vocab": vocab,
        "T": pick([0, 1e-3, 0.3, 0.7, 1, 1, 1.5, 2, 100]),
        "top_k": int(pick([1, 2, 5, 20, 40, vocab - 1, vocab, vocab + 3])) if on() else 0,
        "top_p": pick([0.05, 0.3, 0.5, 0.9, 0.99]) if on() else 1.0,
        "min_p": pick([0.01, 0.1, 0.5, 1.0, 1e-5]) if on() else 0.0,
        "pres": float(r.uniform(-2, 2)) if on() else pick([0.0, 2.0, -2.0]),
        "freq": float(r.uniform(-2, 2)) if on() else pick([0.0, 2.0, -2.0]),
        "rep": pick([0.0, 1.0, 0.5, 1.3, 2.0, 10.0]),
        "seed": int(r.integers(0, 1 << 63)) * 2 + int(r.integers(0, 2)),
        "prompt": [int(x) for x in r.integers(0, vocab, size=r.integers(0, 30))],
        "gen": [int(x) for x in r.integers(0, min(vocab, 8), size=r.integers(0, 25))],
        "n_draws": n_draws,
    }
    case["top_k"] = max(case["top_k"], 0)
    case["logits"] = gen_logits(r, vocab)
    return case


def case_text(c):
    head = [c["vocab"], f32s(c["T"]), c["top_k"], f32s(c["top_p"]), f32s(c["min_p"]), f32s(c["pres"]),
            f32s(c["freq"]), f32s(c["rep"]), c["seed"], len(c["prompt"]), len(c["gen"]), c["n_draws"]]
    parts = [" ".join(map(str, head)), " ".join(map(str, c["prompt"])), " ".join(map(str, c["gen"])),
             "\n".join(f32s(x) for x in c["logits"])]
    return "\n".join(parts) + "\n"


def run_harness(exe, cases):
    text = f"{len(cases)}\n" + "".join(case_text(c) for c in cases)
    out = subprocess.run([exe], input=text, capture_output=True, text=True, check=True).stdout.split("\n")
    results, at = [], 0
    for c in cases:
        if out[at] != "ok":
            raise SystemExit(f"harness refused case {c}: {out[at]}")
        at += 1
        probs = np.array([float(x) for x in out[at : at + c["vocab"]]])
        at += c["vocab"]
        draws = [int(x) for x in out[at : at + c["n_draws"]]]
        at += c["n_draws"]
        results.append((probs, draws))
    return results


def chi_square_ok(counts, probs, n):
    """Frequencies consistent with probs (Wilson-Hilferty, p > 1e-6)."""
    m = probs * n >= 5
    if m.sum() < 2:
        return True
    exp = probs[m] * n
    obs = counts[m]
    rest_e, rest_o = n - exp.sum(), n - obs.sum()
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = int(m.sum()) - 1
    if rest_e >= 5:
        stat += (rest_o - rest_e) ** 2 / rest_e
        dof += 1
    z = ((stat / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return z < 4.75  # one-sided p ~ 1e-6


def compare(case, probs, draws, mutant=None):
    """None if the sampler agrees with the oracle, else a reason."""
    want = oracle(case, mutant)
    if abs(probs.sum() - 1) > 1e-9:
        return f"probabilities sum to {probs.sum()}"
    if np.any((want == 0) & (probs != 0)):
        return f"filtered tokens have mass: {np.nonzero((want == 0) & (probs != 0))[0][:10]}"
    if np.any((want > 1e-30) & (probs == 0)):
        return f"kept tokens have no mass: {np.nonzero((want > 1e-30) & (probs == 0))[0][:10]}"
    if not np.allclose(probs, want, rtol=2e-5, atol=1e-12):
        i = int(np.argmax(np.abs(probs - want)))
        return f"probability of {i}: sampler {probs[i]!r}, oracle {want[i]!r}"
    rng = Xoshiro(case["seed"])
    for k, got in enumerate(draws):
        if case["T"] == 0:
            exp = int(np.argmax(want))
        else:
            exp = draw(want if mutant != "draw-descending-ids" else want[::-1], rng.uniform())
            if exp is not None and mutant == "draw-descending-ids":
                exp = case["vocab"] - 1 - exp
        if exp is not None and got != exp:
            return f"draw {k}: sampler {got}, oracle {exp}"
    if len(draws) >= 10000:
        counts = np.bincount(np.array(draws), minlength=case["vocab"])
        if not chi_square_ok(counts, want, len(draws)):
            return "chi-square: frequencies do not fit the distribution"
    return None


MUTANTS = ["rep-generated-only", "rep-always-divide", "freq-ignores-count", "penalty-order", "ties-higher-id",
           "top-k-off-by-one", "top-p-over-all", "top-p-inclusive", "min-p-absolute", "draw-descending-ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, help="the sampler_cases harness")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--self-check", action="store_true")
    a = ap.parse_args()
    r = np.random.default_rng(a.seed)
    cases = [gen_case(r) for _ in range(a.n)]
    # the full Qwen3 vocabulary (the threshold path with real sizes)
    for _ in range(6):
        c = gen_case(r, vocab=151936, n_draws=20)
        c["logits"] = (r.normal(0, 3, 151936)).astype(F32)
        cases.append(c)
    # many draws for the chi-square test
    for top_k, top_p, min_p in [(0, 1.0, 0.0), (4, 0.8, 0.0), (0, 0.9, 0.05)]:
        c = gen_case(r, vocab=12, n_draws=100000)
        c.update(T=1.0, top_k=top_k, top_p=top_p, min_p=min_p, logits=r.normal(0, 1, 12).astype(F32))
        cases.append(c)
    results = run_harness(a.cases, cases)
    if a.self_check:
        caught = []
        for m in MUTANTS:
            for c, (probs, draws) in zip(cases, results):
                try:
                    with np.errstate(all="ignore"):
                        why = compare(c, probs, draws, m)
                    if why:
                        caught.append(m)
                        break
                except Ambiguous:
                    pass
        missed = sorted(set(MUTANTS) - set(caught))
        if missed:
            print(f"self-check: broken oracles not caught: {missed}")
            return 1
        print(f"self-check: all {len(MUTANTS)} broken oracles disagree with the sampler")
        return 0
    failed, ambiguous, draws_checked = 0, 0, 0
    for i, (c, (probs, draws)) in enumerate(zip(cases, results)):
        try:
            why = compare(c, probs, draws)
        except Ambiguous:
            ambiguous += 1
            continue
        draws_checked += len(draws)
        if why:
            failed += 1
            if failed <= 10:
                shown = {k: v for k, v in c.items() if k != "logits"}
                print(f"case {i} {shown}: {why}")
                if c["vocab"] <= 20:
                    print("  logits", list(c["logits"]))
    print(f"sampling oracle: {len(cases) - ambiguous - failed} agree, {failed} disagree, "
          f"{ambiguous} skipped as within rounding of a threshold; {draws_checked} draws replayed")
    return 1 if failed or ambiguous > len(cases) // 10 else 0


if __name__ == "__main__":
    sys.exit(main())
