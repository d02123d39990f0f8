// A frozen base held in fp16 or bf16 (pg_model_set_weight_storage): its embedding and block
// linears are 16-bit and widened inside the GEMMs, so
//   - every pass (batched logits, the KV-cached one-position step, LoRA gradients, LoRA training
//     steps) equals, bit for bit, the same pass over an fp32 model holding the same rounded
//     values, on the active kernel table and on the scalar reference table;
//   - against the original fp32 base the logits differ by the weights' rounding only, within
//     the bound docs/lora.md states for this test model, whose weights are 10x GPT-2's
//     initialisation so that it amplifies the rounding (fp16: 2e-2, bf16: 3e-1 of the largest
//     logit or LoRA gradient; measured 7.2e-3 and 0.14 for logits, 0.16 for bf16 gradients);
//   - activation recomputation gives the same LoRA run;
//   - the base takes about half the bytes, its fingerprint is the fp32 one, and everything that
//     needs fp32 weights (saving it as fp32 among them) is refused with PG_ERR_STATE and a message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/half_float.hpp"
#include "lora/adapter.hpp"
#include "lora/lora_hook.hpp"
#include "model/engine.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "frozen_base_support.hpp"
#include "test_support.hpp"

using namespace frozen_base_test;

namespace {

bool held_in_16_bits(const std::string& name) {
    for (const char* s : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"})
        if (name.size() > std::strlen(s) && name.compare(name.size() - std::strlen(s), std::string::npos, s) == 0)
            return true;
    return name == "wte";
}

// The fp32 twin of a 16-bit base: the same model with its 16-bit tensors rounded in place.
void round_in_place(pg_model* m, pg_weight_storage storage) {
    int32_t n = 0;
    REQUIRE(pg_model_num_tensors(m, &n) == PG_OK);
    for (int32_t i = 0; i < n; ++i) {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_model_tensor_info(m, i, &info) == PG_OK);
        if (!held_in_16_bits(info.name)) continue;
        float* w = nullptr;
        REQUIRE(pg_model_tensor_data_mutable(m, i, &w) == PG_OK);
        for (int64_t k = 0; k < info.numel; ++k)
            w[k] = storage == PG_WEIGHTS_FP16 ? pg::kernels::fp16_to_float(pg::kernels::float_to_fp16(w[k]))
                                              : pg::kernels::bf16_to_float(pg::kernels::float_to_bf16(w[k]));
    }
}

double max_abs(const std::vector<float>& v) {
    double m = 0;
    for (float x : v) m = std::max(m, double(std::fabs(x)));
    return m;
}
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

pg::Model cpp_base(uint64_t seed) {
    pg::Model m(pg::model_preset("tiny"));
    pg::init_gpt2_params(m.config(), m.params(), seed);
    for (int64_t i = 0; i < m.num_params(); ++i) m.params()[i] *= 10.0f;
    return m;
}

// dA and dB of one frozen-base backward pass (no dropout) through the engine.
std::vector<float> lora_gradients(const pg::Model& base, const pg::lora::Adapter& adapter) {
    std::vector<float> grads(std::size_t(adapter.num_params()), 0.0f);
    pg::lora::LoraHook hook(adapter, grads.data());
    pg::Engine engine(base.config(), kB, kT);
    engine.set_linear_hook(&hook);
    pg::ThreadPool pool(2);
    const std::vector<int32_t> in = tokens(kB * kT, 1), target = tokens(kB * kT, 2);
    engine.forward_backward(base.weights(), nullptr, in.data(), target.data(), kB, kT, 1.0f / (kB * kT),
                            pg::Dropout{}, pool);
    REQUIRE(engine.weight_gradient_gemms() == 0);
    return grads;
}

}  // namespace

TEST_CASE("a 16-bit frozen base holds half the bytes, keeps the fp32 fingerprint and refuses fp32-only calls",
          "[lora][half]") {
    pg_model* m = tiny_base(7);
    int64_t params = 0, bytes32 = 0, bytes16 = 0;
    REQUIRE(pg_model_num_params(m, &params) == PG_OK);
    pg_weight_storage storage = PG_WEIGHTS_BF16;
    REQUIRE(pg_model_weight_storage(m, &storage, &bytes32) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP32);
    CHECK(bytes32 >= params * 4);
    pg_lora_adapter* a = adapter_with_b(m, PG_LORA_ATTN_C_ATTN);  // made for the fp32 base

    REQUIRE(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_OK);
    REQUIRE(pg_model_weight_storage(m, &storage, &bytes16) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP16);
    // The tiny model's 16-bit share is smaller than a real model's (98%): wpe and the biases
    // and LayerNorms are a quarter of its 29k weights.
    CHECK(bytes16 < bytes32 * 0.65);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_OK);  // the same again: no-op

    // The adapter made for the fp32 weights is this base's.
    CHECK(pg_lora_adapter_check_base(a, m) == PG_OK);
    const std::string path = pg_test::tmp_dir() + "/half_base_model.pgck";
    // It saves in its own storage only (checkpoint format 1.3; tests/unit/test_mapped_base.cpp).
    pg_save_options so;
    pg_save_options_default(&so);
    so.weight_storage = PG_WEIGHTS_FP32;
    CHECK(pg_model_save(m, path.c_str(), &so) == PG_ERR_STATE);
    CHECK(std::string(pg_model_last_error(m)).find("held in fp16") != std::string::npos);
    pg_train_config tc;
    pg_train_config_default(&tc);
    pg_trainer* full = nullptr;
    CHECK(pg_trainer_create(m, &tc, &full) == PG_ERR_STATE);
    CHECK(full == nullptr);
    const float* p = nullptr;
    int64_t n = 0;
    CHECK(pg_model_params(m, &p, &n) == PG_ERR_STATE);
    float* w = nullptr;
    CHECK(pg_model_tensor_data_mutable(m, 0, &w) == PG_ERR_STATE);
    pg_tensor_info info;
    info.struct_size = sizeof info;
    REQUIRE(pg_model_tensor_info(m, 0, &info) == PG_OK);  // names and shapes still readable
    CHECK(info.data == nullptr);
    pg_model* merged = nullptr;  // an fp32 copy of the 16-bit values with the update added
    CHECK(pg_lora_merge(m, a, 1, &merged) == PG_OK);
    pg_model_free(merged);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP32) == PG_ERR_STATE);
    CHECK(std::string(pg_model_last_error(m)).find("load the model again") != std::string::npos);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_BF16) == PG_ERR_STATE);
    CHECK(pg_model_set_weight_storage(m, pg_weight_storage(7)) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_model_set_weight_storage(nullptr, PG_WEIGHTS_FP16) == PG_ERR_INVALID_ARGUMENT);
    pg_lora_adapter_free(a);
    pg_model_free(m);
}

// A full trainer keeps a pointer into the fp32 weights the conversion frees: the conversion
// waits for every trainer of the model to be freed, the resumed one's included.
TEST_CASE("a model is not held in 16 bits while a full trainer of it lives", "[lora][half]") {
    pg_model* m = tiny_base(7);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 2;
    pg_trainer* first = nullptr;
    pg_trainer* second = nullptr;
    REQUIRE(pg_trainer_create(m, &tc, &first) == PG_OK);
    REQUIRE(pg_trainer_create(m, &tc, &second) == PG_OK);
    std::vector<int32_t> data(400);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = int32_t(i * 7 % 11);
    REQUIRE(pg_trainer_set_data(first, data.data(), data.size()) == PG_OK);

    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_ERR_STATE);
    CHECK(std::string(pg_model_last_error(m)).find("free the trainer first") != std::string::npos);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_BF16_ARITHMETIC) == PG_ERR_STATE);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP32) == PG_OK);  // the same storage: nothing freed
    pg_weight_storage storage = PG_WEIGHTS_BF16;
    REQUIRE(pg_model_weight_storage(m, &storage, nullptr) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP32);
    pg_step_result r;
    r.struct_size = sizeof r;
    CHECK(pg_trainer_step(first, &r) == PG_OK);  // the refused call changed nothing
    CHECK(std::isfinite(r.loss));
    const std::string path = pg_test::tmp_dir() + "/half_base_trainer.pgck";
    REQUIRE(pg_trainer_save(first, path.c_str(), nullptr) == PG_OK);

    pg_trainer_free(first);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_ERR_STATE);  // one still lives
    pg_trainer_free(second);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_OK);
    pg_model_free(m);

    pg_model* resumed = nullptr;
    pg_trainer* trainer = nullptr;
    REQUIRE(pg_trainer_resume(path.c_str(), &resumed, &trainer) == PG_OK);
    CHECK(pg_model_set_weight_storage(resumed, PG_WEIGHTS_BF16) == PG_ERR_STATE);
    pg_trainer_free(trainer);
    CHECK(pg_model_set_weight_storage(resumed, PG_WEIGHTS_BF16) == PG_OK);
    pg_model_free(resumed);
}

TEST_CASE("fp16 refuses a weight beyond its range and names the tensor", "[lora][half]") {
    pg_model* m = tiny_base(7);
    float* w = nullptr;
    int32_t index = -1;
    REQUIRE(pg_model_find_tensor(m, "h.1.mlp.c_fc.weight", &index) == PG_OK);
    REQUIRE(pg_model_tensor_data_mutable(m, index, &w) == PG_OK);
    w[5] = 70000.0f;
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_ERR_NOT_FINITE);
    CHECK(std::string(pg_model_last_error(m)).find("h.1.mlp.c_fc.weight") != std::string::npos);
    pg_weight_storage storage = PG_WEIGHTS_BF16;
    REQUIRE(pg_model_weight_storage(m, &storage, nullptr) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP32);  // left as it was
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_BF16) == PG_OK);  // bf16 has fp32's range
    pg_model_free(m);
}

// The model layer's widening (what PEFT import and llm.c's bf16 files use instead of a kernel):
// every bit pattern as the scalar definition, the exact inverse of round_to_16_bits.
TEST_CASE("widen_16_bits: every fp16 and bf16 pattern as half_float.hpp defines it, round_to_16_bits undone",
          "[lora][half]") {
    std::vector<uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
    std::vector<float> wide(all.size());
    for (pg::WeightStorage storage :
         {pg::WeightStorage::fp16, pg::WeightStorage::bf16}) {
        CAPTURE(pg::weight_storage_name(storage));
        const bool fp16 = storage != pg::WeightStorage::bf16;
        std::fill(wide.begin(), wide.end(), -1.0f);
        pg::widen_16_bits(all.data(), wide.data(), int64_t(all.size()), storage);
        int wrong = 0;
        for (std::size_t i = 0; i < all.size(); ++i) {
            const float want = fp16 ? pg::kernels::fp16_to_float(all[i]) : pg::kernels::bf16_to_float(all[i]);
            const bool ok = std::isnan(want) ? std::isnan(wide[i]) : std::memcmp(&want, &wide[i], 4) == 0;
            if (!ok && ++wrong <= 3) CHECK(ok);
        }
        CHECK(wrong == 0);
        // Rounding the finite values widened gives back their bits.
        std::vector<uint16_t> finite;
        std::vector<float> values;
        for (std::size_t i = 0; i < all.size(); ++i)
            if (std::isfinite(wide[i])) {
                finite.push_back(all[i]);
                values.push_back(wide[i]);
            }
        std::vector<uint16_t> back(finite.size());
        CHECK(pg::round_to_16_bits(values.data(), back.data(), int64_t(values.size()), storage) == -1);
        CHECK(back == finite);
    }
    try {
        pg::widen_16_bits(all.data(), wide.data(), 1, pg::WeightStorage::fp32);
        FAIL("fp32 widened");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_INTERNAL);
        CHECK(std::string(e.what()).find("not 16-bit") != std::string::npos);
    }
}

TEST_CASE("a 16-bit base's logits equal the fp32 model of the same rounded weights bit for bit",
          "[lora][half]") {
    const bool reference = GENERATE(false, true);
    const pg_weight_storage storage = GENERATE(PG_WEIGHTS_FP16, PG_WEIGHTS_BF16);
    CAPTURE(reference, int(storage));
    const char* before = pg::kernels::force_reference(reference);
    pg_model* original = tiny_base(9);
    pg_model* rounded = tiny_base(9);
    pg_model* half = tiny_base(9);
    round_in_place(rounded, storage);
    REQUIRE(pg_model_set_weight_storage(half, storage) == PG_OK);
    for (bool adapter : {false, true}) {
        CAPTURE(adapter);
        const std::vector<float> want = session_outputs(rounded, adapter);
        const std::vector<float> got = session_outputs(half, adapter);
        CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
        // Against the unrounded base: the weights' rounding only.
        const std::vector<float> exact = session_outputs(original, adapter);
        const double bound = storage == PG_WEIGHTS_FP16 ? 2e-2 : 3e-1;
        const double err = max_abs_diff(got, exact) / max_abs(exact);
        INFO("max |logit diff| / max |logit| = " << err);
        CHECK(err <= bound);
        CHECK(err > 0.0);  // the rounding is visible: the comparison above means something
    }
    pg_model_free(original);
    pg_model_free(rounded);
    pg_model_free(half);
    pg::kernels::force_reference(std::string(before) == "reference");
}

TEST_CASE("LoRA gradients over a 16-bit base: bit for bit the rounded fp32 base's, near the fp32 base's",
          "[lora][half]") {
    const pg::WeightStorage storage = GENERATE(pg::WeightStorage::fp16, pg::WeightStorage::bf16);
    const bool reference = GENERATE(false, true);
    CAPTURE(int(storage), reference);
    const char* before = pg::kernels::force_reference(reference);
    pg::Model original = cpp_base(4), rounded = cpp_base(4), half = cpp_base(4);
    for (const pg::TensorEntry& e : rounded.tensors()) {
        if (!pg::held_in_16_bits(e.kind)) continue;
        float* w = rounded.params() + e.offset;
        for (int64_t k = 0; k < e.numel; ++k)
            w[k] = storage == pg::WeightStorage::fp16 ? pg::kernels::fp16_to_float(pg::kernels::float_to_fp16(w[k]))
                                                      : pg::kernels::bf16_to_float(pg::kernels::float_to_bf16(w[k]));
    }
    half.hold_frozen_in(storage);
    CHECK(half.fp32_weights_hash() == original.fp32_weights_hash());
    CHECK(rounded.fp32_weights_hash() != original.fp32_weights_hash());
    pg::lora::LoraConfig lc;
    lc.rank = 4;
    lc.alpha = 8.0f;
    lc.target_modules = PG_LORA_ALL_LINEARS;
    pg::lora::Adapter adapter(lc, pg::lora::identify_base(original));
    for (const auto& m : adapter.linears()) {
        float* B = adapter.b(m);
        for (int64_t i = 0; i < m.out * lc.rank; ++i) B[i] = 0.3f * std::sin(0.37f * float(i) + float(m.layer));
    }
    const std::vector<float> want = lora_gradients(rounded, adapter);
    const std::vector<float> got = lora_gradients(half, adapter);
    CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
    const std::vector<float> exact = lora_gradients(original, adapter);
    const double err = max_abs_diff(got, exact) / max_abs(exact);
    INFO("max |gradient diff| / max |gradient| = " << err);
    CHECK(err <= (storage == pg::WeightStorage::fp16 ? 2e-2 : 3e-1));
    CHECK(err > 0.0);
    // A 16-bit base is frozen: a full gradient buffer is refused.
    pg::Engine engine(half.config(), kB, kT);
    pg::ThreadPool pool(1);
    std::vector<float> full(std::size_t(half.num_params()));
    const std::vector<int32_t> in = tokens(kB * kT, 1);
    CHECK_THROWS_AS(engine.forward_backward(half.weights(), full.data(), in.data(), in.data(), kB, kT, 1.0f,
                                            pg::Dropout{}, pool),
                    pg::Error);
    pg::kernels::force_reference(std::string(before) == "reference");
}

TEST_CASE("LoRA training over a 16-bit base is the rounded fp32 base's run bit for bit; trainers share one base",
          "[lora][half]") {
    pg_model* rounded = tiny_base(21);
    pg_model* half = tiny_base(21);
    round_in_place(rounded, PG_WEIGHTS_FP16);
    REQUIRE(pg_model_set_weight_storage(half, PG_WEIGHTS_FP16) == PG_OK);
    const std::vector<float> want = lora_run(rounded, 4);
    const std::vector<float> got = lora_run(half, 4);
    REQUIRE(want.size() == got.size());
    CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
    CHECK(want[3] < want[0]);  // it trains
    // Activation recomputation: the same bits for LoRA over a 16-bit base.
    const std::vector<float> recomputed = lora_run(half, 4, PG_ARITHMETIC_EXACT, 1);
    CHECK(std::memcmp(recomputed.data(), got.data(), got.size() * sizeof(float)) == 0);
    // Two trainers with their own adapters over the one 16-bit base, on two threads at once:
    // each run is the one it is alone.
    std::vector<float> first, second;
    std::thread t1([&] { first = lora_run(half, 4); });
    std::thread t2([&] { second = lora_run(half, 4); });
    t1.join();
    t2.join();
    CHECK(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(second.data(), got.data(), got.size() * sizeof(float)) == 0);
    pg_model_free(rounded);
    pg_model_free(half);
}
