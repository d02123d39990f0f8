"""The federated loop's Python binding (bindings/python/coord_bindings.cpp): the data filter,
adapters as numpy arrays with fit / evaluate, signatures from bytes and files, averaging
against a numpy reference, and validation."""
import json

import numpy as np
import pytest

import phonegpt


def tiny_model(seed=1):
    """A random tiny base, explicitly allowed for LoRA (a never-trained base is refused otherwise)."""
    m = phonegpt.Model(phonegpt.ModelConfig.preset("tiny"), seed=seed)
    assert m.provenance == {"kind": "initialised", "init_seed": seed, "steps": 0, "tokens": 0}
    m.allow_untrained_base()
    return m


def pattern(model, n, period=11):
    v = model.config.vocab_size
    return (np.arange(n) % period * 3 % v).astype(np.int32)


def dense_updates(adapter):
    """{linear: scale * B @ A} in float64, from get_weights() (A then B per linear)."""
    names, weights = adapter.tensor_names(), adapter.get_weights()
    out = {}
    for i in range(0, len(names), 2):
        assert names[i].endswith("lora_A.weight") and names[i + 1].endswith("lora_B.weight")
        a, b = weights[i].astype(np.float64), weights[i + 1].astype(np.float64)
        out[names[i][: -len(".lora_A.weight")]] = adapter.scale * b @ a
    return out


def test_data_filter_removes_exactly_the_personal_data_and_reports_ranges():
    text = "Mail ada@example.org or call +33 6 12 34 56 78; card 4111 1111 1111 1111. Thou art."
    f = phonegpt.DataFilter()
    out, report, spans = f.apply(text)
    assert out == "Mail  or call ; card . Thou art."
    assert (report.n_email, report.n_phone, report.n_payment_card) == (1, 1, 1)
    assert [text[b:e] for b, e, _ in spans] == ["ada@example.org", "+33 6 12 34 56 78", "4111 1111 1111 1111"]
    assert [k for _, _, k in spans] == ["email", "phone", "payment_card"]
    assert report.bytes_removed == sum(e - b for b, e, _ in spans)
    # Only some detectors, a replacement, and the app's own rule.
    only_email = phonegpt.DataFilterConfig(kinds=1 << 0)
    out, report, _ = phonegpt.DataFilter(only_email, replacement="[x]").apply(text)
    assert out.startswith("Mail [x] or call +33") and report.n_spans == 1
    rule = lambda b: [(b.index(b"Thou"), b.index(b"Thou") + 4)]
    out, report, spans = phonegpt.DataFilter(custom_rule=rule).apply(text)
    assert "Thou" not in out and report.n_custom == 1 and spans[-1][2] == "custom"
    # A rule's exception reaches the caller; a bad span is the library's InvalidArgument.
    def boom(_):
        raise KeyError("rule failed")
    with pytest.raises(KeyError):
        phonegpt.DataFilter(custom_rule=boom).apply(text)
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.DataFilter(custom_rule=lambda b: [(5, 5)]).apply(text)
    with pytest.raises(phonegpt.InvalidArgument):
        f.apply(b"bad \xff utf-8")


def test_data_filter_policy_per_kind_and_regions():
    text = "mail jane@example.com, call 612 345 678 or +49 30 1234567, ip 192.0.2.1"
    config = phonegpt.DataFilterConfig(kinds=0x3F & ~(1 << 4), placeholder_kinds=(1 << 0) | (1 << 1))
    out, report, spans = phonegpt.DataFilter(config).apply(text)
    assert out == "mail <EMAIL>, call 612 345 678 or <PHONE>, ip 192.0.2.1"
    assert (report.n_email, report.n_phone, report.n_ipv4) == (1, 1, 0)
    out, _, _ = phonegpt.DataFilter(config, regions="ES").apply(text)
    assert out == "mail <EMAIL>, call <PHONE> or <PHONE>, ip 192.0.2.1"
    with pytest.raises(phonegpt.InvalidArgument, match="unknown region"):
        phonegpt.DataFilter(regions="XX")


def test_adapter_weights_are_a_fixed_ordered_list_of_arrays():
    with tiny_model() as base:
        a = phonegpt.Adapter.create(base, rank=2, target_modules=1 | 8, layers=[1])
        assert a.layers == [1] and a.config.rank == 2
        names = a.tensor_names()
        assert names == ["h.1.attn.c_attn.lora_A.weight", "h.1.attn.c_attn.lora_B.weight",
                         "h.1.mlp.c_proj.lora_A.weight", "h.1.mlp.c_proj.lora_B.weight"]
        w = a.get_weights()
        assert [x.shape for x in w] == [(2, 16), (48, 2), (2, 64), (16, 2)]
        assert all(x.dtype == np.float32 for x in w) and not np.any(w[1])  # B starts at zero
        new = [np.full(x.shape, 0.01 * (i + 1), np.float32) for i, x in enumerate(w)]
        a.set_weights(new)
        assert all(np.array_equal(x, y) for x, y in zip(a.get_weights(), new))
        new[0][0, 0] = 99.0   # get_weights copies: changing them later changes nothing
        assert a.get_weights()[0][0, 0] == np.float32(0.01)
        with pytest.raises(phonegpt.GeometryError, match="must have shape"):
            a.set_weights([np.zeros((3, 16), np.float32)] + new[1:])
        with pytest.raises(phonegpt.InvalidArgument, match="3 arrays"):
            a.set_weights(new[:3])
        bad = [x.copy() for x in new]
        bad[2][0, 0] = np.nan
        with pytest.raises(phonegpt.NotFinite):
            a.set_weights(bad)
        assert a.get_weights()[2][0, 0] == np.float32(0.03)   # nothing changed


def test_fit_lowers_the_loss_and_evaluate_matches_the_base_for_a_fresh_adapter(tmp_path):
    with tiny_model() as base:
        tokens = pattern(base, 4096)
        a = phonegpt.Adapter.create(base, rank=4)
        fresh = a.evaluate(base, tokens[:512]).mean_loss
        assert fresh == base.evaluate(tokens[:512]).mean_loss   # B = 0: the base's own loss
        results = a.fit(base, tokens, 20, batch_size=4, lr_max=1e-2, lr_min=1e-2, warmup_steps=0)
        assert len(results) == 20 and results[-1].step == 20
        record = a.training_record()
        assert record["steps"] == 20 and np.allclose(record["losses"], [r.loss for r in results])
        assert a.evaluate(base, tokens[:512]).mean_loss < fresh - 0.05
        path = tmp_path / "a.pgadapter"
        a.save(path)
        back = phonegpt.Adapter.load(path, base)
        assert all(np.array_equal(x, y) for x, y in zip(back.get_weights(), a.get_weights()))
        with tiny_model(seed=2) as other:
            with pytest.raises(phonegpt.GeometryError):
                phonegpt.Adapter.load(path, other)
            with pytest.raises(phonegpt.GeometryError):
                back.check_base(other)


def test_signatures_from_bytes_and_files(tmp_path):
    with tiny_model() as base:
        a = phonegpt.Adapter.create(base, rank=2)
        a.fit(base, pattern(base, 2048), 3, batch_size=2)
        path = tmp_path / "up.pgadapter"
        a.save(path)
        data = path.read_bytes()
        key = phonegpt.SigningKey.from_seed(bytes(range(32)))
        assert key.key_id == phonegpt.SigningKey.from_seed(bytes(range(32))).key_id
        assert len(key.public_key) == 32 and len(key.key_id) == 16
        sig = key.sign(a, data)
        trusted = phonegpt.TrustedKeys([key.public_key])
        assert trusted.verify(a, data, sig) == (True, "")
        sig_path = key.sign_file(path)
        assert sig_path == str(path) + ".sig" and open(sig_path).read() == sig
        tampered = bytearray(data)
        tampered[len(data) // 2] ^= 1
        valid, reason = trusted.verify(a, bytes(tampered), sig)
        assert not valid and reason.startswith("adapter bytes")
        stranger = phonegpt.SigningKey.generate()
        valid, reason = trusted.verify(a, data, stranger.sign(a, data))
        assert not valid and "trusted" in reason
        key.save(tmp_path / "k.key")
        assert phonegpt.SigningKey.load(tmp_path / "k.key").public_key == key.public_key


def test_average_methods_against_a_numpy_reference():
    with tiny_model() as base:
        tokens = pattern(base, 2048)
        adapters = []
        for seed, rank in ((1, 2), (2, 3)):
            a = phonegpt.Adapter.create(base, rank=rank, init_seed=seed)
            a.fit(base, tokens, 4, batch_size=2, lr_max=1e-2, seed=seed)
            adapters.append(a)
        weights = [3.0, 1.0]
        want = {}
        for a, w in zip(adapters, weights):
            for k, d in dense_updates(a).items():
                want[k] = want.get(k, 0) + w / sum(weights) * d
        for method in ("cat", "svd"):
            avg, report = phonegpt.Adapter.average(adapters, weights, method=method, svd_rank=5)
            got = dense_updates(avg)
            for k in want:
                assert np.abs(got[k] - want[k]).max() <= 1e-5 * np.abs(want[k]).max(), (method, k)
            assert report.rank == 5 and report.relative_error < 1e-5
        with pytest.raises(phonegpt.GeometryError):
            phonegpt.Adapter.average(adapters, weights, method="fedavg_factors")
        with pytest.raises(phonegpt.InvalidArgument, match="1 weights for 2"):
            phonegpt.Adapter.average(adapters, [1.0], method="cat")


def test_robust_average_round_norms_and_privacy(tmp_path):
    with tiny_model() as base:
        tokens = pattern(base, 2048)
        start = phonegpt.Adapter.create(base, rank=2, init_seed=3)
        honest = []
        for seed in (1, 2, 3):
            a = phonegpt.Adapter.create(base, rank=2, init_seed=3)
            a.fit(base, tokens, 4, batch_size=2, lr_max=1e-2, seed=seed)
            honest.append(a)
        scaled = phonegpt.Adapter.create(base, rank=2, init_seed=3)
        scaled.set_weights([w * 1000 if "lora_B" in n else w
                            for n, w in zip(honest[0].tensor_names(), honest[0].get_weights())])
        # The median of the four updates stays near the honest mean; clipping scaled two down.
        avg, rep = phonegpt.Adapter.average(honest + [scaled], method="median", svd_rank=2, clip="median")
        assert rep.clipped == 2 and rep.clip_bound > 0
        plain, _ = phonegpt.Adapter.average(honest + [scaled], method="svd", svd_rank=2)
        want = {}
        for a in honest:
            for k, d in dense_updates(a).items():
                want[k] = want.get(k, 0) + d / 3

        def distance(x):
            got = dense_updates(x)
            return np.sqrt(sum(((got[k] - want[k]) ** 2).sum() for k in got) / sum((want[k] ** 2).sum() for k in got))
        assert distance(avg) < 0.5 < 100 < distance(plain)
        with pytest.raises(phonegpt.InvalidArgument, match="pass no weights"):
            phonegpt.Adapter.average(honest, [1.0, 1.0, 1.0], method="trimmed_mean")
        # The round's norms: the scaled upload fails "update norm" and "round norm".
        v = phonegpt.Validator(base, signature="off", base_trained="off")
        reports = []
        for i, a in enumerate(honest + [scaled]):
            a.save(tmp_path / f"{i}.pgadapter")
            reports.append(v.validate((tmp_path / f"{i}.pgadapter").read_bytes()))
        v.compare_round(reports)
        assert [r.accepted for r in reports] == [True, True, True, False]
        failed = [c["name"] for c in reports[3].checks if c["outcome"] == "failed"]
        assert failed[-2:] == ["update norm", "round norm"]   # (its record is empty too: made here)
        assert reports[3].summary.update_ratio > 20 and reports[3].summary.round_ratio > 100
        with pytest.raises(phonegpt.StateError, match="already compared"):
            v.compare_round(reports)
        # The phone's differential privacy and its accountant.
        a = honest[1]
        before = a.get_weights()
        r = a.privatize(start, clip_norm=1e-3, noise_multiplier=0.5, seed=4)
        assert r.clipped and r.noise_stddev == pytest.approx(5e-4) and r.noised == a.num_params
        assert not np.array_equal(before[1], a.get_weights()[1])
        eps, order = phonegpt.privacy_epsilon(1.0, 1, 1e-5)
        assert eps == pytest.approx(0.5 + 2 * np.sqrt(0.5 * np.log(1e5))) and order > 1
        with pytest.raises(phonegpt.InvalidArgument, match="clip_norm"):
            a.privatize(start, clip_norm=0.0)
        with pytest.raises(phonegpt.InvalidArgument, match="delta"):
            phonegpt.privacy_epsilon(1.0, 1, 2.0)


def test_validator_reports_every_check_by_name(tmp_path):
    with tiny_model() as base:
        tokens = pattern(base, 4096)
        a = phonegpt.Adapter.create(base, rank=2)
        a.fit(base, tokens, 12, batch_size=4, lr_max=1e-2, lr_min=1e-2, warmup_steps=0)
        path = tmp_path / "up.pgadapter"
        a.save(path)
        key = phonegpt.SigningKey.from_seed(b"\x05" * 32)
        sig_path = key.sign_file(path)
        keys = phonegpt.TrustedKeys([key.public_key])
        # This base was never trained (random on purpose): the default policy refuses every
        # upload over it by name; base_trained="off" lets the rest of the report be checked.
        assert phonegpt.ValidationPolicy().base_trained == "refuse_untrained"
        strict = phonegpt.Validator(base, trusted_keys=keys).validate_file(path, sig_path)
        assert not strict.accepted
        assert [c["name"] for c in strict.checks if c["outcome"] == "failed"] == ["base trained"]
        assert strict.first_failure.startswith("base trained: the base was initialised from seed 1, never trained")
        v = phonegpt.Validator(base, trusted_keys=keys, start_tolerance=0.5, base_trained="off")
        v.set_reference(tokens[:512])
        v.set_heldout(tokens[512:1024])
        r = v.validate_file(path, sig_path)
        assert r.accepted, r.first_failure
        assert [c["name"] for c in r.checks][:6] == ["format", "geometry", "base weights", "tokenizer", "base trained",
                                                     "signature"]
        assert [c["name"] for c in r.checks if c["outcome"] != "passed"] == ["base trained"]
        assert r.key_id == key.key_id and r.summary.steps == 12
        assert r.summary.heldout_adapter_loss < r.summary.heldout_base_loss
        doc = json.loads(r.json())
        assert doc["accepted"] is True and len(doc["checks"]) == r.summary.n_checks == 13
        assert np.array_equal(r.adapter().get_weights()[1], a.get_weights()[1])
        # Tampered bytes and a missing signature: refused, each with its reason.
        data = bytearray(path.read_bytes())
        data[-5] ^= 0x40
        bad = v.validate(bytes(data), open(sig_path).read())
        assert not bad.accepted and bad.first_failure.startswith("format: ") and "checksum" in bad.first_failure
        with pytest.raises(phonegpt.StateError):
            bad.adapter()
        unsigned = v.validate(path.read_bytes())
        assert not unsigned.accepted and unsigned.first_failure.startswith("signature: ")
        assert "refused" in repr(unsigned)
        lax = phonegpt.Validator(base, signature="off", base_trained="off")
        assert lax.validate(path.read_bytes()).accepted
        with pytest.raises(phonegpt.InvalidArgument):
            phonegpt.Validator(base, heldout_tolerance=-1.0)
        with pytest.raises(phonegpt.InvalidArgument):
            phonegpt.Validator(base, base_trained="sometimes")


def test_adapter_client_has_numpy_client_shapes():
    from phonegpt.federated import AdapterClient
    with tiny_model() as base:
        tokens = pattern(base, 4096)
        a = phonegpt.Adapter.create(base, rank=2)
        client = AdapterClient(base, a, tokens[:3072], tokens[3072:], steps=10, batch_size=4, lr_max=1e-2,
                               lr_min=1e-2, warmup_steps=0)
        params = client.get_parameters({})
        assert isinstance(params, list) and all(isinstance(p, np.ndarray) for p in params)
        loss0, n0, _ = client.evaluate(params, {})
        assert n0 == 1023 and loss0 == base.evaluate(tokens[3072:]).mean_loss
        new, n_examples, metrics = client.fit(params, {"round": 1})
        assert n_examples == 10 * 4 * base.config.n_ctx and np.isfinite(metrics["loss"])
        loss1, _, _ = client.evaluate(new, {})
        assert loss1 < loss0
        # The server's parameters are what the client trains from: sending back the old ones
        # restores the old loss exactly.
        assert client.evaluate(params, {})[0] == loss0
