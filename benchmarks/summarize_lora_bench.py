#!/usr/bin/env python3
"""Summarises benchmarks/run_lora_bench.sh's JSON lines: per configuration the median over rounds
of each process's median ms/step and CPU ms/step, and its peaks; then the ratios against the
PyTorch twin of the same targets and against libphonegpt's full fine-tuning, all from the same
run (the machine is shared: absolute times move, ratios of interleaved runs much less).

    /usr/bin/python3 benchmarks/summarize_lora_bench.py bench-results/lora_ailoos_0.jsonl
"""
import json
import statistics
import sys


def main(path):
    by = {}
    for line in open(path):
        if line.strip():
            rec = json.loads(line)
            by.setdefault(rec["config"], []).append(rec["result"])
    med = {}
    for name, rs in by.items():
        med[name] = {k: statistics.median(r[k] for r in rs)
                     for k in ("ms_median", "cpu_ms_median", "peak_train_mb", "peak_process_mb", "rss_ready_mb")}
        med[name]["runs"] = len(rs)
        for k in ("weights_mb", "activations_mb", "trained_state_mb"):
            if k in rs[0]:
                med[name][k] = rs[0][k]
    first = next(iter(by.values()))[0]
    print(f"shape {first['shape']} ctx {first['ctx']} batch {first['batch']}x{first['seq']} "
          f"threads {first['threads']}")
    print(f"{'config':26} {'runs':>4} {'ms/step':>9} {'cpu ms':>9} {'peak MB':>8} {'proc MB':>8} "
          f"{'weights':>8} {'activ.':>7} {'vs torch':>8} {'cpu vs torch':>12} {'RSS/torch':>9} {'vs full':>7} "
          f"{'cpu vs full':>11} {'peak/(w+a)':>10}")
    for name, m in med.items():
        torch = med.get("torch_c_attn" if "c_attn" in name else "torch_all")
        full = med.get("full_fp32")
        speed = f"{torch['ms_median'] / m['ms_median']:.2f}x" if torch and not name.startswith("torch") else ""
        cpu = f"{torch['cpu_ms_median'] / m['cpu_ms_median']:.2f}x" if torch and not name.startswith("torch") else ""
        rss = f"{m['peak_train_mb'] / torch['peak_train_mb']:.2f}" if torch and not name.startswith("torch") else ""
        vs_full = f"{full['ms_median'] / m['ms_median']:.2f}x" if full and name.startswith("lora") else ""
        cpu_full = f"{full['cpu_ms_median'] / m['cpu_ms_median']:.2f}x" if full and name.startswith("lora") else ""
        wa = ""
        if "activations_mb" in m and m.get("weights_mb"):
            wa = f"{m['peak_train_mb'] / (m['weights_mb'] + m['activations_mb']):.2f}"
        print(f"{name:26} {m['runs']:>4} {m['ms_median']:>9.0f} {m['cpu_ms_median']:>9.0f} "
              f"{m['peak_train_mb']:>8.0f} {m['peak_process_mb']:>8.0f} {m.get('weights_mb', 0):>8.0f} "
              f"{m.get('activations_mb', 0):>7.0f} {speed:>8} {cpu:>12} {rss:>9} {vs_full:>7} {cpu_full:>11} {wa:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
