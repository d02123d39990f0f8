#!/usr/bin/env python3
"""Predicts, with llvm-mca, how fast each NEON GEMM variant's inner loop runs on each phone core.

For every variant of lib/kernels/neon/lane_variants.def it compiles benchmarks/mca/gemm_loops.cpp
for aarch64 (the library's compiler and optimisation flags, PG_MCA_MARKERS on), takes the loop
body between the LLVM-MCA-BEGIN/END markers plus the loop's own counter and back branch (the
instructions after END up to the branch), and runs llvm-mca on it with the scheduling model of
each core of lib/kernels/arm_cores.def. It reports predicted cycles per loop iteration and per
FMLA against the core's FMA-throughput bound, measured on the same model (a block of independent
FMLAs by element), so "100 %" means the loop issues FMLAs as fast as the model's FP pipes can.

It does the same for the FMLA .8h inference GEMM (lib/kernels/neon/fp16_gemm.cpp, compiled with
-march=armv8.2-a+fp16 as the library compiles it): cycles per loop iteration (one run of 16 k
steps: 128 FMLAs .8h, 32 loads, the FCVTL/FADD fold into fp32) against the fp16 FMA bound of
each model, and its multiply-adds per cycle against the fp32 variant dispatch gives the core.

It does the same for the int8 tiles of the quantized-base products (kernels/quant_gemm.hpp):
one block of 32 k of the 4 x 8 tile (1024 int8 multiply-adds: 32 SMMLA on i8mm, 64 SDOT by
element on dotprod, SMULL/SMULL2/ADDP/SADALP on ARMv8.0, then the fp32 fold of the block's
scales), as lib/kernels/neon/int8_tile_i8mm.cpp, int8_tile_dotprod.cpp and int8_tile_neon.cpp are
compiled, in multiply-adds per
cycle against the fp32 variant dispatch gives the core, and SDOT's own bound on each model.

  --markdown   the tables for docs/phone.md
  --check      exit 1 unless, for every core, arm_cores.def names the variant llvm-mca predicts
               fastest (cycles per FMLA; variants within 1 % count as a tie, won by the earlier
               one in lane_variants.def), and unless the FMLA .8h loop, which dispatch takes
               wherever the CPU has FP16 arithmetic, is predicted to do more multiply-adds per
               cycle than that fp32 variant. It also prints the SDOT int8 block's speed-up, which
               it does not require (llvm-mca predicts it slower than fp32 on the in-order cores,
               docs/phone.md). The ctest mca_variant_choice runs this.
  --json       everything as one JSON object

Usage: scripts/mca_gemm_variants.py [--cxx aarch64-linux-gnu-g++] [--llvm-mca llvm-mca-19]
                                    [--markdown | --check | --json]
"""
import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ITERATIONS = 400
TIE = 0.01  # variants within 1 % of the fastest are a tie


def read_def(path, macro):
    """The argument lists of the macro lines of a .def file (plain `MACRO(a, "b", ...)` lines)."""
    rows = []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*" + macro + r"\((.*)\)\s*$", line)
            if m:
                rows.append([a.strip().strip('"') for a in m.group(1).split(",")])
    return rows


def variants():
    return [{"id": int(r[0]), "name": r[1], "mr": int(r[2]), "nv": int(r[3]), "ku": int(r[4])}
            for r in read_def(os.path.join(ROOT, "lib/kernels/neon/lane_variants.def"),
                              "PG_LANE_VARIANT")]


def cores():
    return [{"name": r[0], "implementer": int(r[1], 16), "part": int(r[2], 16), "model": r[3],
             "variant": r[4]}
            for r in read_def(os.path.join(ROOT, "lib/kernels/arm_cores.def"), "PG_ARM_CORE")]


def compile_loops(cxx, source="benchmarks/mca/gemm_loops.cpp", extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "gemm_loops.s")
        # The flags the library's Release build gives lib/kernels (lib/CMakeLists.txt), plus the
        # file's own (kernels.cmake: -march=armv8.2-a+fp16 for the fp16 GEMM).
        cmd = [cxx, "-O3", "-DNDEBUG", "-std=c++17", "-fPIC", "-DPG_MCA_MARKERS", *extra,
               "-I" + os.path.join(ROOT, "lib"), "-I" + os.path.join(ROOT, "include"),
               "-S", os.path.join(ROOT, source), "-o", out]
        subprocess.run(cmd, check=True)
        with open(out) as f:
            return f.read()


FP16_SOURCE = "lib/kernels/neon/fp16_gemm.cpp"
FP16_REGION = 100  # its LLVM-MCA region id (pg_mca_fp16_variant)
FP16_LANES, FP32_LANES = 8, 4
# The int8 tiles: (name, source, flags, LLVM-MCA region id); a region is one block of the 4 x 8
# tile, 4 x 8 x 32 multiply-adds (32 SMMLA, 64 SDOT).
INT8_TILES = [("arm64+i8mm", "lib/kernels/neon/int8_tile_i8mm.cpp", ["-march=armv8.2-a+i8mm"], 103),
              ("arm64+dotprod", "lib/kernels/neon/int8_tile_dotprod.cpp", ["-march=armv8.2-a+dotprod"], 101),
              ("arm64+neon", "lib/kernels/neon/int8_tile_neon.cpp", [], 102)]
INT8_BLOCK_MACS = 4 * 8 * 32


BRANCH = re.compile(r"^b(\.)?(ne|eq|lt|le|gt|ge|hi|ls|lo|hs|cc|cs|mi|pl)\b|^cbn?z\b|^tbn?z\b")


def extract_regions(asm):
    """{variant id: [instruction lines]}: the marked k step plus the loop's tail to its branch."""
    regions = {}
    lines = asm.split("\n")
    i = 0
    while i < len(lines):
        m = re.search(r"LLVM-MCA-BEGIN variant(\d+)", lines[i])
        if not m:
            i += 1
            continue
        vid, body, ended = int(m.group(1)), [], False
        i += 1
        while i < len(lines):
            line = lines[i].split("//")[0].strip()
            if "LLVM-MCA-END" in lines[i]:
                ended = True
            elif line and not line.startswith(("#", ".")) and not line.endswith(":"):
                body.append(line)
                if ended and BRANCH.match(line):
                    break
            i += 1
        if vid in regions:
            sys.exit(f"mca_gemm_variants: variant {vid} has two marked loops (the compiler "
                     "duplicated it); the measurement would be ambiguous")
        regions[vid] = body
    return regions


# Cached: several cores share one scheduling model (arm_cores.def's fourth column), and the
# same loop on the same model gives the same cycles.
@functools.lru_cache(maxsize=None)
def run_mca(llvm_mca, model, text):
    # +fullfp16, +dotprod, +i8mm: FMLA .8h, SDOT and SMMLA assemble on every model (a model without
    # i8mm, most of these cores, times SMMLA as its nearest instruction class).
    out = subprocess.run([llvm_mca, "-mtriple=aarch64", "-mcpu=" + model, "-mattr=+fullfp16,+dotprod,+i8mm",
                          f"-iterations={ITERATIONS}"], input=text, capture_output=True,
                         text=True, check=True).stdout
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    resource = re.search(r"Resources:\n\[[\d.]+\]\s+-\s+(\S+)", out)
    return cycles / ITERATIONS, resource.group(1) if resource else "?"


def model_family(resource):
    """The scheduling model behind an -mcpu, from its first resource's name (A57UnitB: A57)."""
    m = re.match(r"(.+?)(Unit|Pipe)", resource) or re.match(r"([A-Z]+)", resource)
    return m.group(1) if m else resource


def model_family_of(llvm_mca, cpu):
    """model_family of an -mcpu, or "not an LLVM -mcpu" (Qualcomm's Kryo names, for one)."""
    try:
        return model_family(run_mca(llvm_mca, cpu, "fmla v0.4s, v1.4s, v2.4s\n")[1])
    except subprocess.CalledProcessError:
        return "not an LLVM -mcpu"


def fma_bound(llvm_mca, model):
    """Cycles per FMLA by element when nothing else limits it: the model's FMA throughput."""
    block = "".join(f"fmla v{r}.4s, v30.4s, v31.s[{r % 4}]\n" for r in range(24))
    cycles, _ = run_mca(llvm_mca, model, block)
    return cycles / 24


def fp16_fma_bound(llvm_mca, model):
    """Cycles per FMLA .8h by element when nothing else limits it (Vm must be v0-v15)."""
    dests = list(range(16, 32)) + list(range(8))
    block = "".join(f"fmla v{d}.8h, v14.8h, v15.h[{i % 8}]\n" for i, d in enumerate(dests))
    cycles, _ = run_mca(llvm_mca, model, block)
    return cycles / len(dests)


def cycles_if_modelled(llvm_mca, model, text):
    """run_mca's cycles, or None where the model has no scheduling data for an instruction of
    the loop (LLVM 19's oryon-1 has none for SDOT or SMMLA)."""
    try:
        return run_mca(llvm_mca, model, text)[0]
    except subprocess.CalledProcessError:
        return None


def sdot_bound(llvm_mca, model):
    """Cycles per SDOT by element when nothing else limits it (None: not in the model)."""
    block = "".join(f"sdot v{r}.4s, v30.16b, v31.4b[{r % 4}]\n" for r in range(24))
    cycles = cycles_if_modelled(llvm_mca, model, block)
    return cycles / 24 if cycles else None


def int8_bodies(cxx):
    bodies = {}
    for name, source, flags, region in INT8_TILES:
        body = extract_regions(compile_loops(cxx, source, flags)).get(region)
        if not body:
            sys.exit(f"mca_gemm_variants: no marked loop in {source}")
        bodies[name] = body
    if sum(1 for l in bodies["arm64+dotprod"] if l.startswith("sdot")) != 64:
        sys.exit("mca_gemm_variants: the dotprod block should hold 64 SDOT (4 rows x 2 vectors x 8 groups)")
    if sum(1 for l in bodies["arm64+i8mm"] if l.startswith("smmla")) != 32:
        sys.exit("mca_gemm_variants: the i8mm block should hold 32 SMMLA (2 x 4 pair tiles x 4 groups)")
    return bodies


def measure(cxx, llvm_mca):
    vs = variants()
    regions = extract_regions(compile_loops(cxx))
    fp16_body = extract_regions(compile_loops(cxx, FP16_SOURCE, ["-march=armv8.2-a+fp16"])).get(FP16_REGION)
    if not fp16_body:
        sys.exit(f"mca_gemm_variants: no marked loop in {FP16_SOURCE}")
    int8 = int8_bodies(cxx)
    fp16 = {"name": "arm64+fp16+fmla-8h", "instructions": len(fp16_body),
            "fmlas": sum(1 for l in fp16_body if l.startswith("fmla") and ".8h" in l)}
    if fp16["fmlas"] != 128:
        sys.exit(f"mca_gemm_variants: the fp16 loop has {fp16['fmlas']} FMLAs .8h, expected 8 x 16")
    for v in vs:
        if v["id"] not in regions:
            sys.exit(f"mca_gemm_variants: no marked loop for variant {v['id']} ({v['name']})")
        v["instructions"] = len(regions[v["id"]])
        v["fmlas"] = sum(1 for l in regions[v["id"]] if l.startswith("fmla"))
        if v["fmlas"] != v["mr"] * v["nv"] * v["ku"]:
            sys.exit(f"mca_gemm_variants: variant {v['name']}: {v['fmlas']} FMLAs in the loop, "
                     f"expected MR x NV x KU = {v['mr'] * v['nv'] * v['ku']}")
    results = []
    for core in cores():
        row = dict(core)
        row["own_model"] = model_family_of(llvm_mca, core["name"])
        row["used_model"] = model_family_of(llvm_mca, core["model"])
        row["bound"] = fma_bound(llvm_mca, core["model"])
        row["variants"] = []
        for v in vs:
            cycles, _ = run_mca(llvm_mca, core["model"], "\n".join(regions[v["id"]]) + "\n")
            row["variants"].append({"name": v["name"], "cycles_per_iteration": cycles,
                                    "cycles_per_fmla": cycles / v["fmlas"],
                                    "fraction_of_bound": row["bound"] * v["fmlas"] / cycles})
        fastest = min(x["cycles_per_fmla"] for x in row["variants"])
        row["best"] = next(x["name"] for x in row["variants"]
                           if x["cycles_per_fmla"] <= fastest * (1 + TIE))
        cycles, _ = run_mca(llvm_mca, core["model"], "\n".join(fp16_body) + "\n")
        chosen = next(x for x in row["variants"] if x["name"] == core["variant"])
        row["fp16"] = {"bound": fp16_fma_bound(llvm_mca, core["model"]), "cycles_per_iteration": cycles}
        row["fp16"]["fraction_of_bound"] = row["fp16"]["bound"] * fp16["fmlas"] / cycles
        row["fp16"]["macs_per_cycle"] = FP16_LANES * fp16["fmlas"] / cycles
        row["fp16"]["fp32_macs_per_cycle"] = FP32_LANES / chosen["cycles_per_fmla"]
        row["fp16"]["speedup"] = row["fp16"]["macs_per_cycle"] / row["fp16"]["fp32_macs_per_cycle"]
        row["int8"] = {"sdot_bound": sdot_bound(llvm_mca, core["model"]), "tiles": {}}
        for name, body in int8.items():
            cycles = cycles_if_modelled(llvm_mca, core["model"], "\n".join(body) + "\n")
            row["int8"]["tiles"][name] = None if cycles is None else {
                "cycles_per_block": cycles, "macs_per_cycle": INT8_BLOCK_MACS / cycles,
                "speedup": INT8_BLOCK_MACS / cycles / row["fp16"]["fp32_macs_per_cycle"]}
        results.append(row)
    return vs, fp16, results


def markdown(vs, results):
    short = {v["name"]: f"{v['mr']}x{v['nv'] * 4} k{v['ku']}" for v in vs}
    head = ("| core | MIDR part | llvm-mca model | FMA bound (cycles/FMLA) | " +
            " | ".join(f"{short[v['name']]}: cycles/iter (% of bound)" for v in vs) +
            " | best | dispatch |")
    lines = [head, "|" + "---|" * (6 + len(vs))]
    for r in results:
        model = f"`{r['model']}` ({r['used_model']})"
        if r["model"] != r["name"]:
            model += f"; `{r['name']}` itself: {r['own_model']}"
        cells = [f"{x['cycles_per_iteration']:.2f} ({100 * x['fraction_of_bound']:.0f} %)"
                 for x in r["variants"]]
        lines.append(f"| {r['name']} | 0x{r['implementer']:02x} 0x{r['part']:03x} | {model} | "
                     f"{r['bound']:.3f} | " + " | ".join(cells) +
                     f" | {short[r['best']]} | {short.get(r['variant'], r['variant'])} |")
    legend = ", ".join(f"{short[v['name']]} = `{v['name']}` ({v['instructions']} instructions, "
                       f"{v['fmlas']} FMLAs per iteration)" for v in vs)
    return "\n".join(lines) + "\n\nVariants: " + legend + ".\n"


def fp16_markdown(fp16, results):
    lines = ["| core | llvm-mca model | fp16 FMA bound (cycles/FMLA .8h) | FMLA .8h loop: cycles/iter "
             "(% of bound) | fp16 MACs/cycle | fp32 MACs/cycle (dispatched variant) | speed-up |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        f = r["fp16"]
        lines.append(f"| {r['name']} | `{r['model']}` | {f['bound']:.3f} | {f['cycles_per_iteration']:.2f} "
                     f"({100 * f['fraction_of_bound']:.0f} %) | {f['macs_per_cycle']:.1f} | "
                     f"{f['fp32_macs_per_cycle']:.1f} | {f['speedup']:.2f}x |")
    return ("\n".join(lines) + f"\n\nFMLA .8h loop: `{fp16['name']}`, {fp16['instructions']} "
            f"instructions per iteration (16 k steps of an 8 x 8 tile: {fp16['fmlas']} FMLAs .8h, "
            "32 loads, 16 FCVTL and 16 FADD folding the fp16 partial sums into fp32).\n")


def int8_markdown(results):
    lines = ["| core | llvm-mca model | SDOT bound (int8 MACs/cycle) | block cycles (int8 MACs/cycle): SMMLA | "
             "SDOT | ARMv8.0 SMULL | fp32 MACs/cycle (dispatched variant) | speed-up: SMMLA | SDOT | SMULL |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        i = r["int8"]
        m, d, n = (i["tiles"][t] for t in ("arm64+i8mm", "arm64+dotprod", "arm64+neon"))
        bound = f"{16 / i['sdot_bound']:.1f}" if i["sdot_bound"] else "not modelled"
        lines.append(f"| {r['name']} | `{r['model']}` | {bound} | " +
                     " | ".join(f"{t['cycles_per_block']:.1f} ({t['macs_per_cycle']:.1f})" if t else "not modelled"
                                for t in (m, d, n)) +
                     f" | {r['fp16']['fp32_macs_per_cycle']:.1f} | " +
                     " | ".join(f"{t['speedup']:.2f}x" if t else "-" for t in (m, d, n)) + " |")
    return ("\n".join(lines) + "\n\nOne block: 32 k of the 4 x 8 int8 tile, 1024 multiply-adds, and the fp32 fold "
            "of its sums (4 x 8 conversions, scale products and FMLAs).\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cxx", default="aarch64-linux-gnu-g++")
    ap.add_argument("--llvm-mca", default="llvm-mca-19")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--markdown", action="store_true")
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--json", action="store_true")
    args = ap.parse_args()
    vs, fp16, results = measure(args.cxx, args.llvm_mca)
    if args.json:
        print(json.dumps({"variants": vs, "fp16": fp16, "cores": results}, indent=1))
        return 0
    if args.check:
        wrong = [r for r in results if r["variant"] != r["best"]]
        slower = [r for r in results if r["fp16"]["speedup"] <= 1.0]
        sdot = {r["name"]: r["int8"]["tiles"]["arm64+dotprod"] for r in results}
        for r in results:
            print(f"{r['name']:16s} model {r['model']:12s} dispatch {r['variant']:30s} "
                  f"llvm-mca best {r['best']}" + ("   <-- MISMATCH" if r in wrong else "") +
                  f"; fmla-8h {r['fp16']['speedup']:.2f}x" + ("   <-- SLOWER" if r in slower else "") +
                  (f"; sdot {sdot[r['name']]['speedup']:.2f}x" if sdot[r["name"]] else "; sdot not modelled"))
        if wrong:
            print(f"mca_gemm_variants: {len(wrong)} core(s) of lib/kernels/arm_cores.def get a "
                  "variant llvm-mca predicts slower than another built one")
        if slower:
            print(f"mca_gemm_variants: on {len(slower)} core(s) the FMLA .8h GEMM dispatch takes "
                  "is predicted no faster than the fp32 variant")
        if wrong or slower:
            return 1
        print(f"mca_gemm_variants: OK ({len(results)} cores, {len(vs)} variants, FMLA .8h faster on all)")
        return 0
    print(markdown(vs, results))
    print(fp16_markdown(fp16, results))
    print(int8_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
