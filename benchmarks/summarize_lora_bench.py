#!/usr/bin/env python3
"""Summarises benchmarks/run_lora_bench.sh's JSON lines: per configuration the median over rounds
of each process's median ms/step and CPU ms/step, and its peaks; then the ratios against the
PyTorch twin of the same targets and layers (bf16 arithmetic, lora_*_bf16x: the twin under bf16
autocast, torch_*_bf16, when it ran, and a line more against the fp32 twin) and against
libphonegpt's full fine-tuning, all from the same run (the machine is shared: absolute times
move, ratios of interleaved runs much less). "rounds vs torch" is each round's own ratio (ours and the twin's runs of that round),
lowest, median and highest.

    /usr/bin/python3 benchmarks/summarize_lora_bench.py bench-results/lora_ailoos_0.jsonl
"""
import json
import statistics
import sys


def fp32_torch_peer(name):
    """The fp32 twin of a configuration: lora_all_top4_fp16 -> torch_all_top4."""
    if name.startswith("torch"):
        return None
    if not name.startswith("lora_"):
        return "torch_all"
    parts = [p for p in name[len("lora_"):].split("_")
             if p not in ("fp16", "fp32", "bf16", "bf16x", "recompute")]
    return "torch_" + "_".join(parts)


def torch_peer(name, present):
    """The twin a configuration is compared with: bf16 arithmetic (lora_*_bf16x) against the twin
    under PyTorch's bf16 autocast (torch_*_bf16) when that ran, every other one (and bf16x
    without it) against the fp32 twin."""
    peer = fp32_torch_peer(name)
    if peer and name.endswith("_bf16x") and peer + "_bf16" in present:
        return peer + "_bf16"
    return peer


def main(path):
    by, rounds = {}, {}
    for line in open(path):
        if line.strip():
            rec = json.loads(line)
            by.setdefault(rec["config"], []).append(rec["result"])
            rounds.setdefault(rec["round"], {})[rec["config"]] = rec["result"]
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
          f"{'weights':>8} {'activ.':>7} {'vs torch':>8} {'rounds vs torch':>18} {'cpu vs torch':>12} "
          f"{'RSS/torch':>9} {'vs full':>7} {'cpu vs full':>11} {'peak/(w+a)':>10}")
    also_fp32 = []  # (name, ratio to the fp32 twin) of those compared with an autocast twin
    for name, m in med.items():
        peer = torch_peer(name, med)
        torch = med.get(peer) if peer else None
        if peer and peer != fp32_torch_peer(name) and fp32_torch_peer(name) in med:
            also_fp32.append((name, peer, med[fp32_torch_peer(name)]["ms_median"] / m["ms_median"]))
        full = med.get("full_fp32")
        speed = f"{torch['ms_median'] / m['ms_median']:.2f}x" if torch else ""
        per_round = sorted(r[peer]["ms_median"] / r[name]["ms_median"]
                           for r in rounds.values() if peer in r and name in r)
        spread = (f"{per_round[0]:.2f}/{statistics.median(per_round):.2f}/{per_round[-1]:.2f}"
                  if per_round else "")
        cpu = f"{torch['cpu_ms_median'] / m['cpu_ms_median']:.2f}x" if torch else ""
        rss = f"{m['peak_train_mb'] / torch['peak_train_mb']:.2f}" if torch else ""
        vs_full = f"{full['ms_median'] / m['ms_median']:.2f}x" if full and name.startswith("lora") else ""
        cpu_full = f"{full['cpu_ms_median'] / m['cpu_ms_median']:.2f}x" if full and name.startswith("lora") else ""
        wa = ""
        if "activations_mb" in m and m.get("weights_mb"):
            wa = f"{m['peak_train_mb'] / (m['weights_mb'] + m['activations_mb']):.2f}"
        print(f"{name:26} {m['runs']:>4} {m['ms_median']:>9.0f} {m['cpu_ms_median']:>9.0f} "
              f"{m['peak_train_mb']:>8.0f} {m['peak_process_mb']:>8.0f} {m.get('weights_mb', 0):>8.0f} "
              f"{m.get('activations_mb', 0):>7.0f} {speed:>8} {spread:>18} {cpu:>12} {rss:>9} {vs_full:>7} "
              f"{cpu_full:>11} {wa:>10}")
    for name, peer, ratio in also_fp32:
        print(f"{name}: vs torch {ratio:.2f}x against the fp32 twin {fp32_torch_peer(name)} "
              f"(above: against {peer}, PyTorch's bf16 autocast)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
