// A frozen base held in quantized blocks (pg_model_set_weight_storage PG_WEIGHTS_Q8_0 / _Q4_0):
//   - with exact arithmetic every pass (batched logits, the KV-cached step, LoRA training steps)
//     equals, bit for bit, the same pass over an fp32 model holding the dequantized values;
//   - with int8 arithmetic (pg_arithmetic, on a session or a LoRA trainer) the logits stay
//     within the int8 products' error of the exact ones;
//   - merging an adapter gives an fp32 copy of the dequantized values with the update added,
//     bit for bit the merge over that fp32 model;
//   - the base takes about a quarter (q8_0) or less of its fp32 bytes, keeps the fp32
//     fingerprint, and what needs fp32 weights, or an arithmetic that does not fit, is refused
//     by name.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/half_float.hpp"
#include "kernels/quant_blocks.hpp"
#include "phonegpt/phonegpt.h"
#include "frozen_base_support.hpp"
#include "test_support.hpp"

using namespace frozen_base_test;

namespace {

constexpr int32_t kWidth = 32;  // a multiple of the quantized block

bool quantized_tensor(const std::string& name) {
    for (const char* s : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"})
        if (name.size() > std::strlen(s) && name.compare(name.size() - std::strlen(s), std::string::npos, s) == 0)
            return true;
    return name == "wte";
}

// The fp32 twin of a quantized base: its quantized tensors replaced by their dequantized values
// (the embedding in q8_0 under both storages).
void dequantize_in_place(pg_model* m, pg_weight_storage storage) {
    int32_t n = 0;
    REQUIRE(pg_model_num_tensors(m, &n) == PG_OK);
    for (int32_t i = 0; i < n; ++i) {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(pg_model_tensor_info(m, i, &info) == PG_OK);
        if (!quantized_tensor(info.name)) continue;
        const auto format = storage == PG_WEIGHTS_Q4_0 && std::string(info.name) != "wte"
                                ? pg::kernels::QuantFormat::q4_0
                                : pg::kernels::QuantFormat::q8_0;
        const int64_t cols = info.shape[info.n_dims - 1], rows = info.numel / cols;
        std::vector<uint8_t> blocks(pg::kernels::quant_matrix_bytes(format, rows, cols));
        float* w = nullptr;
        REQUIRE(pg_model_tensor_data_mutable(m, i, &w) == PG_OK);
        pg::kernels::quantize_rows(format, w, rows, cols, cols, blocks.data(), info.name);
        pg::kernels::dequantize(format, blocks.data(), 0, info.numel, w);
    }
}

double relative_rms(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    double e = 0, w = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        e += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        w += double(want[i]) * want[i];
    }
    return std::sqrt(e / w);
}

}  // namespace

TEST_CASE("a quantized base holds its blocks, keeps the fp32 fingerprint and refuses what needs fp32",
          "[quant][lora]") {
    pg_model* m = tiny_base(7, 1.0f, kWidth);
    int64_t bytes32 = 0, bytes8 = 0;
    REQUIRE(pg_model_weight_storage(m, nullptr, &bytes32) == PG_OK);
    pg_lora_adapter* a = adapter_with_b(m, PG_LORA_ATTN_C_ATTN);  // made for the fp32 base
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.arithmetic = PG_ARITHMETIC_INT8;
    pg_lora_trainer* lt = nullptr;
    CHECK(pg_lora_trainer_create(m, a, &tc, &lt) == PG_ERR_INVALID_ARGUMENT);  // int8 over fp32
    CHECK(std::string(pg_last_error()).find("arithmetic") != std::string::npos);

    REQUIRE(pg_model_set_weight_storage(m, PG_WEIGHTS_Q8_0) == PG_OK);
    pg_weight_storage storage = PG_WEIGHTS_FP32;
    REQUIRE(pg_model_weight_storage(m, &storage, &bytes8) == PG_OK);
    CHECK(storage == PG_WEIGHTS_Q8_0);
    // wpe, biases and LayerNorms stay fp32 and are a larger share of this tiny model than of a
    // real one (where q8_0 keeps 27% of the bytes).
    CHECK(bytes8 < bytes32 * 0.45);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_Q8_0) == PG_OK);  // the same again: no-op
    // The memory plan counts the blocks as the model holds them (within its 64-byte alignment).
    pg_model_config mc;
    pg_model_config_default(&mc);
    REQUIRE(pg_model_get_config(m, &mc) == PG_OK);
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    pg_train_config plan_cfg;
    pg_train_config_default(&plan_cfg);
    plan_cfg.batch_size = 2;
    pg_memory_plan plan;
    plan.struct_size = sizeof plan;
    REQUIRE(pg_train_memory_plan(&mc, PG_WEIGHTS_Q8_0, &lc, &plan_cfg, 0, &plan) == PG_OK);
    CHECK(plan.weights_bytes <= bytes8);
    CHECK(plan.weights_bytes > bytes8 - 1024);
    CHECK(pg_lora_adapter_check_base(a, m) == PG_OK);

    const std::string path = pg_test::tmp_dir() + "/quantized_base_model.pgck";
    CHECK(pg_model_save(m, path.c_str(), nullptr) == PG_OK);  // in its blocks (test_quantized_checkpoint.cpp)
    pg_save_options as_fp16;
    pg_save_options_default(&as_fp16);
    as_fp16.weight_storage = PG_WEIGHTS_FP16;
    CHECK(pg_model_save(m, path.c_str(), &as_fp16) == PG_ERR_STATE);
    CHECK(std::string(pg_model_last_error(m)).find("q8_0") != std::string::npos);
    pg_train_config full_cfg;
    pg_train_config_default(&full_cfg);
    pg_trainer* full = nullptr;
    CHECK(pg_trainer_create(m, &full_cfg, &full) == PG_ERR_STATE);
    CHECK(std::string(pg_last_error()).find("held in q8_0") != std::string::npos);
    pg_model* merged = nullptr;  // into an fp32 copy of the dequantized values (tested below)
    REQUIRE(pg_lora_merge(m, a, 1, &merged) == PG_OK);
    REQUIRE(pg_model_weight_storage(merged, &storage, nullptr) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP32);
    pg_model_free(merged);
    const float* p = nullptr;
    int64_t n = 0;
    CHECK(pg_model_params(m, &p, &n) == PG_ERR_STATE);
    pg_tensor_info info;
    info.struct_size = sizeof info;
    REQUIRE(pg_model_tensor_info(m, 0, &info) == PG_OK);  // wte: names and shapes, no data
    CHECK(info.data == nullptr);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_Q4_0) == PG_ERR_STATE);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP16) == PG_ERR_STATE);
    CHECK(pg_model_set_weight_storage(m, PG_WEIGHTS_FP32) == PG_ERR_STATE);
    CHECK(pg_model_set_weight_storage(m, pg_weight_storage(7)) == PG_ERR_INVALID_ARGUMENT);

    // Arithmetic that does not fit the storage is refused by name.
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.arithmetic = PG_ARITHMETIC_FP16;
    pg_session* s = nullptr;
    CHECK(pg_session_create(m, &sc, &s) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("config->arithmetic") != std::string::npos);
    sc.arithmetic = pg_arithmetic(9);
    CHECK(pg_session_create(m, &sc, &s) == PG_ERR_INVALID_ARGUMENT);
    CHECK(s == nullptr);
    pg_lora_adapter_free(a);
    pg_model_free(m);

    // Rows that are not whole blocks (width 16) cannot be quantized; the model stays fp32.
    pg_model* narrow = tiny_base(7, 1.0f);
    CHECK(pg_model_set_weight_storage(narrow, PG_WEIGHTS_Q4_0) == PG_ERR_UNSUPPORTED);
    CHECK(std::string(pg_model_last_error(narrow)).find("multiple of the quantized block") != std::string::npos);
    REQUIRE(pg_model_weight_storage(narrow, &storage, nullptr) == PG_OK);
    CHECK(storage == PG_WEIGHTS_FP32);
    pg_model_free(narrow);

    // Full training takes only the exact arithmetic.
    pg_model* fp32 = tiny_base(7, 1.0f, kWidth);
    full_cfg.arithmetic = PG_ARITHMETIC_INT8;
    CHECK(pg_trainer_create(fp32, &full_cfg, &full) == PG_ERR_INVALID_ARGUMENT);
    CHECK(full == nullptr);
    pg_model_free(fp32);
}

TEST_CASE("exact passes over a quantized base equal the fp32 model over its dequantized values",
          "[quant][lora]") {
    for (const pg_weight_storage storage : {PG_WEIGHTS_Q8_0, PG_WEIGHTS_Q4_0}) {
        for (const bool from_fp16 : {false, true}) {
            CAPTURE(storage, from_fp16);
            pg_model* q = tiny_base(11, 1.0f, kWidth);
            pg_model* twin = tiny_base(11, 1.0f, kWidth);
            if (from_fp16) {  // quantized from the 16-bit values: the twin rounds to fp16 first
                REQUIRE(pg_model_set_weight_storage(q, PG_WEIGHTS_FP16) == PG_OK);
                pg_model* rounded = twin;
                int32_t n = 0;
                REQUIRE(pg_model_num_tensors(rounded, &n) == PG_OK);
                for (int32_t i = 0; i < n; ++i) {
                    pg_tensor_info info;
                    info.struct_size = sizeof info;
                    REQUIRE(pg_model_tensor_info(rounded, i, &info) == PG_OK);
                    if (!quantized_tensor(info.name)) continue;
                    float* w = nullptr;
                    REQUIRE(pg_model_tensor_data_mutable(rounded, i, &w) == PG_OK);
                    for (int64_t k = 0; k < info.numel; ++k)
                        w[k] = pg::kernels::fp16_to_float(pg::kernels::float_to_fp16(w[k]));
                }
            }
            REQUIRE(pg_model_set_weight_storage(q, storage) == PG_OK);
            dequantize_in_place(twin, storage);
            CHECK(session_outputs(q, true) == session_outputs(twin, true));
            CHECK(lora_run(q, 2) == lora_run(twin, 2));
            // Merging into a copy: the adapter added to the dequantized values, as over the twin.
            pg_lora_adapter* aq = adapter_with_b(q, PG_LORA_ALL_LINEARS);
            pg_lora_adapter* at = adapter_with_b(twin, PG_LORA_ALL_LINEARS);
            pg_model *mq = nullptr, *mt = nullptr;
            REQUIRE(pg_lora_merge(q, aq, 1, &mq) == PG_OK);
            REQUIRE(pg_lora_merge(twin, at, 1, &mt) == PG_OK);
            const float *pq = nullptr, *pt = nullptr;
            int64_t nq = 0, nt = 0;
            REQUIRE(pg_model_params(mq, &pq, &nq) == PG_OK);
            REQUIRE(pg_model_params(mt, &pt, &nt) == PG_OK);
            CHECK((nq == nt && std::memcmp(pq, pt, size_t(nq) * sizeof(float)) == 0));
            CHECK(pg_model_set_weight_storage(mq, PG_WEIGHTS_FP16) == PG_OK);  // and a 16-bit copy of it
            pg_model_free(mq);
            pg_model_free(mt);
            pg_lora_adapter_free(aq);
            pg_lora_adapter_free(at);
            pg_model_free(q);
            pg_model_free(twin);
        }
    }
}

TEST_CASE("int8 arithmetic over a quantized base stays within its stated error of the exact products",
          "[quant][lora]") {
    pg_model* q = tiny_base(5, 1.0f, kWidth);
    REQUIRE(pg_model_set_weight_storage(q, PG_WEIGHTS_Q8_0) == PG_OK);
    const std::vector<float> exact = session_outputs(q, true);
    const std::vector<float> int8 = session_outputs(q, true, PG_ARITHMETIC_INT8);
    const double err = relative_rms(int8, exact);
    CHECK(err > 0.0);     // the int8 products really ran
    CHECK(err < 2e-2);    // activations rounded to 8 bits per block of 32
    const std::vector<float> trained_exact = lora_run(q, 3), trained_int8 = lora_run(q, 3, PG_ARITHMETIC_INT8);
    for (int s = 0; s < 3; ++s) CHECK(std::fabs(trained_int8[size_t(s)] - trained_exact[size_t(s)]) < 2e-2 * trained_exact[size_t(s)]);
    pg_model_free(q);
}
