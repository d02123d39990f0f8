// Training on answers only: a caller's batch whose targets are -1 outside the answers. Both
// trainers (full and LoRA) must give the mean loss over the scored positions and gradients to
// which the unscored positions add nothing. The reference uses no mask at all: by causality the
// loss summed over the first t positions of a row is (mean loss of the row cut to t tokens) x t,
// so one position's loss and gradient are the difference of two fully scored prefixes.
// (This caught LoRA's down_proj gradients on SwiGLU models reading the input after the base
// product had overwritten it.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "frozen_base_support.hpp"
#include "phonegpt/phonegpt.h"

namespace {

struct LossAndGrads {
    double loss = 0.0;
    std::vector<double> grads;
};

// The mean loss and the gradients of every trained tensor (concatenated) of one batch.
using GradientsOf = std::function<LossAndGrads(const int32_t*, const int32_t*, int, int)>;

template <class Trainer, class Compute, class Grad>
LossAndGrads read_gradients(Trainer* t, Compute compute, Grad grad, const std::vector<int64_t>& numels,
                            const int32_t* in, const int32_t* tg, int B, int T) {
    LossAndGrads r;
    float loss = 0.0f;
    REQUIRE(compute(t, in, tg, B, T, &loss) == PG_OK);
    r.loss = loss;
    for (size_t i = 0; i < numels.size(); ++i) {
        const float* g = nullptr;
        REQUIRE(grad(t, int32_t(i), &g) == PG_OK);
        r.grads.insert(r.grads.end(), g, g + numels[i]);
    }
    return r;
}

// The loss and gradients of a masked batch from fully scored prefixes of its rows only.
LossAndGrads from_prefixes(const GradientsOf& of, const std::vector<int32_t>& in, const std::vector<int32_t>& tg,
                           int B, int T) {
    LossAndGrads sum;
    int64_t scored = 0;
    for (int b = 0; b < B; ++b) {
        const int32_t* row_in = in.data() + size_t(b) * T;
        std::vector<int32_t> row_tg(tg.begin() + b * T, tg.begin() + (b + 1) * T);
        // Fully scored prefixes: a position's own target where it has one, any id elsewhere.
        for (int j = 0; j < T; ++j)
            if (row_tg[size_t(j)] < 0) row_tg[size_t(j)] = row_in[j];
        LossAndGrads before;  // the sums over the first j positions (none for j = 0)
        for (int j = 0; j < T; ++j) {
            LossAndGrads upto = of(row_in, row_tg.data(), 1, j + 1);
            upto.loss *= double(j + 1);
            for (double& g : upto.grads) g *= double(j + 1);
            if (before.grads.empty()) before.grads.assign(upto.grads.size(), 0.0);
            if (sum.grads.empty()) sum.grads.assign(upto.grads.size(), 0.0);
            if (tg[size_t(b) * T + j] >= 0) {
                ++scored;
                sum.loss += upto.loss - before.loss;
                for (size_t k = 0; k < sum.grads.size(); ++k) sum.grads[k] += upto.grads[k] - before.grads[k];
            }
            before = std::move(upto);
        }
    }
    sum.loss /= double(scored);
    for (double& g : sum.grads) g /= double(scored);
    return sum;
}

// A prompt/answer batch: row 0 answers from position 5, row 1 from 9 with one answer position
// left out, row 2 scores its last position only. The inputs after the last answer are padding.
void answer_batch(int vocab, std::vector<int32_t>& in, std::vector<int32_t>& tg, int& B, int& T) {
    B = 3;
    T = 14;
    in.assign(size_t(B) * T, 0);
    tg.assign(size_t(B) * T, -1);
    for (int i = 0; i < B * T; ++i) in[size_t(i)] = int32_t((i * 7 + 3) % vocab);
    for (int j = 5; j < 12; ++j) tg[size_t(j)] = int32_t((j * 5 + 1) % vocab);
    for (int j = 9; j < 14; ++j) tg[size_t(T + j)] = int32_t((j * 3 + 2) % vocab);
    tg[size_t(T + 11)] = -1;
    tg[size_t(2 * T + T - 1)] = 4;
}

void check_against_prefixes(const GradientsOf& of, int vocab) {
    std::vector<int32_t> in, tg;
    int B = 0, T = 0;
    answer_batch(vocab, in, tg, B, T);
    const LossAndGrads masked = of(in.data(), tg.data(), B, T);
    const LossAndGrads ref = from_prefixes(of, in, tg, B, T);
    CHECK(masked.loss == Approx(ref.loss).epsilon(1e-5));
    double largest = 0.0, worst = 0.0;
    for (size_t k = 0; k < ref.grads.size(); ++k) {
        largest = std::max(largest, std::abs(ref.grads[k]));
        worst = std::max(worst, std::abs(masked.grads[k] - ref.grads[k]));
    }
    REQUIRE(largest > 0.0);
    CHECK(worst <= 2e-5 * largest);  // fp32 sums of up to 14 prefixes, differenced
    // Changing the padding after every row's last answer changes neither (causal + unscored).
    std::vector<int32_t> other = in;
    for (int j = 12; j < T; ++j) other[size_t(j)] = int32_t((other[size_t(j)] + 1) % vocab);
    const LossAndGrads padded = of(other.data(), tg.data(), B, T);
    CHECK(padded.loss == masked.loss);
    CHECK(padded.grads == masked.grads);
}

// The element counts of tensors 0..n-1, read through a pg_*_tensor_info function.
template <class Handle, class Info>
std::vector<int64_t> numels_of(const Handle* h, int32_t n, Info tensor_info) {
    std::vector<int64_t> numels;
    for (int32_t i = 0; i < n; ++i) {
        pg_tensor_info info;
        info.struct_size = sizeof info;
        REQUIRE(tensor_info(h, i, &info) == PG_OK);
        numels.push_back(info.numel);
    }
    return numels;
}

pg_train_config small_train_config() {
    pg_train_config c;
    pg_train_config_default(&c);
    c.batch_size = 3;
    c.seq_len = 14;
    c.n_threads = 2;
    return c;
}

}  // namespace

TEST_CASE("answers only: the full trainer's -1 targets against fully scored prefixes", "[train][answers]") {
    const std::string preset = GENERATE(as<std::string>{}, "tiny", "tiny-qwen3");
    INFO(preset);
    pg_model_config mc;
    REQUIRE(pg_model_config_preset(preset.c_str(), &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &m) == PG_OK);
    const pg_train_config tc = small_train_config();
    pg_trainer* t = nullptr;
    REQUIRE(pg_trainer_create(m, &tc, &t) == PG_OK);
    int32_t n = 0;
    REQUIRE(pg_model_num_tensors(m, &n) == PG_OK);
    const std::vector<int64_t> numels = numels_of(m, n, pg_model_tensor_info);
    check_against_prefixes(
        [&](const int32_t* in, const int32_t* tg, int B, int T) {
            return read_gradients(t, pg_trainer_compute_gradients, pg_trainer_grad, numels, in, tg, B, T);
        },
        mc.vocab_size);
    pg_trainer_free(t);
    pg_model_free(m);
}

TEST_CASE("answers only: the LoRA trainer's -1 targets against fully scored prefixes", "[lora][answers]") {
    const std::string preset = GENERATE(as<std::string>{}, "tiny", "tiny-qwen3");
    INFO(preset);
    pg_model_config mc;
    REQUIRE(pg_model_config_preset(preset.c_str(), &mc) == PG_OK);
    pg_model* m = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &m) == PG_OK);
    REQUIRE(pg_model_allow_untrained_base(m, 1) == PG_OK);  // random weights: this is arithmetic
    pg_lora_adapter* a = frozen_base_test::adapter_with_b(m, frozen_base_test::all_linears_of(mc));
    const pg_train_config tc = small_train_config();
    pg_lora_trainer* t = nullptr;
    REQUIRE(pg_lora_trainer_create(m, a, &tc, &t) == PG_OK);
    int32_t n = 0;
    REQUIRE(pg_lora_adapter_num_tensors(a, &n) == PG_OK);
    const std::vector<int64_t> numels = numels_of(a, n, pg_lora_adapter_tensor_info);
    const GradientsOf of = [&](const int32_t* in, const int32_t* tg, int B, int T) {
        return read_gradients(t, pg_lora_trainer_compute_gradients, pg_lora_trainer_grad, numels, in, tg, B, T);
    };
    check_against_prefixes(of, mc.vocab_size);

    // A step on the masked batch reports the same mean loss and moves the adapter.
    std::vector<int32_t> in, tg;
    int B = 0, T = 0;
    answer_batch(mc.vocab_size, in, tg, B, T);
    const double loss = of(in.data(), tg.data(), B, T).loss;
    pg_step_result r;
    r.struct_size = sizeof r;
    REQUIRE(pg_lora_trainer_step_batch(t, in.data(), tg.data(), B, T, &r) == PG_OK);
    CHECK(double(r.loss) == loss);
    CHECK(r.tokens == int64_t(B) * T);
    // Nothing scored at all is refused, naming the targets.
    std::vector<int32_t> none(tg.size(), -1);
    CHECK(pg_lora_trainer_step_batch(t, in.data(), none.data(), B, T, &r) == PG_ERR_INVALID_ARGUMENT);
    CHECK(std::string(pg_last_error()).find("target") != std::string::npos);
    pg_lora_trainer_free(t);
    pg_lora_adapter_free(a);
    pg_model_free(m);
}
