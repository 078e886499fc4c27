"""Trains one model (target or draft) on data/train.bin with fixed seeds and
a fixed step count; writes out/<name>.pt and a log line per 50 steps."""

import argparse
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from model import CONFIGS, Qwen3


def evaluate(model, val, ctx, n_windows, dtype):
    model.eval()
    losses = []
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
        step = max(1, (len(val) - ctx - 1) // n_windows)
        for i in range(n_windows):
            s = i * step
            x = torch.from_numpy(val[s:s + ctx].astype(np.int64))[None]
            y = torch.from_numpy(val[s + 1:s + ctx + 1].astype(np.int64))[None]
            losses.append(F.cross_entropy(model(x).float().view(-1, model.embed.weight.shape[0]), y.view(-1)).item())
    model.train()
    return float(np.mean(losses))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="f32")
    ap.add_argument("--data", default="data")
    ap.add_argument("--out", default="out")
    ap.add_argument("--resume", help="start from this checkpoint's weights (fresh optimizer and schedule)")
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    train = np.fromfile(os.path.join(a.data, "train.bin"), dtype=np.uint16)
    val = np.fromfile(os.path.join(a.data, "val.bin"), dtype=np.uint16)
    model = Qwen3(CONFIGS[a.model])
    prior_steps = 0
    if a.resume:
        ck = torch.load(a.resume, map_location="cpu")
        model.load_state_dict(ck["state"])
        prior_steps = ck["steps"]
    n_params = sum(p.numel() for p in model.parameters())
    print("train: %s, %d parameters, %d train / %d val tokens" % (a.model, n_params, len(train), len(val)), flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    rng = np.random.default_rng(a.seed)  # window starts: fixed by the seed
    t0 = time.time()
    for step in range(a.steps):
        # linear warm-up, then cosine decay to a tenth
        if step < a.warmup:
            lr = a.lr * (step + 1) / a.warmup
        else:
            p = (step - a.warmup) / max(1, a.steps - a.warmup)
            lr = a.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * p)))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = rng.integers(0, len(train) - a.ctx - 1, size=a.batch)
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        # one window at a time, gradients accumulated: every activation of a
        # 512-token window stays under glibc's 32 MB mmap threshold, so its
        # memory is reused from the heap instead of page-faulted in afresh on
        # every step (a fresh 32 MB tensor cost ~60 ms in faults on the VM)
        for s in starts:
            x = torch.from_numpy(train[s:s + a.ctx].astype(np.int64))[None]
            y = torch.from_numpy(train[s + 1:s + a.ctx + 1].astype(np.int64))[None]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
                logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1)) / len(starts)
            loss.backward()
            loss_sum += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == a.steps - 1:
            print("step %d/%d loss %.3f lr %.2e %.0f s" % (step, a.steps, loss_sum, lr, time.time() - t0),
                  flush=True)
    vl = evaluate(model, val, a.ctx, 16, a.dtype)
    print("done: %s %d steps in %.0f s; validation loss %.4f perplexity %.2f" %
          (a.model, a.steps, time.time() - t0, vl, math.exp(vl)), flush=True)
    os.makedirs(a.out, exist_ok=True)
    torch.save({"config": CONFIGS[a.model], "state": model.state_dict(), "steps": prior_steps + a.steps,
                "train_seconds": time.time() - t0, "val_loss": vl}, os.path.join(a.out, a.model + ".pt"))


if __name__ == "__main__":
    main()
