#!/usr/bin/env python3
"""Runs the federated loop end to end on this machine (docs/federated.md): one coordinator
process and N phone processes on loopback. Enrols the phones' keys, starts everything, closes
each round once every phone has uploaded (its status comes from what the phones actually
sent), prints the coordinator's per-round figures and each phone's own report, and checks that
the average beats the base on the pooled validation split and that each misbehaving phone was
refused for its own reason.

    python3 examples/federated/run.py --data tinyshakespeare.txt --honest 3 --rounds 2 --shape small

The misbehaving phones (tampered, other_base, nan, unknown_key, no_secret, and the poisoned
scaled and reversed) join the honest ones unless --no-faults. --dp-noise SIGMA makes every phone
privatize its upload (docs/federated.md, "Differential privacy").
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import SHAPES, phonegpt, request  # noqa: E402

FAULTS = ["tampered", "other_base", "nan", "unknown_key", "no_secret", "scaled", "reversed"]
# The check (or coordinator rule) that must refuse each misbehaving phone.
EXPECTED_REFUSAL = {"tampered": "format: ", "other_base": "base weights: ", "nan": "trajectory finite: ",
                    "unknown_key": "signature: ", "no_secret": "no round secret", "scaled": "update norm: ",
                    "reversed": "held-out"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--honest", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--method", default="svd", choices=["fedavg_factors", "cat", "svd", "trimmed_mean", "median"])
    p.add_argument("--clip", default="median", choices=["none", "median"])
    p.add_argument("--heldout-tolerance", type=float, default=None, help="default: coordinator.py's measured one")
    p.add_argument("--dp-noise", type=float, default=0.0)
    p.add_argument("--dp-clip", type=float, default=1.0)
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--workdir", default=None)
    p.add_argument("--timeout", type=float, default=1800, help="seconds a round may take")
    args = p.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="federated_")
    os.makedirs(os.path.join(workdir, "trusted"), exist_ok=True)

    phones = [(f"phone{i}", "honest") for i in range(args.honest)]
    if not args.no_faults:
        phones += [(f"phone{args.honest + i}_{b}", b) for i, b in enumerate(FAULTS)]
    # Enrolment: every phone's key is made here and its public half given to the coordinator
    # (the unknown_key phone will sign with another key of its own).
    for name, _ in phones:
        key = phonegpt.SigningKey.generate()
        key.save(os.path.join(workdir, name + ".key"))
        with open(os.path.join(workdir, "trusted", name + ".pub"), "wb") as f:
            f.write(key.public_key)

    py = sys.executable
    coord = subprocess.Popen([py, os.path.join(HERE, "coordinator.py"), "--workdir", workdir, "--data", args.data,
                              "--rounds", str(args.rounds), "--shape", args.shape, "--method", args.method,
                              "--clip", args.clip]
                             + (["--heldout-tolerance", str(args.heldout_tolerance)] if args.heldout_tolerance else []),
                             stdout=subprocess.PIPE, text=True)
    line = coord.stdout.readline()
    if "listening on port" not in line:
        sys.exit(f"the coordinator did not start: {line!r}")
    url = "http://127.0.0.1:" + line.split()[-1]
    print(f"coordinator at {url}; {len(phones)} phones; work folder {workdir}", flush=True)
    procs = []
    for i, (name, behaviour) in enumerate(phones):
        log = open(os.path.join(workdir, name + ".log"), "w")
        procs.append((name, log, subprocess.Popen(
            [py, os.path.join(HERE, "phone.py"), "--url", url, "--id", name, "--index", str(i), "--shards",
             str(len(phones)), "--data", args.data, "--key", os.path.join(workdir, name + ".key"),
             "--shape", args.shape, "--behaviour", behaviour, "--dp-noise", str(args.dp_noise),
             "--dp-clip", str(args.dp_clip)], stdout=log, stderr=subprocess.STDOUT)))

    failures = []
    finished = False   # every round closed: the phones are told the run is done
    try:
        for rnd in range(1, args.rounds + 1):
            deadline = time.time() + args.timeout
            while True:   # every phone has sent this round's upload (as the coordinator saw it)
                status = request(url + "/status")["phones"]
                if all(status.get(n, {}).get("last_round") == rnd for n, _ in phones):
                    break
                dead = [n for n, _, pr in procs if pr.poll() is not None]
                if dead or time.time() > deadline:
                    raise SystemExit(f"round {rnd}: phones {dead or 'timed out'} did not upload")
                time.sleep(0.1)
            figures = request(url + "/close_round", b"", method="POST")
            print(coord.stdout.readline(), end="")
            for _ in range(len(figures["phones"]) + len(figures["refused"]) + 1):   # the lines close_round printed
                print(coord.stdout.readline(), end="")
            if not figures["average_val_loss"] < figures["base_val_loss"]:
                failures.append(f"round {rnd}: the average ({figures['average_val_loss']:.4f}) does not beat "
                                f"the base ({figures['base_val_loss']:.4f})")
            for name, behaviour in phones:
                why = figures["refused"].get(name)
                if behaviour == "honest" and name not in figures["phones"]:
                    failures.append(f"round {rnd}: honest {name} was refused: {why}")
                if behaviour != "honest" and (why is None or EXPECTED_REFUSAL[behaviour] not in why):
                    failures.append(f"round {rnd}: {name} should be refused by '{EXPECTED_REFUSAL[behaviour]}', got {why}")
        status = request(url + "/status")
        print("status (what each phone sent): " + json.dumps(
            {n: {k: s[k] for k in ("last_round", "last_step", "accepted", "refused", "verified_tokens")}
             for n, s in status["phones"].items()}, sort_keys=True), flush=True)
        results = request(url + "/results")
        with open(os.path.join(workdir, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        finished = True
    finally:
        for name, log, pr in procs:   # the phones stop once /round says the run is done
            try:
                pr.wait(timeout=120 if finished else 1)
            except subprocess.TimeoutExpired:
                pr.kill()
                failures.append(f"{name} did not stop after the last round")
            log.close()
        try:
            request(url + "/shutdown", b"", method="POST")
        except OSError:
            pass
        coord.wait(timeout=60)
    for name, _, _ in procs:   # each phone's own account, as it printed it
        with open(os.path.join(workdir, name + ".log")) as f:
            sys.stdout.write(f.read())
    for name, behaviour in phones:
        if behaviour != "honest":
            text = open(os.path.join(workdir, name + ".log")).read()
            if "REFUSED" not in text:
                failures.append(f"{name} did not report its refusal")
    if failures:
        sys.exit("FAILED:\n  " + "\n  ".join(failures))
    print("OK: every round's average beats the base; every misbehaving phone was refused for its reason")


if __name__ == "__main__":
    main()
