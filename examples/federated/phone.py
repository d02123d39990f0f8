#!/usr/bin/env python3
"""One phone of the federated loop (docs/federated.md): each round it fetches the round (and
its secret), the base and the published adapter, filters its own shard of the text
(phonegpt.DataFilter) and fine-tunes the adapter on it, signs the adapter file with its
Ed25519 key and uploads both with the round's secret. It prints what the coordinator answered;
a refusal is reported with the coordinator's reason, never swallowed.

    python3 phone.py --url http://127.0.0.1:PORT --id phone0 --index 0 --shards 8 \
        --data tinyshakespeare.txt --key phone0.key [--behaviour honest]

--behaviour makes a phone misbehave the way field phones did (each still trains honestly):
  tampered    flips a byte of the adapter file after signing it
  other_base  trains on a base of its own (same geometry, other weights)
  nan         a client whose own training loop diverged at its last step and that writes the
              training record itself, as adapter format 1.2 allows (the loss "nan"), then
              signs what it sends: refused by the trajectory check, naming the step
  unknown_key signs with a key the coordinator never enrolled
  no_secret   drops the round's secret from the upload
  scaled      multiplies its B factors by 1,000 and signs that (a poisoned upload from a
              trusted key): refused by "update norm", which needs no data
  reversed    negates its B factors (the learned update reversed) and signs that: refused by
              the held-out split, as worse than the round's start

--dp-noise SIGMA (with --dp-clip C) privatizes every upload before signing (Adapter.privatize:
the round's update clipped to C, Gaussian noise of std SIGMA * C) and prints the (epsilon,
delta = 1e-5) the phone has spent over the rounds it took part in (phonegpt.privacy_epsilon).
"""
import argparse
import base64
import json
import os
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SHAPES, Refused, phonegpt, phone_shard, pooled_split, read_text, request  # noqa: E402

BEHAVIOURS = ["honest", "tampered", "other_base", "nan", "unknown_key", "no_secret", "scaled", "reversed"]
DP_DELTA = 1e-5


def xxh64(data, seed=0):
    """XXH64 (for the 'nan' client, which rewrites the adapter file's metadata and so must
    recompute its checksum, as a non-library client would)."""
    P1, P2, P3, P4, P5 = 11400714785074694791, 14029467366897019727, 1609587929392839161, 9650029242287828579, 2870177450012600261
    M = (1 << 64) - 1
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & M
    rnd = lambda acc, v: (rotl((acc + v * P2) & M, 31) * P1) & M
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = ((h ^ rnd(0, v[k])) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", data, i)[0]), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, i)[0] * P1) & M, 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5) & M, 11) * P1) & M
        i += 1
    h = ((h ^ (h >> 33)) * P2) & M
    h = ((h ^ (h >> 29)) * P3) & M
    return h ^ (h >> 32)


def nan_record(file_bytes):
    """The adapter file with its training record's last loss replaced by NaN, written as
    docs/formats.md §5 says (the string "nan", format 1.2), and the metadata checksum
    recomputed: what a client that keeps its own record does."""
    n = struct.unpack_from("<Q", file_bytes)[0]
    header = json.loads(file_bytes[8:8 + n])
    meta = header["__metadata__"]
    record = json.loads(meta["phonegpt.training"])
    record["losses"][-1] = "nan"
    meta["phonegpt.training"] = json.dumps(record, separators=(",", ":"))
    meta["phonegpt.adapter_format"] = "1.2"
    covered = ["phonegpt.adapter_format", "phonegpt.lora_config", "phonegpt.base", "phonegpt.training",
               "phonegpt.checksums"]
    meta["phonegpt.metadata_xxh64"] = "%016x" % xxh64(b"".join(k.encode() + b"\0" + meta[k].encode() + b"\0" for k in covered))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + file_bytes[8 + n:]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--index", type=int, required=True, help="which shard of the text is this phone's")
    p.add_argument("--shards", type=int, required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--key", required=True, help="this phone's Ed25519 key file")
    p.add_argument("--shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--behaviour", choices=BEHAVIOURS, default="honest")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--dp-noise", type=float, default=0.0, help="noise multiplier sigma (0: no differential privacy)")
    p.add_argument("--dp-clip", type=float, default=1.0, help="the update's L2 bound C")
    args = p.parse_args()
    shape = SHAPES[args.shape]
    say = lambda msg: print(f"[{args.id}] {msg}", flush=True)
    work = tempfile.mkdtemp(prefix=f"fed_{args.id}_")

    key = phonegpt.SigningKey.load(args.key)
    if args.behaviour == "unknown_key":
        key = phonegpt.SigningKey.generate()   # never enrolled with the coordinator
    train_text, _ = pooled_split(read_text(args.data))
    shard = phone_shard(train_text, args.index, args.shards)
    shard, report, _ = phonegpt.DataFilter().apply(shard)
    say(f"shard {args.index}/{args.shards}: {report.bytes_out} bytes after the data filter "
        f"({report.n_spans} spans removed)")

    base_path = os.path.join(work, "base.pgm")
    with open(base_path, "wb") as f:
        f.write(request(args.url + "/base"))
    base = phonegpt.Model.load(base_path)
    train_base = base
    if args.behaviour == "other_base":   # same geometry and tokenizer, other weights
        train_base = phonegpt.Model(base.config, seed=99)
        train_base.tokenizer = base.tokenizer
        train_base.allow_untrained_base()  # random weights on purpose (the library refuses them otherwise)
    tokens = base.tokenizer.encode(shard)

    last_round, dp_rounds = 0, 0
    while True:
        r = request(args.url + "/round")
        if r["done"]:
            say("the coordinator says the run is done")
            return
        if r["round"] == last_round:
            time.sleep(0.05)
            continue
        rnd, secret = r["round"], r["secret"]
        adapter_path = os.path.join(work, f"round{rnd}.pgadapter")
        with open(adapter_path, "wb") as f:
            f.write(request(args.url + "/adapter"))
        adapter = phonegpt.Adapter.load(adapter_path, base)
        start = phonegpt.Adapter.load(adapter_path, base)   # the round's start, for the update's delta
        if train_base is not base:   # the published factors, on this phone's own base
            own = phonegpt.Adapter.create(train_base, adapter.config)
            own.set_weights(adapter.get_weights())
            adapter = own
        steps = adapter.fit(train_base, tokens, shape["phone_steps"], batch_size=shape["phone_batch"],
                            lr_max=shape["lr"], lr_min=shape["lr"], warmup_steps=0, weight_decay=0.0,
                            seed=1000 * rnd + args.index, n_threads=args.threads)
        privacy = ""
        if args.dp_noise > 0:
            rep = adapter.privatize(start, clip_norm=args.dp_clip, noise_multiplier=args.dp_noise,
                                    seed=1000 * rnd + args.index)
            dp_rounds += 1
            eps, _ = phonegpt.privacy_epsilon(args.dp_noise, dp_rounds, DP_DELTA)
            privacy = (f"; DP: update norm {rep.delta_norm:.3f}{' clipped' if rep.clipped else ''} to "
                       f"{args.dp_clip}, noise std {rep.noise_stddev:.4f}, epsilon {eps:.1f} "
                       f"(delta {DP_DELTA}) after {dp_rounds} rounds")
        if args.behaviour in ("scaled", "reversed"):   # a poisoned update, signed with the phone's own key
            factor = 1000.0 if args.behaviour == "scaled" else -1.0
            adapter.set_weights([w * factor if "lora_B" in n else w
                                 for n, w in zip(adapter.tensor_names(), adapter.get_weights())])
        upload_path = os.path.join(work, f"upload{rnd}.pgadapter")
        adapter.save(upload_path)
        data = open(upload_path, "rb").read()
        signature = key.sign(adapter, data)
        if args.behaviour == "tampered":
            data = bytearray(data)
            data[len(data) - 9] ^= 0x01
            data = bytes(data)
        if args.behaviour == "nan":
            data = nan_record(data)
            with open(upload_path, "wb") as f:
                f.write(data)
            # The client signs what it sends: the file as it now reads, NaN and all.
            signature = open(key.sign_file(upload_path)).read()
        headers = {"Content-Type": "application/json"}
        if args.behaviour != "no_secret":
            headers["X-Round-Secret"] = secret
        body = json.dumps({"phone": args.id, "round": rnd, "adapter": base64.b64encode(data).decode(),
                           "signature": signature}).encode()
        try:
            answer = request(args.url + "/upload", body, headers, method="POST")
            say(f"round {rnd}: uploaded {len(steps)} steps (loss {steps[0].loss:.3f} -> {steps[-1].loss:.3f}"
                f"{privacy}): accepted")
        except Refused as e:
            say(f"round {rnd}: REFUSED (HTTP {e.status}): {e.body.get('reason')}")
        last_round = rnd


if __name__ == "__main__":
    main()
