"""What the coordinator and the phones of examples/federated share: the text, its pooled
train/validation split, the phones' shards (by speaker), the shapes, and the little HTTP
client they speak over loopback."""
import json
import os
import sys
import urllib.error
import urllib.request
import zlib

if os.environ.get("PHONEGPT_PYDIR"):
    sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
import phonegpt  # noqa: E402

# Shapes: "small" for the test (seconds per round), "phonegpt" for the documented example.
SHAPES = {
    "small": dict(model=dict(n_layer=2, n_head=2, n_embd=48, n_ctx=64), pretrain_steps=200, pretrain_batch=16,
                  lora_rank=8, phone_steps=30, phone_batch=16, lr=5e-3, heldout_tokens=8192),
    "phonegpt": dict(model=None, pretrain_steps=2000, pretrain_batch=32, lora_rank=8, phone_steps=200,
                     phone_batch=16, lr=2e-3, heldout_tokens=65536),
}


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def pooled_split(text):
    """The pooled train text and validation text: every tenth speech (by position) is
    validation, the others are train; no speech is in both, and validation comes from the same
    plays and speakers as the phones' shards."""
    parts = speeches(text)
    train = "".join(s for i, (_, s) in enumerate(parts) if i % 10 != 9)
    val = "".join(s for i, (_, s) in enumerate(parts) if i % 10 == 9)
    return train, val


def speeches(text):
    """[(speaker, speech)] of a Shakespeare text: blocks separated by blank lines whose first
    line is 'SPEAKER:'."""
    out = []
    for block in text.split("\n\n"):
        first, _, _ = block.partition("\n")
        if first.endswith(":") and block.strip():
            out.append((first[:-1], block + "\n\n"))
    return out


def shard_of(speaker, n_shards):
    """Which phone gets a speaker's speeches: a stable hash of the name."""
    return zlib.crc32(speaker.encode("utf-8")) % n_shards


def phone_shard(train_text, index, n_shards):
    """Phone `index`'s own text: every speech of the speakers hashed to it."""
    return "".join(s for who, s in speeches(train_text) if shard_of(who, n_shards) == index)


class Refused(Exception):
    """The coordinator refused a request; .status is the HTTP status, .body its JSON answer."""

    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body.get('reason', body)}")
        self.status, self.body = status, body


def request(url, data=None, headers=None, method=None):
    """JSON (or bytes, for application/octet-stream answers) from the coordinator; a refusal
    raises Refused carrying the coordinator's reason."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            body = r.read()
            if r.headers.get("Content-Type") == "application/octet-stream":
                return body
            return json.loads(body)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"reason": raw.decode("utf-8", "replace") or "(empty answer)"}
        raise Refused(e.code, body) from None
