#!/usr/bin/env python3
"""Plots a `phonegpt train` run and checks the target rule, from the progress log it printed.

    phonegpt train ... 2> progress.log
    scripts/plot_run.py progress.log --png loss.png --target 1.4697 > evaluations.md

Reads the progress lines ("step N/M | loss X | ...") and the evaluation lines ("eval at step N:
validation loss Y ..."), draws training loss (the logged steps' loss, dropout active) and
whole-split validation loss against the step, and prints a Markdown table of the evaluations
with the rule "at or below TARGET at two consecutive evaluations" checked.
"""
import argparse
import re
import sys

STEP = re.compile(r"^step (\d+)/(\d+) \| loss ([0-9.]+)")
EVAL = re.compile(r"^eval at step (\d+): validation loss ([0-9.]+)")


def parse(path):
    train, evals = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = STEP.match(line)
            if m:
                train.append((int(m.group(1)), float(m.group(3))))
                continue
            m = EVAL.match(line)
            if m:
                evals.append((int(m.group(1)), float(m.group(2))))
    if not evals:
        sys.exit(f"{path}: no evaluation lines found (is this the stderr of phonegpt train?)")
    return train, evals


def first_passing_pair(evals, target):
    for (s0, l0), (s1, l1) in zip(evals, evals[1:]):
        if l0 <= target and l1 <= target:
            return (s0, l0), (s1, l1)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--png", help="write the loss curves here")
    ap.add_argument("--target", type=float, default=1.4697)
    ap.add_argument("--title", default="PhoneGPT on Tiny Shakespeare")
    args = ap.parse_args()
    train, evals = parse(args.log)
    pair = first_passing_pair(evals, args.target)
    best = min(evals, key=lambda e: e[1])

    print(f"| step | whole-split validation loss | at or below {args.target} |")
    print("|---:|---:|:---:|")
    for step, loss in evals:
        print(f"| {step:,} | {loss:.4f} | {'yes' if loss <= args.target else ''} |")
    print()
    print(f"best: {best[1]:.4f} at step {best[0]:,}")
    if pair:
        print(f"rule met: {pair[0][1]:.4f} at step {pair[0][0]:,} and {pair[1][1]:.4f} at step {pair[1][0]:,}")
    else:
        print(f"rule not met: no two consecutive evaluations at or below {args.target}")

    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.5))
        if train:
            ax.plot([s for s, _ in train], [l for _, l in train], lw=1, alpha=0.7,
                    label="training loss (logged steps, dropout on)")
        ax.plot([s for s, _ in evals], [l for _, l in evals], "o-", ms=3,
                label="whole-split validation loss")
        ax.axhline(args.target, color="gray", ls="--", lw=1, label=f"target {args.target}")
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (nats per character)")
        ax.set_ylim(min(min(l for _, l in train or evals), best[1]) - 0.05, 2.2)
        ax.set_title(args.title)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=100)


if __name__ == "__main__":
    main()
