#!/usr/bin/env python3
"""Scores every checkpoint in a folder on the whole validation split and writes scores.csv
and scores.png (loss by step).

    python3 examples/python/score_checkpoints.py runs/phonegpt --data tinyshakespeare.txt

Every file matching --pattern (default *.bin) that libphonegpt can load is scored with
Model.evaluate (non-overlapping windows of the context length, every prediction scored once);
files it cannot load are listed and skipped. The step of a checkpoint is the last number in its
file name (model_018000.bin -> 18000); files without one are plotted in name order. The text
is encoded with each checkpoint's own tokenizer and split with phonegpt.split_index at
--train-fraction, as the CLI does.
"""
import argparse
import csv
import glob
import os
import re
import sys

if os.environ.get("PHONEGPT_PYDIR"):
    sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
import phonegpt  # noqa: E402


def step_of(path):
    numbers = re.findall(r"\d+", os.path.basename(path))
    return int(numbers[-1]) if numbers else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--data", required=True, help="the text the models were trained on")
    p.add_argument("--pattern", default="*.bin")
    p.add_argument("--train-fraction", type=float, default=0.9)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--out", default=None, help="folder for scores.csv and scores.png (default: the folder)")
    args = p.parse_args()

    text = open(args.data, encoding="utf-8").read()
    out_dir = args.out or args.folder
    rows = []
    for path in sorted(glob.glob(os.path.join(args.folder, args.pattern))):
        try:
            model = phonegpt.Model.load(path)
        except phonegpt.Error as e:
            print(f"skipped {path}: {e}", file=sys.stderr)
            continue
        with model:
            tok = model.tokenizer
            if tok is None:
                print(f"skipped {path}: the checkpoint has no tokenizer", file=sys.stderr)
                continue
            ids = tok.encode(text)
            val = ids[phonegpt.split_index(len(ids), args.train_fraction):]
            r = model.evaluate(val, n_threads=args.threads)
        rows.append(dict(checkpoint=os.path.basename(path), step=step_of(path), loss=r.mean_loss,
                         bits_per_char=r.bits_per_token, bits_per_byte=r.bits_per_byte, scored=r.n_scored,
                         bytes=r.n_bytes, windows=r.n_windows))
        print(f"{path}: loss {r.mean_loss:.4f}  bits/token {r.bits_per_token:.4f}  bits/byte {r.bits_per_byte:.4f}"
              f"  ({r.n_scored:,} scored, {r.n_bytes:,} bytes)")
    if not rows:
        sys.exit(f"no loadable checkpoint matching {args.pattern} in {args.folder}")

    csv_path = os.path.join(out_dir, "scores.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if v is None else (f"{v:.6f}" if isinstance(v, float) else v)) for k, v in row.items()})

    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    with_step = sorted((r for r in rows if r["step"] is not None), key=lambda r: r["step"])
    plotted = with_step if len(with_step) == len(rows) else rows
    xs = [r["step"] for r in plotted] if plotted is with_step else list(range(len(plotted)))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(xs, [r["loss"] for r in plotted], marker="o")
    if plotted is with_step:
        ax.set_xlabel("step")
    else:  # no step numbers in the names: one tick per checkpoint, labelled with its name
        ax.set_xticks(xs, [r["checkpoint"] for r in plotted], rotation=30, ha="right")
        ax.set_xlabel("checkpoint")
    ax.set_ylabel("whole-split validation loss (nats)")
    ax.set_title(os.path.abspath(args.folder))
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    png_path = os.path.join(out_dir, "scores.png")
    fig.savefig(png_path, dpi=100)
    best = min(rows, key=lambda r: r["loss"])
    print(f"best: {best['checkpoint']} loss {best['loss']:.4f}; wrote {csv_path} and {png_path}")


if __name__ == "__main__":
    main()
