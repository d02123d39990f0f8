#!/usr/bin/env python3
"""libphonegpt vs PyTorch on the same model, in the same run (issue 4).

Both sides train the same model (PhoneGPT preset by default: 6 layers, 4 heads, width 128,
context 128, 1.21M parameters) from the same initial weights on the same batches (batch 32,
sequence 128, fp32 on the CPU, AdamW with the same hyper-parameters, weight decay on the 2-D
linear weights, clipping at 1.0), with the same number of threads, alternating one step of
each so that machine noise hits both alike. It prints ms/step for each and the ratio, then
the whole-split evaluation time of the validation split (111,540 characters of Tiny
Shakespeare, both losses printed: they must agree) and sampling speed in characters per
second, and finally the overhead of driving a training step from Python (the binding)
against the same step driven from C (ctypes calls straight into libphonegpt.so).

PyTorch's configuration must be fixed before torch is imported, hence --torch-config:
  best     OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=<threads> (its BLAS pool stops fighting
           its OpenMP pool), torch.set_num_threads(<threads>): REFERENCE.md's best
  pool     OPENBLAS_NUM_THREADS=<threads> OMP_NUM_THREADS=<threads> OMP_WAIT_POLICY=PASSIVE:
           OpenBLAS's own pool on (with it off every matmul runs on one core: at the Ailoos LoRA
           shape PyTorch then used 1.05 cores and took 1.4-1.8x longer a step)
  passive  best + OMP_WAIT_POLICY=PASSIVE (OpenMP threads sleep instead of spinning when idle)
           [default: the fastest here. On this shared 2-core machine 'best' measured median
           3.0 s/step (min 0.46 s) and 'passive' 0.52 s/step in the same minutes: spinning
           threads collapse as soon as anything else runs, including libphonegpt's step in
           between]
  shipped  the environment as it is, torch.set_num_threads(<threads>)
  all      runs this script once per configuration (PyTorch only) and prints each.
torch needs OpenBLAS (Debian's libopenblas0-pthread, in scripts/setup.sh): with netlib's
reference BLAS its matmuls are about 10x slower and the comparison means nothing.

    /usr/bin/python3 benchmarks/compare_pytorch.py --steps 20
    PHONEGPT_PYDIR=build/bindings/python /usr/bin/python3 benchmarks/compare_pytorch.py

The phonegpt package is found through $PHONEGPT_PYDIR (the build tree's bindings/python) or
wherever it is installed; Tiny Shakespeare through --data, $PG_DATA_PATH or
../shared/data/tinyshakespeare.txt beside the checkout.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="phonegpt")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10, help="timed steps per side")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per side first")
    p.add_argument("--torch-config", choices=["best", "passive", "pool", "shipped", "all"], default="passive")
    p.add_argument("--data", default=None)
    p.add_argument("--sample-chars", type=int, default=256)
    p.add_argument("--overhead-steps", type=int, default=30,
                   help="steps per side for the Python-vs-C overhead (0 = skip)")
    p.add_argument("--skip", default="", help="comma list of parts to skip: train,eval,sample,overhead")
    p.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


ARGS = parse_args()

if ARGS.torch_config == "all":
    # each configuration needs its own process: the environment is read when torch loads
    for config in ("shipped", "best", "passive", "pool"):
        argv = [a for a in sys.argv[1:] if not a.startswith("--torch-config=")]
        if "--torch-config" in argv:
            i = argv.index("--torch-config")
            del argv[i:i + 2]
        print(f"==== PyTorch configuration: {config}", flush=True)
        subprocess.check_call([sys.executable, __file__, "--torch-config", config, "--torch-only",
                               "--skip", "overhead"] + argv)
    sys.exit(0)

if ARGS.torch_config in ("best", "passive"):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
if ARGS.torch_config == "pool":
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
if ARGS.torch_config in ("passive", "pool"):
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import ctypes  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

if os.environ.get("PHONEGPT_PYDIR"):
    sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
import phonegpt  # noqa: E402
from phonegpt.torch_gpt import from_phonegpt, whole_split_loss  # noqa: E402

torch.set_num_threads(ARGS.threads)
SKIP = set(filter(None, ARGS.skip.split(",")))


def data_path():
    for p in (ARGS.data, os.environ.get("PG_DATA_PATH"),
              os.path.join(HERE, "..", "..", "shared", "data", "tinyshakespeare.txt")):
        if p and os.path.isfile(p):
            return p
    sys.exit("Tiny Shakespeare not found: pass --data PATH")


def blas_name():
    """The BLAS library torch's process has loaded (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower()}
        return ", ".join(sorted(os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p) for p in libs)) or "?"
    except OSError:
        return "?"


def torch_adamw(twin, cfg):
    """AdamW as the library configures it: decay only on 2-D linear weights (not wte/wpe)."""
    decay = [p for n, p in twin.named_parameters() if p.dim() == 2 and n not in ("wte", "wpe")]
    rest = [p for n, p in twin.named_parameters() if not (p.dim() == 2 and n not in ("wte", "wpe"))]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": rest, "weight_decay": 0.0}],
                             lr=cfg.lr_max, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)


def torch_step(twin, opt, x, y, clip):
    opt.zero_grad(set_to_none=True)
    _, loss = twin(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(twin.parameters(), clip)
    opt.step()
    return float(loss)


def ms(seconds):
    return 1000.0 * seconds


def summary(times):
    return f"mean {ms(statistics.mean(times)):8.1f}  median {ms(statistics.median(times)):8.1f}  min {ms(min(times)):8.1f}"


def main():
    text = open(data_path(), encoding="utf-8").read()
    tok = phonegpt.Tokenizer.char(text)
    ids = tok.encode(text)
    n_train = phonegpt.split_index(len(ids), 0.9)
    train_ids, val_ids = ids[:n_train], ids[n_train:]
    config = phonegpt.ModelConfig.preset(ARGS.preset)
    config.vocab_size = tok.vocab_size
    config.padded_vocab_size = 0
    B, T, threads = ARGS.batch, ARGS.seq, ARGS.threads
    print(f"phonegpt {phonegpt.version()} ({phonegpt.simd_arch()}), torch {torch.__version__}; "
          f"{ARGS.preset}: {config.num_params:,} parameters; batch {B}, seq {T}, threads {threads}")
    print(f"PyTorch configuration '{ARGS.torch_config}': torch threads {torch.get_num_threads()}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}; BLAS: {blas_name()}")
    print("load average before: %.2f %.2f %.2f (2 cores)" % os.getloadavg(), flush=True)

    model = phonegpt.Model(config, seed=1337)
    model.tokenizer = tok
    twin = from_phonegpt(model, dtype=torch.float32)
    trainer = phonegpt.Trainer(model, batch_size=B, seq_len=T, schedule="constant", warmup_steps=0,
                               lr_max=1e-3, dropout=0.0, n_threads=threads)
    tcfg = trainer.config
    opt = torch_adamw(twin, tcfg)
    rng = np.random.default_rng(0)

    def batch():
        starts = rng.integers(0, len(train_ids) - T - 1, size=B)
        x = np.stack([train_ids[s:s + T] for s in starts])
        y = np.stack([train_ids[s + 1:s + T + 1] for s in starts])
        return x, y

    # ---- training step -----------------------------------------------------------------
    if "train" not in SKIP:
        t_torch, t_pg, losses = [], [], []
        for i in range(ARGS.warmup + ARGS.steps):
            x, y = batch()
            xt, yt = torch.from_numpy(x).long(), torch.from_numpy(y).long()
            t0 = time.perf_counter()
            lt = torch_step(twin, opt, xt, yt, tcfg.grad_clip)
            t1 = time.perf_counter()
            lp = None
            if not ARGS.torch_only:
                lp = trainer.step_batch(x, y).loss
            t2 = time.perf_counter()
            if i >= ARGS.warmup:
                t_torch.append(t1 - t0)
                t_pg.append(t2 - t1)
            losses.append((lt, lp))
        print(f"\ntraining step (ms), {ARGS.steps} steps each after {ARGS.warmup} warm-up, alternating:")
        print(f"  PyTorch     {summary(t_torch)}")
        if not ARGS.torch_only:
            print(f"  libphonegpt {summary(t_pg)}")
            print(f"  ratio PyTorch / libphonegpt (median): {statistics.median(t_torch) / statistics.median(t_pg):.2f}x")
            print(f"  same training: first loss torch {losses[0][0]:.5f} / phonegpt {losses[0][1]:.5f}, "
                  f"last {losses[-1][0]:.5f} / {losses[-1][1]:.5f}")

    # ---- whole-split evaluation --------------------------------------------------------
    if "eval" not in SKIP:
        twin_eval = from_phonegpt(model, dtype=torch.float32)  # the same weights on both sides
        twin_eval.eval()
        t0 = time.perf_counter()
        t_loss, t_scored, _ = whole_split_loss(twin_eval, val_ids, batch_size=16)
        t1 = time.perf_counter()
        print(f"\nwhole-split evaluation of {len(val_ids):,} validation characters ({t_scored:,} scored, "
              f"non-overlapping windows of {config.n_ctx}):")
        print(f"  PyTorch     {t1 - t0:7.2f} s   loss {t_loss:.6f}")
        if not ARGS.torch_only:
            t0 = time.perf_counter()
            r = model.evaluate(val_ids, batch_size=16, n_threads=threads)
            t1 = time.perf_counter()
            print(f"  libphonegpt {t1 - t0:7.2f} s   loss {r.mean_loss:.6f}  (relative difference "
                  f"{abs(r.mean_loss - t_loss) / t_loss:.1e})")

    # ---- sampling ----------------------------------------------------------------------
    if "sample" not in SKIP:
        n = ARGS.sample_chars
        prompt = tok.encode("\n")
        twin_s = from_phonegpt(model, dtype=torch.float32)
        twin_s.eval()
        gen = torch.Generator().manual_seed(1)
        t0 = time.perf_counter()
        with torch.no_grad():  # nanoGPT's generate: the whole window again for every token
            seq = torch.from_numpy(prompt).long()[None]
            for _ in range(n):
                logits, _ = twin_s(seq[:, -config.n_ctx:])
                nxt = torch.multinomial(torch.softmax(logits[:, -1], dim=-1), 1, generator=gen)
                seq = torch.cat([seq, nxt], dim=1)
        t1 = time.perf_counter()
        print(f"\nsampling {n} characters (temperature 1):")
        print(f"  PyTorch     {n / (t1 - t0):8.0f} chars/s  (nanoGPT-style, no KV cache)")
        if not ARGS.torch_only:
            t0 = time.perf_counter()
            out = model.generate(prompt, max_tokens=n, seed=1, n_threads=threads)
            t1 = time.perf_counter()
            print(f"  libphonegpt {len(out) / (t1 - t0):8.0f} chars/s  (KV cache; past n_ctx every token "
                  f"rebuilds the window, the same predictions as the PyTorch loop)")
            keep = config.n_ctx // 2
            t0 = time.perf_counter()
            out = model.generate(prompt, max_tokens=n, seed=1, n_threads=threads, slide_keep=keep)
            t1 = time.perf_counter()
            print(f"  libphonegpt {len(out) / (t1 - t0):8.0f} chars/s  (KV cache, slide_keep={keep}: "
                  f"a slide keeps {keep} tokens, the next {config.n_ctx - keep} are cached steps)")

    # ---- Python-driven step vs the same step from C ------------------------------------
    if "overhead" not in SKIP and not ARGS.torch_only and ARGS.overhead_steps > 0:
        overhead(config, train_ids, B, T, threads)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    trainer.close()
    model.close()


def overhead(config, train_ids, B, T, threads):
    """Steps driven by the binding (trainer.step() in a Python loop) against the same steps
    driven through ctypes straight into libphonegpt.so (a C call per step, no binding), same
    configuration and data, alternating blocks so that noise is shared."""
    libpath = os.environ.get("PHONEGPT_LIB") or os.path.join(os.path.dirname(phonegpt._phonegpt.__file__), "libphonegpt.so.0")
    if not os.path.exists(libpath):
        libpath = os.path.join(os.path.dirname(phonegpt._phonegpt.__file__), "..", "..", "..", "lib", "libphonegpt.so")
    lib = ctypes.CDLL(libpath)

    class StepResult(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_uint32), ("step", ctypes.c_int64), ("loss", ctypes.c_float),
                    ("lr", ctypes.c_float), ("grad_norm", ctypes.c_float), ("tokens", ctypes.c_int64)]

    class ModelConfig(ctypes.Structure):  # pg_model_config
        _fields_ = [("struct_size", ctypes.c_uint32)] + [(f, ctypes.c_int32) for f in (
            "n_layer", "n_head", "n_embd", "n_ctx", "vocab_size", "padded_vocab_size")] + [
            ("layernorm_eps", ctypes.c_float)]

    class TrainConfig(ctypes.Structure):  # pg_train_config
        _fields_ = [("struct_size", ctypes.c_uint32), ("batch_size", ctypes.c_int32),
                    ("seq_len", ctypes.c_int32), ("grad_accum_steps", ctypes.c_int32),
                    ("schedule", ctypes.c_int32), ("lr_max", ctypes.c_float), ("lr_min", ctypes.c_float),
                    ("warmup_steps", ctypes.c_int32), ("total_steps", ctypes.c_int64),
                    ("beta1", ctypes.c_float), ("beta2", ctypes.c_float), ("eps", ctypes.c_float),
                    ("weight_decay", ctypes.c_float), ("decay_embeddings", ctypes.c_int32),
                    ("grad_clip", ctypes.c_float), ("dropout", ctypes.c_float), ("seed", ctypes.c_uint64),
                    ("n_threads", ctypes.c_int32)]

    # A C model+trainer with the same configuration, through the raw C API.
    mc = ModelConfig()
    lib.pg_model_config_default(ctypes.byref(mc))
    for f in ("n_layer", "n_head", "n_embd", "n_ctx", "vocab_size", "padded_vocab_size", "layernorm_eps"):
        setattr(mc, f, getattr(config, f))
    cmodel = ctypes.c_void_p()
    assert lib.pg_model_create(ctypes.byref(mc), ctypes.c_uint64(1337), ctypes.byref(cmodel)) == 0
    tc = TrainConfig()
    lib.pg_train_config_default(ctypes.byref(tc))
    tc.batch_size, tc.seq_len, tc.n_threads = B, T, threads
    ctrainer = ctypes.c_void_p()
    assert lib.pg_trainer_create(cmodel, ctypes.byref(tc), ctypes.byref(ctrainer)) == 0
    ids = np.ascontiguousarray(train_ids, dtype=np.int32)
    assert lib.pg_trainer_set_data(ctrainer, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                                   ctypes.c_size_t(len(ids))) == 0
    ref = phonegpt.TrainConfig(batch_size=B, seq_len=T, n_threads=threads)
    res = StepResult()
    res.struct_size = ctypes.sizeof(StepResult)

    pmodel = phonegpt.Model(config, seed=1337)
    ptrainer = phonegpt.Trainer(pmodel, ref)
    ptrainer.set_data(train_ids)

    def c_step():
        assert lib.pg_trainer_step(ctrainer, ctypes.byref(res)) == 0
        return res.loss

    t_py, t_c = [], []
    c_step()
    ptrainer.step()
    def timed(fn):
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out

    for i in range(ARGS.overhead_steps):
        # ABBA order: which side goes first alternates, so neither always follows the other
        if i % 2 == 0:
            dp, lp = timed(lambda: ptrainer.step().loss)
            dc, lc = timed(c_step)
        else:
            dc, lc = timed(c_step)
            dp, lp = timed(lambda: ptrainer.step().loss)
        t_py.append(dp)
        t_c.append(dc)
        assert lp == lc, "the two trainers must take identical steps"
    # the binding's fixed cost per call, measured alone (dispatch, GIL release, result object)
    n_calls = 20000
    t0 = time.perf_counter()
    for _ in range(n_calls):
        ptrainer.lr_at(5)
    per_call = (time.perf_counter() - t0) / n_calls
    # an upper bound of what the binding adds to step(): the same call path (dispatch, handle
    # checks, GIL release and re-acquire) on a trainer without data, which the library rejects
    # at once, so the time is all binding plus raising the exception
    idle = phonegpt.Trainer(pmodel, ref)
    n_rejected = 5000
    t0 = time.perf_counter()
    for _ in range(n_rejected):
        try:
            idle.step()
        except phonegpt.Error:
            pass
    per_rejected = (time.perf_counter() - t0) / n_rejected
    idle.close()
    print(f"\nPython-driven step vs the same step from C ({ARGS.overhead_steps} steps each, identical losses):")
    print(f"  binding (trainer.step())  {summary(t_py)}")
    print(f"  C via ctypes              {summary(t_c)}")
    paired = statistics.median(p / c for p, c in zip(t_py, t_c))
    print(f"  overhead: median of paired ratios {100.0 * (paired - 1.0):+.2f}%, ratio of medians "
          f"{100.0 * (statistics.median(t_py) / statistics.median(t_c) - 1.0):+.2f}%, "
          f"of means {100.0 * (statistics.mean(t_py) / statistics.mean(t_c) - 1.0):+.2f}%; "
          f"a binding call alone costs {per_call * 1e6:.2f} us; the whole step() call path, "
          f"measured on calls the library rejects at once, at most {per_rejected * 1e6:.2f} us "
          f"= {100.0 * per_rejected / statistics.median(t_c):.4f}% of a step")
    ptrainer.close()
    pmodel.close()
    lib.pg_trainer_free(ctrainer)
    lib.pg_model_free(cmodel)


if __name__ == "__main__":
    main()
