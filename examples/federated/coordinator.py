#!/usr/bin/env python3
"""The coordinator of the federated loop (docs/federated.md): serves the base and the current
adapter over loopback HTTP, validates every upload (phonegpt.Validator: format, geometry, base,
signature against the enrolled keys, loss trajectory, update norm, held-out evaluation) after
checking the round's secret, refuses an upload worse than the round's starting adapter on the
held-out split by more than the measured noise, compares the round's update norms when it
closes (Validator.compare_round), averages the accepted adapters, publishes the average, and
prints per round the pooled validation loss of the base, of the adapter the round started from,
of each phone and of the average, with the accepted and refused counts and the reasons.

    python3 coordinator.py --workdir W --data tinyshakespeare.txt --phones 8 --rounds 2 --shape small

Endpoints: GET /round (the round, its secret, whether the run is done), GET /base and
GET /adapter (files), POST /upload (JSON: phone, round, adapter and signature in base64;
header X-Round-Secret), GET /status (what each phone actually sent), POST /close_round,
GET /results, POST /shutdown. Enrolled public keys: W/trusted/NAME.pub (32 bytes each), one per
phone: an upload is credited to the phone it names only when that phone's key signed it.
"""
import argparse
import base64
import glob
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SHAPES, phonegpt, pooled_split, read_text  # noqa: E402


# Above the noise of honest phones (small shape, docs/federated.md: at worst 0.008 nats worse
# than the round's start; the reversed update is 0.029-0.036 worse): more is refused.
HELDOUT_TOLERANCE = 0.02


class Coordinator:
    def __init__(self, args):
        self.args, self.shape = args, SHAPES[args.shape]
        self.lock = threading.Lock()
        self.workdir = args.workdir
        text = read_text(args.data)
        train_text, val_text = pooled_split(text)
        self.base_path = os.path.join(self.workdir, "base.pgm")
        self.base = self.make_base(text, train_text)
        tok = self.base.tokenizer
        self.val = tok.encode(val_text)[: self.shape["heldout_tokens"]]
        # Enrolment: phone name -> its public key (the file's name is the phone's).
        self.enrolled = {os.path.basename(p)[: -len(".pub")]: open(p, "rb").read()
                         for p in sorted(glob.glob(os.path.join(self.workdir, "trusted", "*.pub")))}
        self.keys = phonegpt.TrustedKeys(list(self.enrolled.values()))
        self.base_val_loss = self.base.evaluate(self.val).mean_loss
        # Round 1's adapter: fresh (B = 0, so its loss is the base's), the same A for every phone.
        self.adapter = phonegpt.Adapter.create(self.base, rank=self.shape["lora_rank"], target_modules=15, init_seed=7)
        self.start_val_loss = self.base_val_loss
        self.round = 1
        self.open_round()
        self.status = {}    # phone -> what it actually sent
        self.results = {"base_val_loss": self.base_val_loss, "rounds": []}
        self.done = False

    def make_base(self, text, train_text):
        """The base: pretrained here on the pooled train split (a base must have been trained;
        a random one is what the field bug shipped)."""
        if os.path.exists(self.base_path):
            return phonegpt.Model.load(self.base_path)
        tok = phonegpt.Tokenizer.char(text)
        if self.shape["model"] is None:
            config = phonegpt.ModelConfig.preset("phonegpt")
        else:
            config = phonegpt.ModelConfig.preset("tiny").replace(**self.shape["model"])
        config.vocab_size, config.padded_vocab_size = tok.vocab_size, 0
        base = phonegpt.Model(config, seed=1)
        base.tokenizer = tok
        with phonegpt.Trainer(base, batch_size=self.shape["pretrain_batch"], lr_max=3e-3, lr_min=3e-4,
                              warmup_steps=20, total_steps=self.shape["pretrain_steps"], seed=1) as t:
            t.set_data(tok.encode(train_text))
            t.train(self.shape["pretrain_steps"])
        base.save(self.base_path)
        return base

    def open_round(self):
        """Publishes the current adapter for the round, with a fresh secret, and a validator
        whose reference is the base plus that adapter on the pooled validation split."""
        self.secret = secrets.token_hex(16)
        self.adapter_path = os.path.join(self.workdir, f"published_round{self.round}.pgadapter")
        self.adapter.save(self.adapter_path)
        # A phone's batches are small (its first loss is one batch's), so the start and divergence
        # tolerances allow for batch noise. The held-out split is always on; an upload may be worse
        # than the round's start by at most heldout_tolerance (the measured spread of honest
        # phones, docs/federated.md), checked here against the start since the library's check
        # compares with the base.
        tol = self.args.heldout_tolerance
        self.validator = phonegpt.Validator(self.base, trusted_keys=self.keys, start_tolerance=0.5,
                                            divergence_tolerance=0.2, heldout_tolerance=tol)
        self.validator.set_reference(self.val, resumed_from=self.adapter)
        self.validator.set_heldout(self.val)
        self.accepted, self.refused, self.refused_loss = {}, {}, {}
        self.reports, self.reports_compared = {}, {}

    # ---- requests ----

    def upload(self, body, secret):
        """(HTTP status, answer) for an upload. The phone's claims are recorded as it sent them."""
        try:
            up = json.loads(body)
            phone, claimed_round = str(up["phone"]), int(up["round"])
        except (ValueError, KeyError, TypeError) as e:
            return 400, {"accepted": False, "reason": f"the upload is not the JSON this coordinator reads ({e})"}
        s = self.status.setdefault(phone, {"last_round": None, "last_step": None, "last_upload": None,
                                           "accepted": 0, "refused": 0, "last_refusal": None,
                                           "verified_tokens": {}})
        s["last_upload"] = time.time()
        s["last_round"] = claimed_round
        if secret is None:
            return self.refuse(phone, s, 403, "round secret: the upload carries no round secret (header X-Round-Secret): "
                               "fetch GET /round and send its secret with the upload")
        if not secrets.compare_digest(secret, self.secret) or claimed_round != self.round:
            return self.refuse(phone, s, 403, f"round secret: the round secret is not round {self.round}'s "
                               f"(the upload says round {claimed_round}): fetch GET /round again")
        data = base64.b64decode(up.get("adapter", ""))
        sig = up.get("signature")
        report = self.validator.validate(data, sig)
        self.reports[phone] = report   # compared with the round's others when it closes
        # From the adapter it sent, not from a schedule (None when the file did not even read).
        s["last_step"] = report.summary.steps if report.checks[0]["outcome"] == "passed" else None
        if not report.accepted:
            return self.refuse(phone, s, 422, report.first_failure, report)
        worse = report.summary.heldout_adapter_loss - self.start_val_loss
        if worse > self.args.heldout_tolerance:
            return self.refuse(phone, s, 422, f"held-out vs start: val loss {report.summary.heldout_adapter_loss:.4f} is "
                               f"{worse:.4f} worse than the round's start ({self.start_val_loss:.4f}; tolerance "
                               f"{self.args.heldout_tolerance})", report)
        # A trusted signature is not enough: it must be the named phone's own key, or one phone
        # could upload (and be credited work) as another.
        own = self.enrolled.get(phone)
        own_id = key_id(own) if own is not None else None
        if report.key_id != own_id:
            enrolled = f"is enrolled with key {own_id}" if own_id else "is not enrolled"
            return self.refuse(phone, s, 422, f"signer: the upload is signed by key {report.key_id}, "
                               f"but phone {phone} {enrolled}", report)
        # The work of this round: the tokens its record adds to the published adapter's. None
        # means it did not train from this round's adapter (last round's upload sent again).
        fresh = report.summary.tokens - self.published_tokens()
        if fresh <= 0:
            return self.refuse(phone, s, 422, f"stale: the upload records {report.summary.tokens} tokens, no more "
                               f"than the {self.published_tokens()} of round {self.round}'s published adapter: "
                               f"it was not trained from this round's adapter", report)
        self.accepted[phone] = (report.adapter(), report.summary)
        s["accepted"] += 1
        s["verified_tokens"][str(self.round)] = fresh
        return 200, {"accepted": True, "round": self.round, "report": json.loads(report.json())}

    def published_tokens(self):
        return self.adapter.training_record()["tokens"]

    def refuse(self, phone, s, status, reason, report=None):
        s["refused"] += 1
        s["last_refusal"] = reason
        self.refused[phone] = reason
        loss = report.summary.heldout_adapter_loss if report is not None else float("nan")
        self.refused_loss[phone] = None if loss != loss else loss   # NaN: not measured
        answer = {"accepted": False, "round": self.round, "reason": reason}
        if report is not None:
            answer["report"] = json.loads(report.json())
        return status, answer

    def close_round(self):
        """Averages the accepted uploads (weights: tokens each trained this round), publishes the
        result and opens the next round; prints the round's figures."""
        # Every upload that read, against the round's median update norm ("round norm"); once.
        self.validator.compare_round(list(self.reports.values()))
        self.reports_compared.update(self.reports)
        self.reports = {}
        for p in sorted(self.accepted):
            r = self.reports_compared[p]
            if not r.accepted:
                del self.accepted[p]
                self.status[p]["accepted"] -= 1
                self.status[p]["verified_tokens"].pop(str(self.round), None)
                self.refuse(p, self.status[p], 422, r.first_failure, r)
        if not self.accepted:
            return 409, {"reason": f"round {self.round} has no accepted upload to average"}
        phones = sorted(self.accepted)
        adapters = [self.accepted[p][0] for p in phones]
        weights = [float(self.status[p]["verified_tokens"][str(self.round)]) for p in phones]
        robust = self.args.method in ("trimmed_mean", "median")   # one vote each: no weights
        avg, report = phonegpt.Adapter.average(adapters, None if robust else weights, method=self.args.method,
                                               svd_rank=self.shape["lora_rank"], clip=self.args.clip)
        avg_loss = avg.evaluate(self.base, self.val).mean_loss
        reasons = {}
        for why in self.refused.values():
            check = why.split(":")[0]
            reasons[check] = reasons.get(check, 0) + 1
        figures = {"round": self.round, "base_val_loss": self.base_val_loss, "start_val_loss": self.start_val_loss,
                   "phones": {p: self.accepted[p][1].heldout_adapter_loss for p in phones},
                   "refused": dict(self.refused), "refused_val_loss": dict(self.refused_loss), "average_val_loss": avg_loss,
                   "method": self.args.method, "clip": self.args.clip, "clipped": report.clipped,
                   "n_accepted": len(phones), "n_refused": len(self.refused), "refused_by": reasons,
                   "average_relative_error": report.relative_error, "svd_residual": report.svd_residual}
        start = "the fresh adapter (= the base)" if self.round == 1 else f"round {self.round - 1}'s average"
        print(f"round {self.round}: starts from {start}: val loss {self.start_val_loss:.4f} "
              f"(base {self.base_val_loss:.4f}); {len(phones)} accepted, {len(self.refused)} refused"
              + (" (" + ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) + ")" if reasons else ""), flush=True)
        for p in phones:
            loss = figures["phones"][p]
            print(f"  {p}: val loss {loss:.4f} ({self.start_val_loss - loss:+.4f} over the start; accepted, "
                  f"{self.status[p]['verified_tokens'][str(self.round)]} tokens, update/base "
                  f"{self.accepted[p][1].update_ratio:.4f}, over the round's median "
                  f"{self.reports_compared[p].summary.round_ratio:.2f})", flush=True)
        for p, why in sorted(self.refused.items()):
            loss = self.refused_loss[p]
            measured = f"val loss {loss:.4f}, " if loss is not None else ""
            print(f"  {p}: {measured}refused: {why}", flush=True)
        print(f"  average of {len(phones)} ({self.args.method}, clip {self.args.clip}: {report.clipped} clipped, "
              f"residual {report.svd_residual:.2e}): val loss {avg_loss:.4f} "
              f"({self.start_val_loss - avg_loss:+.4f} over the start, {self.base_val_loss - avg_loss:+.4f} over "
              f"the base)", flush=True)
        self.results["rounds"].append(figures)
        self.adapter = avg
        self.start_val_loss = avg_loss
        self.round += 1
        if self.round > self.args.rounds:
            self.done = True
        else:
            self.open_round()
        return 200, figures


def key_id(public_key):
    """A key's id as docs/formats.md §6 defines it: the first 8 bytes of SHA-256(public key), hex."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def make_handler(coord):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):   # quiet: the coordinator prints its own lines
            pass

        def answer(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def file(self, path):
            body = open(path, "rb").read()
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            with coord.lock:
                if self.path == "/round":
                    return self.answer(200, {"round": coord.round, "secret": coord.secret, "done": coord.done})
                if self.path == "/base":
                    return self.file(coord.base_path)
                if self.path == "/adapter":
                    return self.file(coord.adapter_path)
                if self.path == "/status":
                    return self.answer(200, {"round": coord.round, "phones": coord.status})
                if self.path == "/results":
                    return self.answer(200, coord.results)
            self.answer(404, {"reason": f"no such endpoint: GET {self.path}"})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with coord.lock:
                if self.path == "/upload":
                    return self.answer(*coord.upload(body, self.headers.get("X-Round-Secret")))
                if self.path == "/close_round":
                    return self.answer(*coord.close_round())
            if self.path == "/shutdown":
                self.answer(200, {"stopping": True})
                threading.Thread(target=self.server.shutdown).start()
                return
            self.answer(404, {"reason": f"no such endpoint: POST {self.path}"})

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--method", default="svd", choices=["fedavg_factors", "cat", "svd", "trimmed_mean", "median"])
    p.add_argument("--clip", default="median", choices=["none", "median"],
                   help="clip each update to the round's median norm before averaging")
    p.add_argument("--heldout-tolerance", type=float, default=HELDOUT_TOLERANCE,
                   help="nats an upload's val loss may exceed the round's start by")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    coord = Coordinator(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(coord))
    print(f"coordinator listening on port {server.server_address[1]}", flush=True)
    server.serve_forever()
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(coord.results, f, indent=1)


if __name__ == "__main__":
    main()
