// LoRA on Llama-family bases by Hugging Face module name (q_proj ... down_proj): the targets, the
// family's default and the refusal of another family's names; a sliced target's term on its rows
// of the fused product (applied = merged, unmerge, the chain rule, finite differences, dropout);
// the adapter file and PEFT round trips with Llama keys; training, sessions, 16-bit bases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "lora_test_support.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "lora/lora_hook.hpp"
#include "lora/merge.hpp"
#include "lora/peft.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt.h"
#include "phonegpt/phonegpt_coordinator.h"
#include "test_support.hpp"

namespace {

using lora_test::randomise_b;
using lora_test::tokens;
using lora_test::check_finite_differences;
using lora_test::logits_of;
using lora_test::max_abs;
using lora_test::max_diff;


pg::Model llama_base(const char* preset, uint64_t seed) {
    pg::Model m(pg::model_preset(preset));
    pg::init_gpt2_params(m.config(), m.params(), seed);
    return m;
}

pg::lora::LoraConfig targets(uint32_t bits, int rank) {
    pg::lora::LoraConfig c;
    c.rank = rank;
    c.alpha = 2.0f * rank;
    c.target_modules = bits;
    return c;
}

constexpr uint32_t kSome = PG_LORA_Q_PROJ | PG_LORA_V_PROJ | PG_LORA_UP_PROJ;  // partial slices of both fused linears

}  // namespace

TEST_CASE("lora llama: module names, the family's default, another family's names refused", "[lora][lora_llama]") {
    const pg::Model qwen3 = llama_base("tiny-qwen3", 1);  // head_dim 16: q is 64 wide, twice n_embd
    const pg::ModelConfig& c = qwen3.config();
    SECTION("the default is PEFT's for llama: q_proj and v_proj") {
        const pg::lora::Adapter a = pg::lora::Adapter::create(qwen3, pg::lora::LoraConfig{});
        CHECK(a.config().target_modules == (PG_LORA_Q_PROJ | PG_LORA_V_PROJ));
        REQUIRE(a.tensors().size() == 2 * 2 * size_t(c.n_layer));
        CHECK(a.tensors()[0].name == "model.layers.0.self_attn.q_proj.lora_A.weight");
        CHECK(a.tensors()[1].name == "model.layers.0.self_attn.q_proj.lora_B.weight");
        CHECK(a.tensors()[1].shape == std::array<int64_t, 2>{64, 8});
        CHECK(a.tensors()[3].name == "model.layers.0.self_attn.v_proj.lora_B.weight");
        CHECK(a.tensors()[3].shape == std::array<int64_t, 2>{2 * 16, 8});
        CHECK(pg::lora::peft_tensor_name(a.tensors()[0]) == "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
    }
    SECTION("every target's shape and rows of its fused linear") {
        const pg::lora::Adapter a = pg::lora::Adapter::create(qwen3, targets(PG_LORA_LLAMA_ALL_LINEARS, 2));
        const int64_t Q = 64, KV = 32, H = c.mlp_width(), C = c.n_embd;
        const struct {
            pg::lora::Target t;
            const char* name;
            int64_t in, out, row;
        } want[] = {{pg::lora::Target::q_proj, "self_attn.q_proj", C, Q, 0},
                    {pg::lora::Target::k_proj, "self_attn.k_proj", C, KV, Q},
                    {pg::lora::Target::v_proj, "self_attn.v_proj", C, KV, Q + KV},
                    {pg::lora::Target::o_proj, "self_attn.o_proj", Q, C, 0},
                    {pg::lora::Target::gate_proj, "mlp.gate_proj", C, H, 0},
                    {pg::lora::Target::up_proj, "mlp.up_proj", C, H, H},
                    {pg::lora::Target::down_proj, "mlp.down_proj", H, C, 0}};
        for (const auto& w : want) {
            const pg::lora::AdaptedLinear* m = a.find(1, w.t);
            REQUIRE(m != nullptr);
            CHECK(m->in == w.in);
            CHECK(m->out == w.out);
            CHECK(m->row_offset == w.row);
            CHECK(a.find_tensor(std::string("model.layers.1.") + w.name + ".lora_B.weight") >= 0);
        }
        CHECK(a.on_linear(1, pg::LinearKind::attn_qkv).count == 3);
        CHECK(a.on_linear(1, pg::LinearKind::mlp_fc).count == 2);
    }
    SECTION("GPT-2's names on a Llama base and Llama's on GPT-2 are refused, naming the valid ones") {
        pg_model_config mc;
        pg_model_config_default(&mc);
        REQUIRE(pg_model_config_preset("tiny-llama", &mc) == PG_OK);
        pg_model* llama = nullptr;
        REQUIRE(pg_model_create(&mc, 3, &llama) == PG_OK);
        REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
        pg_model* gpt2 = nullptr;
        REQUIRE(pg_model_create(&mc, 3, &gpt2) == PG_OK);
        pg_lora_config lc;
        pg_lora_config_default(&lc);
        lc.rank = 2;
        pg_lora_adapter* a = nullptr;
        lc.target_modules = PG_LORA_ATTN_C_ATTN | PG_LORA_Q_PROJ;
        CHECK(pg_lora_adapter_create(llama, &lc, &a) == PG_ERR_INVALID_ARGUMENT);
        CHECK(a == nullptr);
        std::string msg = pg_last_error();
        CHECK(msg.find("attn.c_attn") != std::string::npos);
        CHECK(msg.find("q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj") != std::string::npos);
        lc.target_modules = PG_LORA_DOWN_PROJ;
        CHECK(pg_lora_adapter_create(gpt2, &lc, &a) == PG_ERR_INVALID_ARGUMENT);
        msg = pg_last_error();
        CHECK(msg.find("down_proj") != std::string::npos);
        CHECK(msg.find("attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj") != std::string::npos);
        lc.target_modules = 0;  // the family's default on each
        REQUIRE(pg_lora_adapter_create(gpt2, &lc, &a) == PG_OK);
        pg_lora_config got;
        pg_lora_config_default(&got);
        REQUIRE(pg_lora_adapter_get_config(a, &got) == PG_OK);
        CHECK(got.target_modules == PG_LORA_ATTN_C_ATTN);
        pg_lora_adapter_free(a);
        REQUIRE(pg_lora_adapter_create(llama, &lc, &a) == PG_OK);
        REQUIRE(pg_lora_adapter_get_config(a, &got) == PG_OK);
        CHECK(got.target_modules == (PG_LORA_Q_PROJ | PG_LORA_V_PROJ));
        pg_lora_adapter_free(a);
        pg_model_free(llama);
        pg_model_free(gpt2);
    }
}

TEST_CASE("lora llama: applied equals merged, unmerge restores, gradients are the chain rule", "[lora][lora_llama]") {
    const pg::Model base = llama_base("tiny-qwen3", 5);
    const int B = 2, T = 8;
    for (uint32_t bits : {uint32_t(PG_LORA_LLAMA_ALL_LINEARS), kSome}) {
        INFO("targets " << bits);
        pg::lora::LoraConfig cfg = targets(bits, 3);
        cfg.use_rslora = bits == kSome;
        pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
        randomise_b(a, 9, 0.05);
        pg::lora::LoraHook hook(a, nullptr);
        const auto in = tokens(B * T, 2, base.config().vocab_size);
        const auto plain = logits_of(base, base.params(), nullptr, in, B, T);
        const auto applied = logits_of(base, base.params(), &hook, in, B, T);
        pg::Model merged(base.config());
        pg::lora::merge_into_copy(base, a, merged, 2);
        const auto via_merge = logits_of(merged, merged.params(), nullptr, in, B, T);
        CHECK(max_diff(plain, applied) > 1e-3);
        CHECK(max_diff(applied, via_merge) <= 1e-5 * std::max(1.0, max_abs(applied)));
        // Only the adapted rows moved; unmerge brings them back within rounding.
        pg::Model round_trip(base.config());
        std::copy(merged.params(), merged.params() + merged.num_params(), round_trip.params());
        pg::lora::unmerge_in_place(round_trip, a, 2);
        double worst = 0;
        for (int64_t i = 0; i < base.num_params(); ++i)
            worst = std::max(worst, double(std::fabs(round_trip.params()[i] - base.params()[i])));
        CHECK(worst < 1e-6);
        if (bits == kSome) {  // k_proj's rows of layer 0 are untouched by the merge, bit for bit
            const pg::lora::AdaptedLinear* v = a.find(0, pg::lora::Target::v_proj);
            const int64_t k0 = pg::lora::base_weight_offset(base, *v) - 32 * v->in;
            CHECK(std::memcmp(merged.params() + k0, base.params() + k0, sizeof(float) * 32 * size_t(v->in)) == 0);
        }

        // dL/dB = s G A^T and dL/dA = s B^T G with G the merged model's gradient on the target's rows.
        const auto seq = tokens(B * (T + 1), 6, base.config().vocab_size);
        std::vector<int32_t> x, y;
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < T; ++t) {
                x.push_back(seq[size_t(b * (T + 1) + t)]);
                y.push_back(seq[size_t(b * (T + 1) + t + 1)]);
            }
        pg::ThreadPool pool(2);
        std::vector<float> ga(size_t(a.num_params()), 0.0f);
        pg::lora::LoraHook training(a, ga.data());
        pg::Engine frozen(base.config(), B, T);
        frozen.set_linear_hook(&training);
        const float gs = 1.0f / float(B * T);
        const double lh = frozen.forward_backward(base.params(), nullptr, x.data(), y.data(), B, T, gs, pg::Dropout{}, pool).mean();
        std::vector<float> gm(size_t(merged.num_params()), 0.0f);
        pg::Engine full(base.config(), B, T);
        const double lm = full.forward_backward(merged.params(), gm.data(), x.data(), y.data(), B, T, gs, pg::Dropout{}, pool).mean();
        CHECK(lh == Approx(lm).epsilon(1e-5));
        const double s = a.scale();
        const int r = a.config().rank;
        for (const auto& m : a.linears()) {
            const float* G = gm.data() + pg::lora::base_weight_offset(merged, m);
            double err = 0, size = 0;
            for (int64_t o = 0; o < m.out; ++o)
                for (int k = 0; k < r; ++k) {
                    double want = 0;
                    for (int64_t i = 0; i < m.in; ++i) want += s * G[o * m.in + i] * a.a(m)[k * m.in + i];
                    err = std::max(err, std::fabs(want - ga[size_t(m.b_offset + o * r + k)]));
                    size = std::max(size, std::fabs(want));
                }
            for (int k = 0; k < r; ++k)
                for (int64_t i = 0; i < m.in; ++i) {
                    double want = 0;
                    for (int64_t o = 0; o < m.out; ++o) want += s * a.b(m)[o * r + k] * G[o * m.in + i];
                    err = std::max(err, std::fabs(want - ga[size_t(m.a_offset + k * m.in + i)]));
                    size = std::max(size, std::fabs(want));
                }
            INFO("layer " << m.layer << " " << pg::lora::target_name(m.target) << ": " << err << " of " << size);
            CHECK(size > 0);
            CHECK(err <= 1e-4 * size);
        }
    }
}

TEST_CASE("lora llama: gradients match finite differences; dropout masks each target's branch", "[lora][lora_llama]") {
    const pg::Model base = llama_base("tiny-qwen2", 7);  // one kv head, q/k/v biases
    pg::lora::Adapter a = pg::lora::Adapter::create(base, targets(PG_LORA_LLAMA_ALL_LINEARS, 2));
    randomise_b(a, 13, 0.1);
    const int B = 1, T = 6;
    const auto seq = tokens(T + 1, 7, base.config().vocab_size);
    const std::vector<int32_t> in(seq.begin(), seq.end() - 1), tg(seq.begin() + 1, seq.end());
    pg::ThreadPool pool(1);
    pg::Engine engine(base.config(), B, T);
    std::vector<float> g(size_t(a.num_params()), 0.0f);
    pg::lora::LoraHook hook(a, g.data());
    engine.set_linear_hook(&hook);
    engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f, pg::Dropout{}, pool);
    auto loss = [&] { return engine.forward(base.params(), in.data(), tg.data(), B, T, nullptr, nullptr, pool).sum; };
    // Layer 0's tensors: its dX passes layer 1's adapters.
    check_finite_differences(a, g, loss, 2, [](const pg::lora::AdapterTensor& t) {
        return t.name.compare(0, 15, "model.layers.0.") == 0;
    });

    // Dropout on the branches: B = 0 keeps the base's loss; the same stream gives the same
    // gradients; and k_proj and v_proj, two slices of one fused linear reading one input, drop
    // their own elements (as PEFT's per-module dropout does): with equal factors their terms are
    // equal without dropout and differ with it.
    pg::lora::LoraConfig cfg = targets(PG_LORA_K_PROJ | PG_LORA_V_PROJ, 2);
    cfg.dropout = 0.5f;
    pg::lora::Adapter d = pg::lora::Adapter::create(base, cfg);
    const pg::Dropout stream{0.0f, 77, 3};
    std::vector<float> g1(size_t(d.num_params()), 0.0f), g2(g1);
    pg::lora::LoraHook h1(d, g1.data()), h2(d, g2.data());
    engine.set_linear_hook(nullptr);
    const double plain = engine.forward(base.params(), in.data(), tg.data(), B, T, nullptr, nullptr, pool).sum;
    engine.set_linear_hook(&h1);
    CHECK(engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f, stream, pool).sum == plain);
    engine.set_linear_hook(&h2);
    engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f, stream, pool);
    CHECK(std::memcmp(g1.data(), g2.data(), g1.size() * 4) == 0);
    engine.set_linear_hook(nullptr);

    const pg::lora::AdaptedLinear* k = d.find(0, pg::lora::Target::k_proj);
    const pg::lora::AdaptedLinear* v = d.find(0, pg::lora::Target::v_proj);
    randomise_b(d, 5, 0.3);
    std::copy(d.a(*k), d.a(*k) + 2 * k->in, d.a(*v));
    std::copy(d.b(*k), d.b(*k) + k->out * 2, d.b(*v));
    const int rows = 4, n_in = int(k->in), n_out = int(pg::lora::linear_rows(pg::LinearKind::attn_qkv, base.config()));
    std::vector<float> x(size_t(rows * n_in));
    pg::Rng rng(4);
    for (float& e : x) e = float(rng.normal());
    pg::lora::LoraHook direct(d, nullptr);
    for (bool training : {false, true}) {
        std::vector<float> out(size_t(rows * n_out), 0.0f);
        pg::LinearHookContext ctx{pool};
        ctx.training = training;
        ctx.seed = 77;
        ctx.stream = 3;
        direct.forward(0, pg::LinearKind::attn_qkv, x.data(), rows, n_in, out.data(), n_out, ctx);
        bool same = true;
        for (int r = 0; r < rows; ++r)
            for (int64_t o = 0; o < k->out; ++o)
                same = same && out[size_t(r * n_out + k->row_offset + o)] == out[size_t(r * n_out + v->row_offset + o)];
        CHECK(same == !training);
        for (int r = 0; r < rows; ++r)  // q's rows are not adapted: zero
            for (int64_t o = 0; o < k->row_offset; ++o) REQUIRE(out[size_t(r * n_out + o)] == 0.0f);
    }
}

namespace {

pg_model* c_model(const char* preset, uint64_t seed) {
    pg_model_config mc;
    pg_model_config_default(&mc);
    REQUIRE(pg_model_config_preset(preset, &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, seed, &m) == PG_OK);
    REQUIRE(pg_model_allow_untrained_base(m, 1) == PG_OK);
    return m;
}

std::vector<float> session_logits(const pg_model* m, const pg_lora_adapter* a, const std::vector<int32_t>& prompt) {
    pg_session* s = nullptr;
    REQUIRE(pg_session_create(m, nullptr, &s) == PG_OK);
    if (a) REQUIRE(pg_session_attach_adapter(s, a) == PG_OK);
    REQUIRE(pg_session_append(s, prompt.data(), prompt.size()) == PG_OK);
    std::vector<float> out(65);
    REQUIRE(pg_session_logits(s, out.data(), out.size()) == PG_OK);
    pg_session_free(s);
    return out;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("lora llama: training, sessions, merge, the file, 16-bit bases, averaging and validation",
          "[lora][lora_llama]") {
    pg_model* base = c_model("tiny-llama", 11);
    std::vector<int32_t> data;
    for (int i = 0; i < 600; ++i) data.push_back(int32_t((i * 7) % 13 + (i % 3)));
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    lc.rank = 4;
    lc.alpha = 8.0f;
    lc.use_rslora = 1;
    lc.dropout = 0.1f;
    lc.freeze_a = 1;
    lc.target_modules = PG_LORA_Q_PROJ | PG_LORA_V_PROJ | PG_LORA_GATE_PROJ | PG_LORA_DOWN_PROJ;
    const int32_t layers[] = {1};
    lc.layers = layers;
    lc.n_layers = 1;
    pg_lora_adapter* adapter = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &lc, &adapter) == PG_OK);
    int32_t n_tensors = 0;
    REQUIRE(pg_lora_adapter_num_tensors(adapter, &n_tensors) == PG_OK);
    REQUIRE(n_tensors == 8);
    pg_tensor_info first;
    first.struct_size = sizeof first;
    REQUIRE(pg_lora_adapter_tensor_info(adapter, 0, &first) == PG_OK);
    CHECK(std::string(first.name) == "model.layers.1.self_attn.q_proj.lora_A.weight");
    float* a0 = nullptr;
    REQUIRE(pg_lora_adapter_tensor_data_mutable(adapter, 0, &a0) == PG_OK);
    const std::vector<float> a_before(a0, a0 + first.shape[0] * first.shape[1]);
    const std::vector<float> weights_before = [&] {
        const float* p = nullptr;
        int64_t n = 0;
        REQUIRE(pg_model_params(base, &p, &n) == PG_OK);
        return std::vector<float>(p, p + n);
    }();

    pg_train_config tc;
    pg_train_config_default(&tc);
    tc.batch_size = 4, tc.seq_len = 16, tc.schedule = PG_LR_CONSTANT, tc.lr_max = 1e-2f, tc.warmup_steps = 0;
    tc.weight_decay = 0.0f, tc.n_threads = 2, tc.seed = 5;
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(base, adapter, &tc, &t) == PG_OK);
    REQUIRE(pg_lora_trainer_set_data(t, data.data(), data.size()) == PG_OK);
    std::vector<float> losses;
    for (int i = 0; i < 25; ++i) {
        pg_step_result r;
        r.struct_size = sizeof r;
        REQUIRE(pg_lora_trainer_step(t, &r) == PG_OK);
        losses.push_back(r.loss);
    }
    pg_lora_trainer_free(t);
    INFO("first " << losses.front() << ", last " << losses.back());
    CHECK(losses.back() < losses.front());
    CHECK(std::memcmp(a0, a_before.data(), a_before.size() * 4) == 0);  // freeze_a: A as initialised
    {
        const float* p = nullptr;
        int64_t n = 0;
        REQUIRE(pg_model_params(base, &p, &n) == PG_OK);
        CHECK(std::memcmp(p, weights_before.data(), weights_before.size() * 4) == 0);  // the base is frozen
    }

    // A session with the adapter computes what the merged model computes; in place and back.
    const std::vector<int32_t> prompt(data.begin(), data.begin() + 9);
    const auto plain = session_logits(base, nullptr, prompt);
    const auto adapted = session_logits(base, adapter, prompt);
    pg_model* merged = nullptr;
    REQUIRE(pg_lora_merge(base, adapter, 2, &merged) == PG_OK);
    const auto via_merge = session_logits(merged, nullptr, prompt);
    CHECK(max_diff(plain, adapted) > 1e-3);
    CHECK(max_diff(adapted, via_merge) <= 1e-5 * std::max(1.0, max_abs(adapted)));
    REQUIRE(pg_lora_unmerge_in_place(merged, adapter, 2) == PG_OK);
    CHECK(max_diff(session_logits(merged, nullptr, prompt), plain) < 1e-4);
    pg_model_free(merged);

    // The adapter file round trip (format 1.4 records the Llama block); another Llama base is refused.
    const std::string path = pg_test::tmp_dir() + "/llama_adapter.safetensors";
    REQUIRE(pg_lora_adapter_save(adapter, path.c_str()) == PG_OK);
    pg_lora_adapter* loaded = nullptr;
    REQUIRE(pg_lora_adapter_load(path.c_str(), base, &loaded) == PG_OK);
    CHECK(max_diff(session_logits(base, loaded, prompt), adapted) == 0.0);
    pg_model* qwen2 = c_model("tiny-qwen2", 11);
    pg_lora_adapter* refused = nullptr;
    CHECK(pg_lora_adapter_load(path.c_str(), qwen2, &refused) == PG_ERR_GEOMETRY);
    INFO(pg_last_error());
    CHECK(std::string(pg_last_error()).find("the adapter was made for rope_theta = 10000, the base has rope_theta") !=
          std::string::npos);
    pg_model_free(qwen2);

    // 16-bit bases: the adapter's term on top of the fp16 / bf16 weights, near the fp32 base's;
    // an adapter trains over them.
    for (pg_weight_storage storage : {PG_WEIGHTS_FP16, PG_WEIGHTS_BF16}) {
        INFO("storage " << storage);
        pg_model* half = c_model("tiny-llama", 11);
        REQUIRE(pg_model_set_weight_storage(half, storage) == PG_OK);
        REQUIRE(pg_lora_adapter_check_base(loaded, half) == PG_OK);
        const auto half_plain = session_logits(half, nullptr, prompt);
        const auto half_adapted = session_logits(half, loaded, prompt);
        CHECK(max_diff(half_adapted, adapted) < 0.05 * max_abs(adapted));
        CHECK(max_diff(half_adapted, half_plain) > 1e-3);
        pg_lora_adapter* half_adapter = nullptr;  // trained on its own copy: `loaded` stays the file's
        REQUIRE(pg_lora_adapter_load(path.c_str(), half, &half_adapter) == PG_OK);
        pg_lora_trainer* half_trainer = nullptr;
        REQUIRE(pg_lora_trainer_create(half, half_adapter, &tc, &half_trainer) == PG_OK);
        REQUIRE(pg_lora_trainer_set_data(half_trainer, data.data(), data.size()) == PG_OK);
        pg_step_result hr;
        hr.struct_size = sizeof hr;
        REQUIRE(pg_lora_trainer_step(half_trainer, &hr) == PG_OK);
        CHECK(std::isfinite(hr.loss));
        pg_lora_trainer_free(half_trainer);
        pg_lora_adapter_free(half_adapter);
        pg_model_free(half);
    }

    // Averaging by concatenation is exact per target; the validator measures each target
    // against its own rows and signing covers the file.
    const pg_lora_adapter* both[] = {adapter, loaded};
    pg_lora_average_config avg;
    pg_lora_average_config_default(&avg);
    avg.method = PG_LORA_AVERAGE_CAT;
    pg_lora_adapter* mean = nullptr;
    pg_lora_average_report rep;
    rep.struct_size = sizeof rep;
    REQUIRE(pg_lora_average(both, 2, nullptr, &avg, &mean, &rep) == PG_OK);
    CHECK(rep.relative_error < 1e-5);
    CHECK(max_diff(session_logits(base, mean, prompt), adapted) < 1e-4);
    pg_lora_adapter_free(mean);

    pg_validation_policy policy;
    pg_validation_policy_default(&policy);
    policy.signature = PG_SIGNATURE_REQUIRED;
    policy.base_trained = PG_BASE_TRAINED_OFF;
    pg_validator* validator = nullptr;
    REQUIRE(pg_validator_create(base, &policy, &validator) == PG_OK);
    const uint8_t seed[32] = {7};
    pg_signing_key* key = nullptr;
    REQUIRE(pg_signing_key_from_seed(seed, &key) == PG_OK);
    uint8_t pub[32];
    REQUIRE(pg_signing_key_public(key, pub) == PG_OK);
    pg_trusted_keys* trusted = nullptr;
    REQUIRE(pg_trusted_keys_create(&trusted) == PG_OK);
    REQUIRE(pg_trusted_keys_add(trusted, pub) == PG_OK);
    REQUIRE(pg_validator_set_trusted_keys(validator, trusted) == PG_OK);
    const std::vector<uint8_t> bytes = file_bytes(path);
    std::vector<char> signature(4096);
    size_t sig_len = 0;
    REQUIRE(pg_lora_adapter_sign(key, loaded, bytes.data(), bytes.size(), signature.data(), signature.size(), &sig_len) ==
            PG_OK);
    pg_validation_report* report = nullptr;
    REQUIRE(pg_lora_validate(validator, bytes.data(), bytes.size(), signature.data(), sig_len, &report) == PG_OK);
    pg_validation_summary sum;
    sum.struct_size = sizeof sum;
    REQUIRE(pg_validation_report_summary(report, &sum) == PG_OK);
    CHECK(sum.accepted == 1);
    // The largest ||s B A||_F / ||W||_F, W each target's own rows (the public table's HF tensors).
    float scale = 0.0f;
    REQUIRE(pg_lora_adapter_scale(loaded, &scale) == PG_OK);
    double largest = 0.0;
    for (const char* module : {"self_attn.q_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.down_proj"}) {
        const std::string stem = std::string("model.layers.1.") + module;
        pg_tensor_info ta, tb, tw;
        ta.struct_size = tb.struct_size = tw.struct_size = sizeof(pg_tensor_info);
        int32_t ia = 0, ib = 0, iw = 0;
        REQUIRE(pg_lora_adapter_find_tensor(loaded, (stem + ".lora_A.weight").c_str(), &ia) == PG_OK);
        REQUIRE(pg_lora_adapter_find_tensor(loaded, (stem + ".lora_B.weight").c_str(), &ib) == PG_OK);
        REQUIRE(pg_model_find_tensor(base, (stem + ".weight").c_str(), &iw) == PG_OK);
        REQUIRE(pg_lora_adapter_tensor_info(loaded, ia, &ta) == PG_OK);
        REQUIRE(pg_lora_adapter_tensor_info(loaded, ib, &tb) == PG_OK);
        REQUIRE(pg_model_tensor_info(base, iw, &tw) == PG_OK);
        const int64_t r = ta.shape[0], in = ta.shape[1], out = tb.shape[0];
        REQUIRE((tw.shape[0] == out && tw.shape[1] == in));
        double delta2 = 0.0, w2 = 0.0;
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i) {
                double dot = 0.0;
                for (int64_t k = 0; k < r; ++k) dot += double(tb.data[o * r + k]) * double(ta.data[k * in + i]);
                delta2 += double(scale) * dot * double(scale) * dot;
                w2 += double(tw.data[o * in + i]) * double(tw.data[o * in + i]);
            }
        largest = std::max(largest, std::sqrt(delta2 / w2));
    }
    CHECK(sum.update_ratio == Approx(largest).epsilon(1e-4));
    pg_validation_report_free(report);
    pg_validator_free(validator);
    pg_trusted_keys_free(trusted);
    pg_signing_key_free(key);
    pg_lora_adapter_free(loaded);
    pg_lora_adapter_free(adapter);
    pg_model_free(base);
    std::remove(path.c_str());
}
