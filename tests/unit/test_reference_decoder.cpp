// The scalar reference of the Llama-family decoder (tests/support/reference_decoder.hpp): its
// gradient against finite differences in double for each family's small shape, and grouped-query
// attention against the multi-head model with the KV heads repeated (Hugging Face's repeat_kv).
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "reference_decoder.hpp"

namespace {

using Tensors = pg::ref::NamedTensors<double>;

Tensors random_weights(const pg::ModelConfig& m, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 0.3);
    Tensors w;
    for (const auto& e : pg::ref::decoder_tensor_sizes(m)) {
        auto& t = w[e.first];
        t.resize(std::size_t(e.second));
        // Norm gains near 1, as trained models have them; everything else around 0.
        const bool gain = e.first.find("norm") != std::string::npos;
        for (auto& v : t) v = (gain ? 1.0 : 0.0) + normal(rng);
    }
    return w;
}

struct Batch {
    std::vector<int32_t> tokens, targets;
};

Batch random_batch(const pg::ModelConfig& m, int B, int T, uint32_t seed) {
    std::mt19937 rng(seed);
    Batch b;
    for (int i = 0; i < B * T; ++i) {
        b.tokens.push_back(int32_t(rng() % uint32_t(m.vocab_size)));
        b.targets.push_back(i % 4 == 3 ? -1 : int32_t(rng() % uint32_t(m.vocab_size)));  // some unscored
    }
    return b;
}

}  // namespace

TEST_CASE("the reference decoder's gradient matches finite differences in every family", "[model][families]") {
    for (const char* preset : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
        CAPTURE(preset);
        const pg::ModelConfig m = pg::model_preset(preset);
        const int B = 2, T = 5;
        Tensors w = random_weights(m, 7);
        const Batch batch = random_batch(m, B, T, 8);
        pg::ref::ReferenceDecoder<double> model(m, B, T);
        model.forward(w, batch.tokens.data(), batch.targets.data(), nullptr);
        const Tensors g = model.backward();
        std::mt19937 pick(9);
        int checked = 0;
        for (const auto& e : pg::ref::decoder_tensor_sizes(m)) {
            CAPTURE(e.first);
            auto& t = w[e.first];
            for (int k = 0; k < 4; ++k) {
                const std::size_t i = pick() % t.size();
                const double keep = t[i], h = 1e-5;
                t[i] = keep + h;
                const double up = model.forward(w, batch.tokens.data(), batch.targets.data(), nullptr);
                t[i] = keep - h;
                const double down = model.forward(w, batch.tokens.data(), batch.targets.data(), nullptr);
                t[i] = keep;
                CHECK(g.at(e.first)[i] == Approx((up - down) / (2 * h)).margin(1e-8).epsilon(1e-5));
                ++checked;
            }
        }
        CHECK(checked == 4 * int(pg::ref::decoder_tensor_sizes(m).size()));
    }
}

TEST_CASE("grouped-query attention equals multi-head attention with the KV heads repeated", "[model][families]") {
    // tiny-qwen2 has one KV head for 4 query heads; the same model with 4 KV heads, each a copy of
    // it, must give the same logits.
    const pg::ModelConfig gqa = pg::model_preset("tiny-qwen2");
    pg::ModelConfig mha = gqa;
    mha.n_kv_head = gqa.n_head;
    const int B = 1, T = 6, C = gqa.n_embd, hd = gqa.head_dim();
    const Tensors w = random_weights(gqa, 11);
    Tensors repeated = w;
    for (int l = 0; l < gqa.n_layer; ++l)
        for (const char* proj : {"k_proj", "v_proj"}) {
            const std::string p = "layers." + std::to_string(l) + ".self_attn." + proj;
            const auto& W = w.at(p + ".weight");
            const auto& b = w.at(p + ".bias");
            auto& Wr = repeated[p + ".weight"];
            auto& br = repeated[p + ".bias"];
            Wr.clear();
            br.clear();
            for (int h = 0; h < mha.n_head; ++h) {  // each query head reads KV head h / 4 = 0
                Wr.insert(Wr.end(), W.begin(), W.begin() + std::ptrdiff_t(hd) * C);
                br.insert(br.end(), b.begin(), b.begin() + hd);
            }
        }
    const Batch batch = random_batch(gqa, B, T, 12);
    const int V = gqa.vocab_size;
    std::vector<double> a(std::size_t(T) * V), b(a.size());
    pg::ref::ReferenceDecoder<double>(gqa, B, T).forward(w, batch.tokens.data(), batch.targets.data(), a.data());
    pg::ref::ReferenceDecoder<double>(mha, B, T).forward(repeated, batch.tokens.data(), batch.targets.data(),
                                                        b.data());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-12));
}
