"""Trains the tokenizer on data/train.txt and encodes both splits to uint16
token files (documents separated by <|endoftext|>)."""

import argparse
import os
import time

import numpy as np

from bpe import Tokenizer, train

DOC_SEP = "\n<|endoftext|>\n"  # corpus.py writes this between documents


def encode_file(tok, path):
    eot = tok.special_id("<|endoftext|>")
    ids = []
    for doc in open(path, encoding="utf-8").read().split(DOC_SEP):
        if doc.strip():
            ids.extend(tok.encode(doc.strip("\n")))
            ids.append(eot)
    return np.array(ids, dtype=np.uint16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--vocab", type=int, default=4096)
    a = ap.parse_args()
    t0 = time.time()
    text = open(os.path.join(a.data, "train.txt"), encoding="utf-8").read().replace(DOC_SEP, "\n")
    tok = Tokenizer(train(text, a.vocab))
    tok.save(os.path.join(a.data, "tokenizer.json"))
    print("prepare: tokenizer trained in %.0f s" % (time.time() - t0), flush=True)
    for split in ("train", "val"):
        ids = encode_file(tok, os.path.join(a.data, split + ".txt"))
        ids.tofile(os.path.join(a.data, split + ".bin"))
        n_bytes = len(open(os.path.join(a.data, split + ".txt"), "rb").read())
        print("prepare: %s %d tokens (%.2f bytes/token)" % (split, len(ids), n_bytes / len(ids)), flush=True)


if __name__ == "__main__":
    main()
