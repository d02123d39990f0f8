// The engine running the Llama family (RMSNorm, rotary positions with Llama 3's scaling,
// grouped- and multi-query attention, q/k norms, q/k/v biases, SwiGLU, a separate head): its
// logits and every parameter gradient against the scalar reference decoder
// (tests/support/reference_decoder.hpp) for each family's small shape, the KV-cached pass against
// the full one, recomputation bit for bit, the public tensor table's Hugging Face names, and
// training (full and LoRA) through the C API.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/engine.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "reference_decoder.hpp"
#include "test_support.hpp"

namespace {

const char* const kFamilies[] = {"tiny-llama", "tiny-qwen2", "tiny-qwen3"};

// Random weights in the engine's layout: norm gains near 1, everything else around 0.
std::vector<float> random_params(const pg::ModelConfig& cfg, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    std::vector<float> params(size_t(pg::ParamLayout(cfg).total));
    for (const pg::TensorEntry& e : pg::build_tensor_table(cfg)) {
        const bool gain = e.name.find("norm") != std::string::npos;
        for (int64_t i = 0; i < e.numel; ++i) params[size_t(e.offset + i)] = (gain ? 1.0f : 0.0f) + normal(rng);
    }
    return params;
}

// The reference names a tensor as Hugging Face does without the "model." prefix.
std::string reference_name(const std::string& public_name) {
    const std::string prefix = "model.";
    return public_name.compare(0, prefix.size(), prefix) == 0 ? public_name.substr(prefix.size()) : public_name;
}

pg::ref::NamedTensors<double> to_reference(const pg::ModelConfig& cfg, const std::vector<float>& params) {
    pg::ref::NamedTensors<double> w;
    for (const pg::TensorEntry& e : pg::build_tensor_table(cfg))
        w[reference_name(e.name)].assign(params.begin() + e.offset, params.begin() + e.offset + e.numel);
    return w;
}

struct Batch {
    std::vector<int32_t> tokens, targets;
    int count = 0;
};

Batch random_batch(const pg::ModelConfig& cfg, int B, int T, uint32_t seed) {
    std::mt19937 rng(seed);
    Batch b;
    for (int i = 0; i < B * T; ++i) {
        b.tokens.push_back(int32_t(rng() % uint32_t(cfg.vocab_size)));
        const bool scored = i % 5 != 4;
        b.targets.push_back(scored ? int32_t(rng() % uint32_t(cfg.vocab_size)) : -1);
        b.count += scored;
    }
    return b;
}

double max_abs(const float* a, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i])));
    return m;
}

}  // namespace

TEST_CASE("the public tensor table names the Llama family as Hugging Face does and tiles the parameters",
          "[model][decoder]") {
    const pg::ModelConfig q3 = pg::model_preset("tiny-qwen3");
    const auto table = pg::build_tensor_table(q3);
    std::vector<std::string> layer0;
    for (const auto& e : table)
        if (e.layer == 0) layer0.push_back(e.name);
    const std::string p = "model.layers.0.";
    CHECK(layer0 == std::vector<std::string>{p + "input_layernorm.weight", p + "self_attn.q_proj.weight",
                                             p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
                                             p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight",
                                             p + "self_attn.o_proj.weight", p + "post_attention_layernorm.weight",
                                             p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight",
                                             p + "mlp.down_proj.weight"});
    CHECK(table.front().name == "model.embed_tokens.weight");
    CHECK(table[table.size() - 2].name == "model.norm.weight");
    CHECK(table.back().name == "lm_head.weight");
    // q_proj of tiny-qwen3 is [n_head * head_dim, C] = [64, 32]; o_proj the other way round.
    CHECK(table[2].shape[0] == 64);
    CHECK(table[2].shape[1] == 32);
    for (const char* family : kFamilies) {
        CAPTURE(family);
        const pg::ModelConfig cfg = pg::model_preset(family);
        const auto t = pg::build_tensor_table(cfg);
        // Every Hugging Face tensor the reference has, with its size, and nothing else.
        const auto sizes = pg::ref::decoder_tensor_sizes(cfg);
        REQUIRE(t.size() == sizes.size());
        std::vector<int64_t> offsets;
        int64_t covered = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            CHECK(reference_name(t[i].name) == sizes[i].first);
            CHECK(t[i].numel == sizes[i].second);
            covered += t[i].numel;
            offsets.push_back(t[i].offset);
        }
        CHECK(covered == pg::ParamLayout(cfg).total);
        CHECK(covered == pg::count_params(cfg));
        std::sort(offsets.begin(), offsets.end());
        CHECK(std::adjacent_find(offsets.begin(), offsets.end()) == offsets.end());
    }
    // GPT-2 keeps llm.c's names.
    CHECK(pg::build_tensor_table(pg::model_preset("tiny")).front().name == "wte");
}

TEST_CASE("the engine's Llama-family logits and every gradient match the reference decoder", "[model][decoder]") {
    for (const char* family : kFamilies) {
        for (int threads : {1, 2}) {
            CAPTURE(family, threads);
            const pg::ModelConfig cfg = pg::model_preset(family);
            const int B = 2, T = 11, V = cfg.vocab_size;
            const std::vector<float> params = random_params(cfg, 3);
            const Batch batch = random_batch(cfg, B, T, 4);
            pg::ThreadPool pool(threads);
            pg::Engine engine(cfg, B, cfg.n_ctx);  // T below max_T: the angle table's first rows

            std::vector<float> logits(size_t(B) * T * V);
            const pg::LossSum loss = engine.forward(params.data(), batch.tokens.data(), batch.targets.data(), B, T,
                                                    nullptr, logits.data(), pool);
            auto w = to_reference(cfg, params);
            pg::ref::ReferenceDecoder<double> ref(cfg, B, T);
            std::vector<double> ref_logits(logits.size());
            const double ref_loss = ref.forward(w, batch.tokens.data(), batch.targets.data(), ref_logits.data());
            CHECK(loss.count == batch.count);
            CHECK(loss.mean() == Approx(ref_loss).epsilon(1e-5));
            double worst = 0.0;
            for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::fabs(logits[i] - ref_logits[i]));
            CHECK(worst < 2e-5 * std::max(1.0, max_abs(logits.data(), logits.size())));

            std::vector<float> grads(params.size(), 0.0f);
            const pg::LossSum trained = engine.forward_backward(params.data(), grads.data(), batch.tokens.data(),
                                                                batch.targets.data(), B, T, 1.0f / float(batch.count),
                                                                pg::Dropout{}, pool);
            CHECK(trained.mean() == Approx(ref_loss).epsilon(1e-5));
            const auto ref_grads = ref.backward();
            for (const pg::TensorEntry& e : pg::build_tensor_table(cfg)) {
                CAPTURE(e.name);
                const std::vector<double>& r = ref_grads.at(reference_name(e.name));
                double scale = 0.0, err = 0.0;
                for (int64_t i = 0; i < e.numel; ++i) {
                    scale = std::max(scale, std::fabs(r[size_t(i)]));
                    err = std::max(err, std::fabs(double(grads[size_t(e.offset + i)]) - r[size_t(i)]));
                }
                CHECK(scale > 0.0);  // every tensor takes part
                CHECK(err <= 1e-4 * scale + 1e-7);
            }
        }
    }
}

TEST_CASE("Llama-family recomputation gives the same bits, and the KV-cached pass the full pass's logits",
          "[model][decoder]") {
    for (const char* family : kFamilies) {
        CAPTURE(family);
        const pg::ModelConfig cfg = pg::model_preset(family);
        const int B = 2, T = 16, V = cfg.vocab_size;
        const std::vector<float> params = random_params(cfg, 5);
        const Batch batch = random_batch(cfg, B, T, 6);
        pg::ThreadPool pool(2);
        pg::Dropout dropout;
        dropout.p = 0.1f;
        dropout.seed = 9;
        std::vector<float> kept(params.size(), 0.0f), recomputed(params.size(), 0.0f);
        pg::Engine fast(cfg, B, T);
        pg::EngineOptions lean_options;
        lean_options.recompute = true;
        pg::Engine lean(cfg, B, T, lean_options);
        const float scale = 1.0f / float(batch.count);
        const pg::LossSum a = fast.forward_backward(params.data(), kept.data(), batch.tokens.data(),
                                                    batch.targets.data(), B, T, scale, dropout, pool);
        const pg::LossSum b = lean.forward_backward(params.data(), recomputed.data(), batch.tokens.data(),
                                                    batch.targets.data(), B, T, scale, dropout, pool);
        CHECK(a.sum == b.sum);
        CHECK(std::memcmp(kept.data(), recomputed.data(), sizeof(float) * kept.size()) == 0);
        CHECK(lean.activation_bytes() < fast.activation_bytes());

        // The full pass over one sequence, then the cached one: four positions at once, then
        // one at a time (the KV cache holds kv_heads() heads only).
        std::vector<float> full(size_t(T) * V);
        fast.forward(params.data(), batch.tokens.data(), nullptr, 1, T, nullptr, full.data(), pool);
        pg::KvCache cache(cfg);
        CHECK(cache.keys.size() == size_t(cfg.n_layer) * cfg.n_ctx * cfg.kv_width());
        const pg::WeightsView view = pg::WeightsView::fp32(pg::ParamLayout(cfg), params.data());
        std::vector<float> step(static_cast<size_t>(V));
        double worst = 0.0;
        fast.forward_cached(view, batch.tokens.data(), 0, 4, cache, step.data(), pool);
        for (int v = 0; v < V; ++v) worst = std::max(worst, std::fabs(double(step[size_t(v)]) - full[size_t(3 * V + v)]));
        for (int t = 4; t < T; ++t) {
            fast.forward_cached(view, batch.tokens.data() + t, t, 1, cache, step.data(), pool);
            for (int v = 0; v < V; ++v)
                worst = std::max(worst, std::fabs(double(step[size_t(v)]) - full[size_t(t) * V + v]));
        }
        CHECK(worst < 1e-5 * std::max(1.0, max_abs(full.data(), full.size())));
    }
}

namespace {

pg_model* llama_model(const char* preset, uint64_t seed) {
    pg_model_config mc;
    pg_model_config_default(&mc);
    REQUIRE(pg_model_config_preset(preset, &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, seed, &m) == PG_OK);
    return m;
}

// A periodic text the tiny vocabulary can learn.
std::vector<int32_t> periodic_data() {
    std::vector<int32_t> data;
    for (int i = 0; i < 2000; ++i) data.push_back(int32_t((i * 7) % 13 + (i % 3)));
    return data;
}

pg_train_config small_training() {
    pg_train_config c;
    pg_train_config_default(&c);
    c.batch_size = 4;
    c.seq_len = 16;
    c.schedule = PG_LR_CONSTANT;
    c.lr_max = 1e-2f;
    c.warmup_steps = 0;
    c.weight_decay = 0.0f;
    c.n_threads = 2;
    c.seed = 5;
    return c;
}

double mean_of(const std::vector<float>& v, size_t from, size_t to) {
    double s = 0.0;
    for (size_t i = from; i < to; ++i) s += v[i];
    return s / double(to - from);
}

}  // namespace

TEST_CASE("a Llama-family model trains in full and through a LoRA adapter", "[model][decoder]") {
    const std::vector<int32_t> data = periodic_data();
    SECTION("full training") {
        pg_model* m = llama_model("tiny-qwen3", 3);
        const pg_train_config tc = small_training();
        pg_trainer* t = nullptr;
        REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
        REQUIRE(pg_trainer_set_data(t, data.data(), data.size()) == PG_OK);
        std::vector<float> losses;
        for (int i = 0; i < 30; ++i) {
            pg_step_result r;
            r.struct_size = sizeof r;
            REQUIRE(pg_trainer_step(t, &r) == PG_OK);
            losses.push_back(r.loss);
        }
        INFO("first " << losses.front() << ", last " << losses.back());
        CHECK(mean_of(losses, 25, 30) < 0.7 * mean_of(losses, 0, 5));
        pg_trainer_free(t);
        pg_model_free(m);
    }
    SECTION("LoRA on every linear, then generation in a session with the adapter") {
        pg_model* base = llama_model("tiny-llama", 11);
        REQUIRE(pg_model_allow_untrained_base(base, 1) == PG_OK);
        float* wte = nullptr;  // a stronger embedding, so the frozen tied head can express the text
        REQUIRE(pg_model_tensor_data_mutable(base, 0, &wte) == PG_OK);
        for (int i = 0; i < 68 * 32; ++i) wte[i] *= 25.0f;
        pg_lora_config c;
        pg_lora_config_default(&c);
        c.rank = 4;
        c.alpha = 8.0f;
        c.target_modules = PG_LORA_LLAMA_ALL_LINEARS;
        pg_lora_adapter* adapter = nullptr;
        REQUIRE(pg_lora_adapter_create(base, &c, &adapter) == PG_OK);
        const pg_train_config tc = small_training();
        pg_lora_trainer* t = nullptr;
        REQUIRE(pg_lora_trainer_create(base, adapter, &tc, &t) == PG_OK);
        REQUIRE(pg_lora_trainer_set_data(t, data.data(), data.size()) == PG_OK);
        std::vector<float> losses;
        for (int i = 0; i < 40; ++i) {
            pg_step_result r;
            r.struct_size = sizeof r;
            REQUIRE(pg_lora_trainer_step(t, &r) == PG_OK);
            losses.push_back(r.loss);
        }
        pg_lora_trainer_free(t);
        INFO("first " << losses.front() << ", last " << losses.back());
        CHECK(mean_of(losses, 35, 40) < 0.8 * mean_of(losses, 0, 5));

        // The session's cached steps go through the adapter's hook: its logits differ from the
        // base's, and detaching gives the base's back bit for bit.
        pg_session* s = nullptr;
        REQUIRE(pg_session_create(base, nullptr, &s) == PG_OK);
        const std::vector<int32_t> prompt(data.begin(), data.begin() + 9);
        std::vector<float> plain(65), adapted(65), again(65);
        REQUIRE(pg_session_append(s, prompt.data(), prompt.size()) == PG_OK);
        REQUIRE(pg_session_logits(s, plain.data(), plain.size()) == PG_OK);
        REQUIRE(pg_session_reset(s) == PG_OK);
        REQUIRE(pg_session_attach_adapter(s, adapter) == PG_OK);
        REQUIRE(pg_session_append(s, prompt.data(), prompt.size()) == PG_OK);
        REQUIRE(pg_session_logits(s, adapted.data(), adapted.size()) == PG_OK);
        CHECK(std::memcmp(plain.data(), adapted.data(), sizeof(float) * plain.size()) != 0);
        // The adapter predicts the periodic text's next token better than the base.
        const int next = data[prompt.size()];
        auto log_softmax_at = [](const std::vector<float>& l, int i) {
            double mx = *std::max_element(l.begin(), l.end()), z = 0.0;
            for (float v : l) z += std::exp(double(v) - mx);
            return double(l[size_t(i)]) - mx - std::log(z);
        };
        CHECK(log_softmax_at(adapted, next) > log_softmax_at(plain, next));
        REQUIRE(pg_session_detach_adapter(s) == PG_OK);
        REQUIRE(pg_session_reset(s) == PG_OK);
        REQUIRE(pg_session_append(s, prompt.data(), prompt.size()) == PG_OK);
        REQUIRE(pg_session_logits(s, again.data(), again.size()) == PG_OK);
        CHECK(std::memcmp(plain.data(), again.data(), sizeof(float) * plain.size()) == 0);
        pg_session_free(s);
        pg_lora_adapter_free(adapter);
        pg_model_free(base);
    }
}

TEST_CASE("a Llama-family model saves and loads with its architecture, mapped and 16-bit too", "[model][decoder]") {
    for (const char* family : {"tiny-qwen2", "tiny-qwen3"}) {
        CAPTURE(family);
        pg_model* m = llama_model(family, 8);
        pg_model_config want;
        want.struct_size = sizeof want;
        REQUIRE(pg_model_get_config(m, &want) == PG_OK);
        const float* p = nullptr;
        int64_t n = 0;
        REQUIRE(pg_model_params(m, &p, &n) == PG_OK);
        const std::vector<float> weights(p, p + n);
        const std::string path = pg_test::tmp_dir() + "/decoder_" + family + ".pgck";
        pg_save_options mappable;
        pg_save_options_default(&mappable);
        mappable.align_for_mapping = 1;
        for (const pg_save_options* options : {static_cast<const pg_save_options*>(nullptr),
                                               static_cast<const pg_save_options*>(&mappable)}) {
            REQUIRE(pg_model_save(m, path.c_str(), options) == PG_OK);
            pg_load_options lo;
            pg_load_options_default(&lo);
            lo.map_weights = options ? 1 : 0;
            pg_model* back = nullptr;
            REQUIRE(pg_model_load_with(path.c_str(), &lo, &back) == PG_OK);
            pg_model_config got;
            got.struct_size = sizeof got;
            REQUIRE(pg_model_get_config(back, &got) == PG_OK);
            CHECK(std::memcmp(&got, &want, sizeof got) == 0);  // the geometry comes from the file
            // Tensor by tensor (a mapped model's weights are the file's), names and values.
            int32_t count = 0, back_count = 0;
            REQUIRE(pg_model_num_tensors(m, &count) == PG_OK);
            REQUIRE(pg_model_num_tensors(back, &back_count) == PG_OK);
            REQUIRE(count == back_count);
            for (int32_t i = 0; i < count; ++i) {
                pg_tensor_info a, b;
                a.struct_size = b.struct_size = sizeof a;
                REQUIRE(pg_model_tensor_info(m, i, &a) == PG_OK);
                REQUIRE(pg_model_tensor_info(back, i, &b) == PG_OK);
                CHECK(std::string(a.name) == b.name);
                REQUIRE(a.numel == b.numel);
                REQUIRE(b.data != nullptr);
                CHECK(std::memcmp(a.data, b.data, sizeof(float) * size_t(a.numel)) == 0);
                CHECK(std::memcmp(a.data, weights.data() + a.offset, sizeof(float) * size_t(a.numel)) == 0);
            }
            pg_model_free(back);
        }
        // A 16-bit base keeps the untied head in 16 bits too, and still runs.
        pg_save_options half;
        pg_save_options_default(&half);
        half.weight_storage = PG_WEIGHTS_BF16;
        REQUIRE(pg_model_save(m, path.c_str(), &half) == PG_OK);
        pg_model* back = nullptr;
        REQUIRE(pg_model_load(path.c_str(), &back) == PG_OK);
        pg_session* s = nullptr;
        REQUIRE(pg_session_create(back, nullptr, &s) == PG_OK);
        const int32_t prompt[3] = {1, 2, 3};
        std::vector<float> logits(65);
        REQUIRE(pg_session_append(s, prompt, 3) == PG_OK);
        REQUIRE(pg_session_logits(s, logits.data(), logits.size()) == PG_OK);
        CHECK(std::isfinite(logits[0]));
        pg_session_free(s);
        pg_model_free(back);
        // llm.c and GPT-2 safetensors files cannot hold it: refused, nothing written.
        const std::string llmc = pg_test::tmp_dir() + "/decoder_" + family + ".bin";
        std::remove(llmc.c_str());
        CHECK(pg_model_export(m, PG_FORMAT_LLMC, llmc.c_str()) == PG_ERR_UNSUPPORTED);
        CHECK(std::string(pg_last_error()).find("Llama-family") != std::string::npos);
        std::FILE* written = std::fopen(llmc.c_str(), "rb");
        CHECK(written == nullptr);
        if (written) std::fclose(written);
        pg_model_free(m);
    }
}
