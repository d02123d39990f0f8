"""examples/federated end to end at the small shape: a coordinator and eight phones (three
honest, five misbehaving) as separate processes on loopback, two rounds. run.py itself fails
unless every round's average beats the base on the pooled validation split and each
misbehaving phone was refused for its own reason and reported it; here the printed figures and
the status are checked too."""
import json
import os
import subprocess
import sys

from conftest import data_path, skip_or_fail

SRC = os.environ.get("PG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def test_federated_loop_small(tmp_path):
    data = data_path()
    if data is None:
        skip_or_fail("Tiny Shakespeare not found (set PG_DATA_PATH)")
    work = tmp_path / "fed"
    out = subprocess.run([sys.executable, os.path.join(SRC, "examples", "federated", "run.py"), "--data", data,
                          "--honest", "3", "--rounds", "2", "--shape", "small", "--workdir", str(work)],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "OK: every round's average beats the base" in text
    results = json.loads((work / "results.json").read_text())
    assert len(results["rounds"]) == 2
    for r in results["rounds"]:
        assert r["average_val_loss"] < r["base_val_loss"]
        assert sorted(r["phones"]) == ["phone0", "phone1", "phone2"]
        assert set(r["refused"]) == {"phone3_tampered", "phone4_other_base", "phone5_nan", "phone6_unknown_key",
                                     "phone7_no_secret", "phone8_scaled", "phone9_reversed"}
        assert r["n_accepted"] == 3 and r["n_refused"] == 7 and r["refused_by"]["update norm"] == 1
    # Round 2 starts from round 1's average, and says so with that average's loss.
    assert results["rounds"][1]["start_val_loss"] == results["rounds"][0]["average_val_loss"]
    assert "round 2: starts from round 1's average: val loss" in text
    # Round 2 resumed from round 1's average: it starts lower and ends lower.
    assert results["rounds"][1]["average_val_loss"] < results["rounds"][0]["average_val_loss"]
    # Each refusal as the phone reported it.
    assert "[phone7_no_secret] round 1: REFUSED (HTTP 403): round secret: the upload carries no round secret" in text
    # The NaN trajectory reads (format 1.2) and is refused for what it is, naming the step.
    assert "[phone5_nan] round 1: REFUSED (HTTP 422): trajectory finite: the loss recorded for step 30 of 30 is nan" in text
    assert "[phone6_unknown_key] round 2: REFUSED (HTTP 422): signature: " in text
    assert "[phone4_other_base] round 1: REFUSED (HTTP 422): base weights: " in text
    assert "[phone3_tampered] round 1: REFUSED (HTTP 422): format: " in text
    # Poisoned updates signed with enrolled keys: the scaled one by its norm, the reversed one by
    # the held-out split against the round's start.
    assert "[phone8_scaled] round 1: REFUSED (HTTP 422): update norm: the update is too large" in text
    for rnd in (1, 2):   # worse than the base (the validator's check) or than the round's start
        assert f"[phone9_reversed] round {rnd}: REFUSED (HTTP 422): held-out" in text
    # The status is what the phones sent: honest phones' last step is their adapter's record.
    status = json.loads(text.split("status (what each phone sent): ", 1)[1].split("\n", 1)[0])
    assert status["phone0"]["last_round"] == 2 and status["phone0"]["last_step"] == 30
    assert status["phone0"]["accepted"] == 2 and status["phone0"]["refused"] == 0
    assert status["phone0"]["verified_tokens"]["1"] == 30 * 16 * 64
    assert status["phone7_no_secret"]["last_step"] is None and status["phone7_no_secret"]["refused"] == 2
    assert status["phone3_tampered"]["verified_tokens"] == {} and status["phone3_tampered"]["last_step"] is None
    assert status["phone6_unknown_key"]["last_step"] == 30   # it read; only its key is unknown
    assert status["phone5_nan"]["last_step"] == 30 and status["phone5_nan"]["verified_tokens"] == {}


def test_coordinator_credits_an_upload_only_to_the_phone_whose_key_signed_it(tmp_path):
    """A trusted signature is not enough: phone1 signing an upload that names phone0 is refused
    with the reason, and phone0 is credited nothing; the same upload under phone1's own name is
    accepted and credited to phone1, and sent again next round it is refused as stale. (The coordinator of examples/federated, in process: its
    real base pretraining, validator and averaging, no HTTP.)"""
    import argparse
    import base64

    import phonegpt

    data = data_path()
    if data is None:
        skip_or_fail("Tiny Shakespeare not found (set PG_DATA_PATH)")
    sys.path.insert(0, os.path.join(SRC, "examples", "federated"))
    from common import SHAPES, pooled_split, read_text
    from coordinator import HELDOUT_TOLERANCE, Coordinator, key_id

    (tmp_path / "trusted").mkdir()
    keys = {name: phonegpt.SigningKey.generate() for name in ("phone0", "phone1")}
    for name, key in keys.items():
        (tmp_path / "trusted" / (name + ".pub")).write_bytes(key.public_key)
    coord = Coordinator(argparse.Namespace(workdir=str(tmp_path), data=data, rounds=2, shape="small", method="svd",
                                           clip="median", heldout_tolerance=HELDOUT_TOLERANCE))
    shape = SHAPES["small"]
    adapter = phonegpt.Adapter.load(coord.adapter_path, coord.base)
    train_text, _ = pooled_split(read_text(data))
    adapter.fit(coord.base, coord.base.tokenizer.encode(train_text[:100000]), shape["phone_steps"],
                batch_size=shape["phone_batch"], lr_max=shape["lr"], lr_min=shape["lr"], warmup_steps=0,
                weight_decay=0.0, seed=5, n_threads=1)
    path = str(tmp_path / "up.pgadapter")
    adapter.save(path)
    file_bytes = open(path, "rb").read()
    signature = keys["phone1"].sign(adapter, file_bytes)

    def upload(phone):
        body = json.dumps({"phone": phone, "round": coord.round, "adapter": base64.b64encode(file_bytes).decode(),
                           "signature": signature}).encode()
        return coord.upload(body, coord.secret)

    status, answer = upload("phone0")
    assert status == 422 and not answer["accepted"]
    assert answer["reason"] == (f"signer: the upload is signed by key {keys['phone1'].key_id}, but phone phone0 "
                                f"is enrolled with key {keys['phone0'].key_id}")
    assert answer["report"]["accepted"] is True   # every check of the file itself passed
    assert coord.status["phone0"]["verified_tokens"] == {} and coord.status["phone0"]["refused"] == 1
    assert key_id(keys["phone0"].public_key) == keys["phone0"].key_id   # the id the library gives
    status, answer = upload("phone1")
    assert status == 200 and answer["accepted"], answer
    assert coord.status["phone1"]["verified_tokens"] == {"1": shape["phone_steps"] * shape["phone_batch"] * 64}
    assert sorted(coord.accepted) == ["phone1"]
    status, answer = upload("phone9")   # a name nobody enrolled
    assert status == 422 and answer["reason"].endswith("but phone phone9 is not enrolled")
    # Round 2 resumes from round 1's average (which records phone1's tokens): phone1 sending its
    # round-1 upload again, with round 2's secret, passes every check of the file but adds no
    # work to the published adapter, and is refused as stale rather than credited 0 tokens.
    assert coord.close_round()[0] == 200 and coord.round == 2
    status, answer = upload("phone1")
    assert status == 422 and answer["reason"].startswith(
        f"stale: the upload records {shape['phone_steps'] * shape['phone_batch'] * 64} tokens, no more than the "
        f"{shape['phone_steps'] * shape['phone_batch'] * 64} of round 2's published adapter"), answer
    assert answer["report"]["accepted"] is True and "2" not in coord.status["phone1"]["verified_tokens"]
