#!/usr/bin/env python3
"""When did Hugging Face's BPE trainer pass a given vocabulary size?

The npm binding of HF tokenizers trains only with its default BpeTrainer (vocab_size 30,000;
docs/performance.md), so it cannot be asked for a 4,096-token vocabulary. Training is greedy,
though: a run to 30,000 passes through every smaller vocabulary, and the trainer's progress bar
("Compute merges  N / 30000", drawn by indicatif only when stderr is a terminal) counts the
merges made so far. This script runs benchmarks/bench_bpe_train_hf.js on a pseudo-terminal,
timestamps every redraw from the process start, and reports for each requested vocabulary size
V the two redraws around the moment the trainer had made V - |alphabet| merges: HF's time to V
lies between them (redraws come about every 50 ms). A vocabulary above the one the run reached
(30,000 and more) gets the time of the whole run as a lower bound.

Usage: hf_train_progress.py [--summary] TEXT VOCAB [VOCAB...]
  (prints one JSON object, or with --summary one line per size)
"""
import json
import os
import pty
import re
import select
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MERGES = re.compile(rb"Compute merges\s+\S*\s+(\d+)\s*/\s*(\d+)")


def run_on_pty(argv):
    """Runs argv with a pty as stdin/stdout/stderr; returns [(seconds, bytes)] and the wall time."""
    start = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    chunks = []
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                data = os.read(fd, 65536)
                if not data:
                    break
                chunks.append((time.monotonic() - start, data))
        except OSError:  # the child closed the pty
            break
    _, status = os.waitpid(pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("hf_train_progress: the HF trainer failed:\n" +
                 b"".join(d for _, d in chunks).decode("utf-8", "replace")[-2000:])
    return chunks, wall


def main():
    args = sys.argv[1:]
    summary = bool(args) and args[0] == "--summary"
    args = args[1:] if summary else args
    if len(args) < 2:
        sys.exit(__doc__)
    text, vocabs = args[0], [int(v) for v in args[1:]]
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "hf.json")
        chunks, wall = run_on_pty(["node", os.path.join(HERE, "bench_bpe_train_hf.js"), text, out])
        with open(out, encoding="utf-8") as f:
            model = json.load(f)["model"]
    merges_made = len(model["merges"])
    alphabet = len(model["vocab"]) - merges_made
    # Every redraw of the merge bar, in order: (seconds, merges so far). A chunk can hold several
    # redraws; they all get the chunk's arrival time.
    draws = [(t, int(m.group(1))) for t, data in chunks for m in MERGES.finditer(data)
             if int(m.group(2)) >= int(m.group(1))]
    # The first redraw of the bar still shows the previous bar's count: keep what follows the
    # first reset to a smaller count, i.e. from the first value below its predecessor.
    for i in range(1, len(draws)):
        if draws[i][1] < draws[i - 1][1]:
            draws = draws[i:]
            break
    result = {"peer": "hf-tokenizers", "text": text, "wall_s": round(wall, 3),
              "alphabet": alphabet, "merges": merges_made, "vocab": len(model["vocab"]),
              "redraws": len(draws), "at": []}
    for v in vocabs:
        need = v - alphabet
        if need > merges_made:
            result["at"].append({"vocab": v, "reached": False, "after_s": round(wall, 3)})
            continue
        before = max((t for t, n in draws if n < need), default=0.0)
        after = min((t for t, n in draws if n >= need), default=wall)
        result["at"].append({"vocab": v, "reached": True, "after_s": round(before, 3),
                             "by_s": round(after, 3)})
    if not summary:
        print(json.dumps(result))
        return
    print(f"hf-tokenizers run to {result['vocab']} tokens (alphabet {alphabet}): "
          f"{result['wall_s']} s wall, {len(draws)} redraws of the merge bar")
    for a in result["at"]:
        if a["reached"]:
            print(f"hf-tokenizers {a['vocab']:>7}: reached between {a['after_s']} and {a['by_s']} s wall")
        else:
            print(f"hf-tokenizers {a['vocab']:>7}: not reached; more than {a['after_s']} s wall (the whole run)")


if __name__ == "__main__":
    main()
