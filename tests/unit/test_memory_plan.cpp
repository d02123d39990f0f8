// The training memory plan (train/memory_plan.hpp, pg_train_memory_plan): the engine's planned
// activation bytes are exactly what a trainer's engine holds after a step (full and frozen-base
// training, with and without recomputation, on 1 and 2 threads, GPT-2's and the Llama family's
// blocks); the weights and adapter of a 16-bit Llama-family base are what the model and the
// adapter hold; the largest batch within a
// budget fits it and the next one does not; a budget nothing fits is refused with the figures.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "frozen_base_support.hpp"
#include "lora/adapter.hpp"
#include "lora/lora_trainer.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "train/memory_plan.hpp"
#include "train/trainer.hpp"

namespace {

std::vector<int32_t> plan_tokens(int vocab) {
    std::vector<int32_t> data;
    for (int i = 0; i < 2000; ++i) data.push_back((i * 7 + i / 3) % vocab);
    return data;
}

}  // namespace

TEST_CASE("planned activation bytes are what the engine holds after a step", "[memory_plan]") {
    // GPT-2's block, and the Llama family's (GQA, SwiGLU, untied head, q/k biases, q/k norms).
    const std::string preset = GENERATE(as<std::string>{}, "tiny", "tiny-llama", "tiny-qwen2", "tiny-qwen3");
    INFO(preset);
    pg::ModelConfig mc = pg::model_preset(preset.c_str());
    const std::vector<int32_t> data = plan_tokens(mc.vocab_size);
    for (int threads : {1, 2}) {
        for (bool recompute : {false, true}) {
            pg::TrainConfig tc;
            tc.batch_size = 3;
            tc.seq_len = 12;
            tc.n_threads = threads;
            tc.recompute_activations = recompute;
            {
                pg::Model model(mc);
                pg::init_gpt2_params(model.config(), model.params(), 1);
                pg::Trainer t(model, tc);
                t.set_data(data.data(), data.size());
                t.step();
                pg::EngineOptions eo;
                eo.recompute = recompute;
                INFO("full training, threads " << threads << ", recompute " << recompute);
                CHECK(t.activation_bytes() ==
                      pg::Engine::planned_training_bytes(mc, tc.batch_size, tc.seq_len, eo, threads, true));
            }
            {
                pg::Model base(mc);
                pg::init_gpt2_params(base.config(), base.params(), 1);
                pg::lora::LoraConfig lc;
                lc.target_modules = pg::lora::family_targets(base.config());
                pg::lora::Adapter adapter = pg::lora::Adapter::create(base, lc);
                pg::lora::LoraTrainer t(base, adapter, tc, true);
                t.set_data(data.data(), data.size());
                t.step();
                pg::EngineOptions eo;
                eo.recompute = recompute;
                INFO("LoRA, threads " << threads << ", recompute " << recompute);
                CHECK(t.activation_bytes() ==
                      pg::Engine::planned_training_bytes(mc, tc.batch_size, tc.seq_len, eo, threads, false));
            }
        }
    }
}

TEST_CASE("the largest batch fits the budget, and no batch fitting is refused with the figures", "[memory_plan]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("phonegpt", &mc) == PG_OK);
    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.n_threads = 2;
    pg_memory_plan plan;
    plan.struct_size = sizeof plan;
    REQUIRE(pg_train_memory_plan(&mc, PG_WEIGHTS_FP32, nullptr, &tc, 1000, &plan) == PG_OK);
    CHECK(plan.batch_size == 32);
    CHECK(plan.peak_bytes == plan.weights_bytes + plan.adapter_bytes + plan.gradient_bytes + plan.optimizer_bytes +
                                 plan.activation_bytes + plan.checkpoint_bytes + plan.data_bytes + plan.runtime_bytes);
    CHECK(plan.gradient_bytes == plan.weights_bytes);
    CHECK(plan.data_bytes == 4000);

    const int64_t budget = plan.peak_bytes + 1;
    pg_memory_plan fit;
    fit.struct_size = sizeof fit;
    REQUIRE(pg_train_memory_max_batch(&mc, PG_WEIGHTS_FP32, nullptr, &tc, 1000, budget, &fit) == PG_OK);
    CHECK(fit.batch_size >= 32);
    CHECK(fit.peak_bytes <= budget);
    pg_train_config next = tc;
    next.batch_size = fit.batch_size + 1;
    pg_memory_plan over;
    over.struct_size = sizeof over;
    REQUIRE(pg_train_memory_plan(&mc, PG_WEIGHTS_FP32, nullptr, &next, 1000, &over) == PG_OK);
    CHECK(over.peak_bytes > budget);

    // LoRA over a 16-bit base: the weights are about half, no gradient for the base.
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    pg_memory_plan lora;
    lora.struct_size = sizeof lora;
    REQUIRE(pg_train_memory_plan(&mc, PG_WEIGHTS_FP16, &lc, &tc, 0, &lora) == PG_OK);
    CHECK(lora.weights_bytes < plan.weights_bytes * 3 / 5);
    CHECK(lora.adapter_bytes > 0);
    CHECK(lora.gradient_bytes == lora.adapter_bytes);

    CHECK(pg_train_memory_max_batch(&mc, PG_WEIGHTS_FP32, nullptr, &tc, 0, 1 << 20, &fit) == PG_ERR_OUT_OF_MEMORY);
    const std::string message = pg_last_error();
    CHECK(message.find("batch_size 1") != std::string::npos);
    CHECK(message.find("budget of 1.0 MiB") != std::string::npos);
    CHECK(pg_train_memory_plan(&mc, PG_WEIGHTS_FP16, nullptr, &tc, 0, &plan) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("full training needs fp32") != std::string::npos);

    // A session whose configuration does not fit its memory budget is refused before it allocates.
    pg_model* model = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &model) == PG_OK);
    pg_train_session_config sc;
    pg_train_session_config_default(&sc);
    sc.memory_budget_bytes = 16 << 20;
    pg_train_session* s = nullptr;
    CHECK(pg_train_session_create(model, &tc, &sc, "/nonexistent/never-written.pgc", &s) == PG_ERR_OUT_OF_MEMORY);
    CHECK(std::string(pg_last_error()).find("exceeds memory_budget_bytes 16777216") != std::string::npos);
    CHECK(s == nullptr);
    pg_model_free(model);
}

TEST_CASE("the plan's weights and adapter are what a 16-bit Llama-family base and its adapter hold", "[memory_plan]") {
    for (const char* preset : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
        for (pg_weight_storage storage : {PG_WEIGHTS_FP32, PG_WEIGHTS_FP16, PG_WEIGHTS_BF16}) {
            INFO(preset << ", storage " << int(storage));
            pg_model_config mc;
            REQUIRE(pg_model_config_preset(preset, &mc) == PG_OK);
            pg_train_config tc;
            pg_train_config_default(&tc);
            tc.batch_size = 2;
            tc.n_threads = 2;
            pg_lora_config lc;
            pg_lora_config_default(&lc);
            lc.target_modules = frozen_base_test::all_linears_of(mc);
            lc.rank = 4;
            pg_memory_plan plan;
            plan.struct_size = sizeof plan;
            REQUIRE(pg_train_memory_plan(&mc, storage, &lc, &tc, 0, &plan) == PG_OK);
            pg_model* m = nullptr;
            REQUIRE(pg_model_create(&mc, 1, &m) == PG_OK);
            REQUIRE(pg_model_allow_untrained_base(m, 1) == PG_OK);
            pg_lora_adapter* a = nullptr;
            REQUIRE(pg_lora_adapter_create(m, &lc, &a) == PG_OK);
            REQUIRE(pg_model_set_weight_storage(m, storage) == PG_OK);
            int64_t held = 0, adapter_params = 0;
            REQUIRE(pg_model_weight_storage(m, nullptr, &held) == PG_OK);
            REQUIRE(pg_lora_adapter_num_params(a, &adapter_params) == PG_OK);
            CHECK(plan.weights_bytes == held);
            CHECK(plan.adapter_bytes == 4 * adapter_params);
            CHECK(plan.optimizer_bytes == 8 * adapter_params);
            pg_lora_adapter_free(a);
            pg_model_free(m);
        }
    }
}
