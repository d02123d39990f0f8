"""phonegpt.TrainSession and the memory plan from Python: a run split into windows and
resumed from its checkpoint ends as the straight run, byte for byte; cancel from another thread;
the conditions policy; the plan's figures and refusals."""
import threading

import numpy as np
import pytest

import phonegpt

IDS = np.array([(i * 7) % 13 + (i % 5) for i in range(3000)], dtype=np.int32)


def _train(path, window_ms, steps=20):
    """Runs windows of window_ms over path (a new session each, as a new process would) until
    the run is complete; returns the number of windows."""
    windows = 0
    while True:
        with phonegpt.Model("tiny", seed=4) as model, \
                phonegpt.TrainSession(model, path, config=phonegpt.TrainConfig(
                    batch_size=2, seq_len=16, total_steps=steps, warmup_steps=2, n_threads=2),
                    time_budget_ms=window_ms, checkpoint_every_steps=1) as s:
            s.set_data(IDS)
            windows += 1
            r = s.run()
            if r.stop == "steps":
                assert r.step == steps
                return windows


def test_windows_and_resumes_end_as_the_straight_run(tmp_path):
    straight, windowed = tmp_path / "straight.pgc", tmp_path / "windowed.pgc"
    assert _train(straight, 0) == 1
    assert _train(windowed, 5) > 1
    assert straight.read_bytes() == windowed.read_bytes()


def test_cancel_from_another_thread_and_conditions(tmp_path):
    with phonegpt.Model("tiny", seed=4) as model, \
            phonegpt.TrainSession(model, tmp_path / "c.pgc", config=phonegpt.TrainConfig(
                batch_size=2, seq_len=16, total_steps=10**6, n_threads=2)) as s:
        s.set_data(IDS)
        threading.Timer(0.05, s.cancel).start()
        r = s.run()
        assert r.stop == "cancelled" and r.steps_run > 0 and r.checkpoint_step == r.step
        # SEVERE pauses the run until another thread reports the phone cooled down.
        s.set_conditions(thermal_status=3)
        cooler = threading.Timer(0.05, lambda: s.set_conditions(phonegpt.DeviceConditions(thermal_status=0)))
        cooler.start()
        threading.Timer(0.3, s.cancel).start()
        r = s.run()
        cooler.join()
        assert r.paused_ms >= 30 and r.steps_run > 0
        with phonegpt.TrainSession(model, tmp_path / "d.pgc", config=phonegpt.TrainConfig(
                batch_size=2, seq_len=16, total_steps=10**6), time_budget_ms=60) as paused:
            paused.set_data(IDS)
            paused.set_conditions(battery_percent=5, charging=False)
            r = paused.run()
            assert r.stop == "time" and r.steps_run == 0 and r.paused_ms >= 40
        assert s.report().tokens_per_second > 0
        assert s.core_rates()[0][0] == -1
        with pytest.raises(phonegpt.InvalidArgument, match="thermal_status"):
            s.set_conditions(thermal_status=7)


def test_memory_plan_and_refusals():
    cfg = phonegpt.ModelConfig()
    train = phonegpt.TrainConfig(batch_size=16, n_threads=2)
    plan = phonegpt.memory_plan(cfg, "fp32", train=train, n_data_tokens=1000)
    assert plan.batch_size == 16 and plan.data_bytes == 4000
    assert plan.peak_bytes == sum(getattr(plan, f) for f in (
        "weights_bytes", "adapter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes",
        "checkpoint_bytes", "data_bytes", "runtime_bytes"))
    lora = phonegpt.memory_plan(cfg, "fp16", lora=phonegpt.LoraConfig(rank=4), layers=[4, 5], train=train)
    assert 0 < lora.adapter_bytes < plan.weights_bytes
    fit = phonegpt.max_batch(cfg, plan.peak_bytes, train=train, n_data_tokens=1000)
    assert fit.batch_size >= 16 and fit.peak_bytes <= plan.peak_bytes
    with pytest.raises(phonegpt.OutOfMemory, match="budget"):
        phonegpt.max_batch(cfg, 1 << 20, train=train)
    with phonegpt.Model(cfg, seed=1) as model:
        with pytest.raises(phonegpt.OutOfMemory, match="memory_budget_bytes"):
            phonegpt.TrainSession(model, "/nonexistent/x.pgc", config=train, memory_budget_bytes=1 << 20)
