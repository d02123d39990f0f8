#!/usr/bin/env python3
"""Loads a libphonegpt checkpoint into the PyTorch twin (phonegpt.torch_gpt) and prints both
whole-split losses on the same split: the library's and PyTorch's, computed independently
with the same window rule.

    python3 examples/python/compare_pytorch.py out/tiny/model.bin --data tinyshakespeare.txt
"""
import argparse
import os
import sys
import time

# PyTorch's best CPU configuration here (benchmarks/compare_pytorch.py): its BLAS pool off so it
# does not fight its OpenMP pool, and idle OpenMP threads sleeping rather than spinning. Read
# when torch loads, so set before the import; the caller's environment wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

if os.environ.get("PHONEGPT_PYDIR"):
    sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
import phonegpt  # noqa: E402
import torch  # noqa: E402
from phonegpt.torch_gpt import from_phonegpt, whole_split_loss  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--data", required=True)
    p.add_argument("--split", choices=["val", "train"], default="val")
    p.add_argument("--train-fraction", type=float, default=0.9)
    p.add_argument("--window", type=int, default=0, help="0 = the model's context")
    p.add_argument("--stride", type=int, default=0, help="0 = the window (non-overlapping)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--float64", action="store_true", help="run the twin in float64")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    with phonegpt.Model.load(args.checkpoint) as model:
        tok = model.tokenizer
        if tok is None:
            sys.exit("the checkpoint has no tokenizer")
        ids = tok.encode(open(args.data, encoding="utf-8").read())
        n_train = phonegpt.split_index(len(ids), args.train_fraction)
        tokens = ids[n_train:] if args.split == "val" else ids[:n_train]

        t0 = time.perf_counter()
        r = model.evaluate(tokens, window=args.window, stride=args.stride, n_threads=args.threads)
        t1 = time.perf_counter()
        twin = from_phonegpt(model, dtype=torch.float64 if args.float64 else torch.float32)
        twin.eval()
        loss, scored, windows = whole_split_loss(twin, tokens, args.window, args.stride)
        t2 = time.perf_counter()

    print(f"{args.checkpoint}: {args.split} split, {len(tokens):,} tokens, {scored:,} scored in {windows:,} windows")
    print(f"  libphonegpt  loss {r.mean_loss:.6f}  ({t1 - t0:.2f} s)")
    print(f"  PyTorch      loss {loss:.6f}  ({t2 - t1:.2f} s, {'float64' if args.float64 else 'float32'})")
    print(f"  relative difference {abs(r.mean_loss - loss) / loss:.2e}")


if __name__ == "__main__":
    main()
