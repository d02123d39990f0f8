// Adapter averaging (lib/coordinator/average): the exact methods (cat, svd at full rank, frozen A)
// equal the weighted mean of the updates within fp32 tolerance, FedAvg of factors is measurably
// not that mean and says by how much, different ranks average by cat and svd, mismatches are
// refused by name, and the result is a complete adapter of the same base.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/file_io.hpp"
#include "lora/adapter.hpp"
#include "lora/adapter_file.hpp"
#include "coordinator/average.hpp"
#include "model/params.hpp"
#include "phonegpt/phonegpt_coordinator.h"

using namespace pg::lora;

namespace {

pg::Model tiny_model(uint64_t seed) {
    pg::Model m(pg::model_preset("tiny"));
    pg::init_gpt2_params(m.config(), m.params(), seed);
    return m;
}

// An adapter with every A and B drawn at random (a trained one, as far as averaging can tell).
Adapter trained(const pg::Model& base, int rank, uint64_t seed, uint32_t targets = PG_LORA_ALL_LINEARS,
                bool freeze_a = false, float alpha = 8.0f) {
    LoraConfig cfg;
    cfg.rank = rank;
    cfg.alpha = alpha;
    cfg.target_modules = targets;
    cfg.freeze_a = freeze_a;
    cfg.init_seed = freeze_a ? 99 : seed;
    Adapter a = Adapter::create(base, cfg);
    pg::Rng rng(seed);
    for (const auto& m : a.linears()) {
        if (!freeze_a)
            for (int64_t j = 0; j < rank * m.in; ++j) a.a(m)[j] = float(rng.uniform() - 0.5);
        for (int64_t j = 0; j < rank * m.out; ++j) a.b(m)[j] = float(rng.uniform() - 0.5) * 0.1f;
    }
    a.record().tokens = 1000 * int64_t(seed);
    return a;
}

// The weighted mean update in double, straight from the definition, and the relative
// Frobenius distance of an adapter's updates from it.
double distance_from_mean(const Adapter& got, const std::vector<const Adapter*>& in, const std::vector<double>& weights) {
    double sum_w = 0.0;
    for (double w : weights) sum_w += w;
    double err2 = 0.0, ref2 = 0.0;
    for (std::size_t k = 0; k < got.linears().size(); ++k) {
        const AdaptedLinear& mg = got.linears()[k];
        const std::vector<float> g = dense_update(got, mg);
        for (int64_t o = 0; o < mg.out; ++o)
            for (int64_t i = 0; i < mg.in; ++i) {
                double mean = 0.0;
                for (std::size_t n = 0; n < in.size(); ++n) {
                    const Adapter& a = *in[n];
                    const AdaptedLinear& m = a.linears()[k];
                    const int r = a.config().rank;
                    double dot = 0.0;
                    for (int j = 0; j < r; ++j) dot += double(a.b(m)[o * r + j]) * double(a.a(m)[j * m.in + i]);
                    mean += weights[n] / sum_w * double(a.scale()) * dot;
                }
                const double d = double(g[std::size_t(o * mg.in + i)]) - mean;
                err2 += d * d, ref2 += mean * mean;
            }
    }
    return std::sqrt(err2 / ref2);
}

pg_status status_of(const std::function<void()>& f, std::string* message) {
    try {
        f();
    } catch (const pg::Error& e) {
        *message = e.what();
        return e.status();
    }
    return PG_OK;
}

}  // namespace

TEST_CASE("average: exact methods equal the weighted mean update; FedAvg of factors does not", "[coord][average]") {
    const pg::Model base = tiny_model(1);
    const Adapter a1 = trained(base, 4, 1), a2 = trained(base, 4, 2), a3 = trained(base, 4, 3);
    const std::vector<const Adapter*> in = {&a1, &a2, &a3};
    const std::vector<double> w = {1.0, 2.0, 5.0};

    AverageReport rep;
    const Adapter cat = average_adapters(in, w, {AverageMethod::kConcat, 0}, &rep);
    CHECK(rep.rank == 12);
    CHECK(cat.config().rank == 12);
    CHECK(distance_from_mean(cat, in, w) < 1e-6);
    CHECK(rep.relative_error < 1e-6);

    // SVD at rank 12 = the inputs' total rank: nothing is dropped.
    const Adapter svd_full = average_adapters(in, w, {AverageMethod::kSvd, 12}, &rep);
    CHECK(distance_from_mean(svd_full, in, w) < 1e-5);
    CHECK(rep.svd_residual < 1e-6);

    // SVD at rank 4: the residual it reports is the distance it has.
    const Adapter svd4 = average_adapters(in, w, {AverageMethod::kSvd, 4}, &rep);
    CHECK(svd4.config().rank == 4);
    const double d4 = distance_from_mean(svd4, in, w);
    CHECK(rep.svd_residual > 0.05);
    CHECK(std::abs(d4 - rep.svd_residual) < 1e-4);
    CHECK(std::abs(rep.relative_error - d4) < 1e-4);
    // It kept the largest singular values: each linear's mean has rank 12, and its top 4 hold at
    // least 4/12 of its energy (all of them equal at the bound), so the residual is below
    // sqrt(8/12); keeping any other 4 could not be.
    CHECK(rep.svd_residual < std::sqrt(8.0 / 12.0));
    // A = V_k^T: orthonormal rows on every linear, the wide ones (mlp.c_proj: in > out) too.
    for (const AdaptedLinear& m : svd4.linears()) {
        CAPTURE(m.layer, pg::lora::target_name(m.target), m.in, m.out);
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                double dot = 0.0;
                for (int64_t c = 0; c < m.in; ++c) dot += double(svd4.a(m)[i * m.in + c]) * double(svd4.a(m)[j * m.in + c]);
                CHECK(std::abs(dot - (i == j ? 1.0 : 0.0)) < 1e-5);
            }
    }

    // FedAvg of factors: A and B averaged separately, and the report says how far that is.
    const Adapter fed = average_adapters(in, w, {AverageMethod::kFedAvgFactors, 0}, &rep);
    const double df = distance_from_mean(fed, in, w);
    CHECK(df > 0.1);
    CHECK(std::abs(rep.relative_error - df) < 1e-4);
    CHECK(fed.config().rank == 4);

    // The result is a complete adapter of the same base with the inputs' tokens.
    for (const Adapter* out : {&cat, &svd4, &fed}) {
        CHECK(out->base().fingerprint() == a1.base().fingerprint());
        CHECK_NOTHROW(check_adapter_matches_base(*out, base));
        CHECK(out->config().target_modules == a1.config().target_modules);
        CHECK(out->record().tokens == 6000);
        CHECK(out->record().steps == 0);
        CHECK(out->tensors().size() == a1.tensors().size());
        // Self-describing: written in the adapter file format and read back, with nothing
        // supplied but the bytes, it is the same adapter (the averaged-adapter field bug).
        pg::io::VectorSink sink;
        write_adapter(*out, sink);
        const Adapter back = read_adapter(pg::io::MemorySource(sink.bytes.data(), sink.bytes.size()));
        CHECK(same_adapter(back, *out));
        CHECK(back.config().rank == out->config().rank);
        CHECK_NOTHROW(check_adapter_matches_base(back, base));
    }
}

TEST_CASE("average: frozen shared A makes averaging B exact", "[coord][average]") {
    const pg::Model base = tiny_model(1);
    const Adapter a1 = trained(base, 4, 1, PG_LORA_ATTN_C_ATTN, true), a2 = trained(base, 4, 2, PG_LORA_ATTN_C_ATTN, true);
    const std::vector<const Adapter*> in = {&a1, &a2};
    AverageReport rep;
    const Adapter out = average_adapters(in, {3.0, 1.0}, {AverageMethod::kFrozenA, 0}, &rep);
    CHECK(out.config().freeze_a);
    CHECK(distance_from_mean(out, in, {3.0, 1.0}) < 1e-6);
    CHECK(rep.relative_error < 1e-6);
    // Complete and self-describing as well: it reads back from its bytes alone, still frozen.
    pg::io::VectorSink sink;
    write_adapter(out, sink);
    const Adapter back = read_adapter(pg::io::MemorySource(sink.bytes.data(), sink.bytes.size()));
    CHECK(same_adapter(back, out));
    CHECK(back.config().freeze_a);
    // With a shared A, FedAvg of factors is the same computation.
    CHECK(average_adapters(in, {3.0, 1.0}, {AverageMethod::kFedAvgFactors, 0}, &rep).config().rank == 4);
    CHECK(rep.relative_error < 1e-6);

    const Adapter free_a = trained(base, 4, 3, PG_LORA_ATTN_C_ATTN, false);
    std::string msg;
    CHECK(status_of([&] { average_adapters({&a1, &free_a}, {}, {AverageMethod::kFrozenA, 0}, nullptr); }, &msg) ==
          PG_ERR_GEOMETRY);
    CHECK_THAT(msg, Catch::Contains("adapter 1's A of layer 0 attn.c_attn differs"));
}

TEST_CASE("average: different ranks average by cat and svd, not by FedAvg of factors", "[coord][average]") {
    const pg::Model base = tiny_model(1);
    const Adapter r2 = trained(base, 2, 1, PG_LORA_ATTN_C_ATTN), r6 = trained(base, 6, 2, PG_LORA_ATTN_C_ATTN, false, 16.0f);
    const std::vector<const Adapter*> in = {&r2, &r6};
    AverageReport rep;
    const Adapter cat = average_adapters(in, {}, {AverageMethod::kConcat, 0}, &rep);
    CHECK(cat.config().rank == 8);
    CHECK(distance_from_mean(cat, in, {1.0, 1.0}) < 1e-6);
    const Adapter svd = average_adapters(in, {}, {AverageMethod::kSvd, 8}, &rep);
    CHECK(distance_from_mean(svd, in, {1.0, 1.0}) < 1e-5);
    const Adapter svd_default = average_adapters(in, {}, {AverageMethod::kSvd, 0}, &rep);
    CHECK(svd_default.config().rank == 6);  // the largest input rank
    std::string msg;
    CHECK(status_of([&] { average_adapters(in, {}, {AverageMethod::kFedAvgFactors, 0}, nullptr); }, &msg) ==
          PG_ERR_GEOMETRY);
    CHECK_THAT(msg, Catch::Contains("adapter 1 has rank 6, adapter 0 rank 2"));
    // cat's rank cannot exceed what the base's linears allow (width 16 here).
    const Adapter r12 = trained(base, 12, 3, PG_LORA_ATTN_C_ATTN);
    CHECK(status_of([&] { average_adapters({&r6, &r12}, {}, {AverageMethod::kConcat, 0}, nullptr); }, &msg) != PG_OK);
}

TEST_CASE("average: mismatched bases, targets, layers and weights are refused by name", "[coord][average]") {
    const pg::Model base = tiny_model(1), other = tiny_model(2);
    const Adapter a = trained(base, 4, 1, PG_LORA_ATTN_C_ATTN);
    std::string msg;
    const Adapter foreign = trained(other, 4, 2, PG_LORA_ATTN_C_ATTN);
    CHECK(status_of([&] { average_adapters({&a, &foreign}, {}, {AverageMethod::kConcat, 0}, nullptr); }, &msg) ==
          PG_ERR_GEOMETRY);
    CHECK_THAT(msg, Catch::Contains("adapter 1 was made for another base") && Catch::Contains("fingerprints differ"));

    const Adapter mlp = trained(base, 4, 3, PG_LORA_MLP_C_FC);
    CHECK(status_of([&] { average_adapters({&a, &mlp}, {}, {AverageMethod::kSvd, 0}, nullptr); }, &msg) == PG_ERR_GEOMETRY);
    CHECK_THAT(msg, Catch::Contains("adapter 1 targets modules 4, adapter 0 targets 1"));

    LoraConfig one_layer;
    one_layer.rank = 4;
    one_layer.layers = {1};
    const Adapter l1 = Adapter::create(base, one_layer);
    CHECK(status_of([&] { average_adapters({&a, &l1}, {}, {AverageMethod::kConcat, 0}, nullptr); }, &msg) == PG_ERR_GEOMETRY);
    CHECK_THAT(msg, Catch::Contains("adapter 1 adapts layers 1, adapter 0 adapts all layers"));

    const Adapter b = trained(base, 4, 4, PG_LORA_ATTN_C_ATTN);
    for (const std::vector<double>& bad : {std::vector<double>{1.0}, std::vector<double>{1.0, -1.0},
                                           std::vector<double>{0.0, 0.0}, std::vector<double>{1.0, NAN}}) {
        CHECK(status_of([&] { average_adapters({&a, &b}, bad, {AverageMethod::kConcat, 0}, nullptr); }, &msg) ==
              PG_ERR_INVALID_ARGUMENT);
    }
    CHECK(status_of([&] { average_adapters({}, {}, {AverageMethod::kConcat, 0}, nullptr); }, &msg) == PG_ERR_INVALID_ARGUMENT);
}

TEST_CASE("average: trimmed mean and median are the coordinate-wise ones; clipping bounds every update",
          "[coord][average]") {
    const pg::Model base = tiny_model(1);
    std::vector<Adapter> ads;
    for (uint64_t s = 1; s <= 5; ++s) ads.push_back(trained(base, 2, s));
    for (const AdaptedLinear& m : ads[4].linears())  // one upload far larger than the others
        for (int64_t j = 0; j < m.out * 2; ++j) ads[4].b(m)[j] *= 50.0f;
    std::vector<const Adapter*> in;
    for (const Adapter& a : ads) in.push_back(&a);
    const int full = 16;  // tiny's n_embd: every linear's smaller side, so nothing is truncated
    for (AverageMethod method : {AverageMethod::kMedian, AverageMethod::kTrimmedMean}) {
        AverageOptions o;
        o.method = method;
        o.svd_rank = full;
        o.trim_fraction = 0.2;  // one value dropped at each end of 5
        AverageReport rep;
        const Adapter got = average_adapters(in, {}, o, &rep);
        CHECK(rep.svd_residual < 1e-6);
        double err2 = 0.0, ref2 = 0.0;
        for (std::size_t k = 0; k < got.linears().size(); ++k) {
            const std::vector<float> g = dense_update(got, got.linears()[k]);
            std::vector<std::vector<float>> d;
            for (const Adapter& a : ads) d.push_back(dense_update(a, a.linears()[k]));
            for (std::size_t c = 0; c < g.size(); ++c) {
                std::vector<double> v;
                for (const auto& x : d) v.push_back(x[c]);
                std::sort(v.begin(), v.end());
                const double want = method == AverageMethod::kMedian ? v[2] : (v[1] + v[2] + v[3]) / 3.0;
                err2 += (g[c] - want) * (g[c] - want), ref2 += want * want;
            }
        }
        CAPTURE(average_method_name(method));
        CHECK(std::sqrt(err2 / ref2) < 1e-5);
    }
    // Clipping to the median norm scales the two above it (of five) down, to that norm.
    AverageOptions clip;
    clip.method = AverageMethod::kConcat;
    clip.clip = ClipMode::kMedian;
    AverageReport rep;
    const Adapter c = average_adapters(in, {}, clip, &rep);
    CHECK(rep.clipped == 2);
    std::vector<double> totals;
    for (const Adapter& a : ads) {
        double s2 = 0.0;
        for (double x : update_norms(a)) s2 += x * x;
        totals.push_back(std::sqrt(s2));
    }
    CHECK(rep.clip_bound == Approx(median_of(totals)));
    std::vector<Adapter> scaled = ads;
    std::vector<const Adapter*> clipped_in;
    for (std::size_t i = 0; i < scaled.size(); ++i) {
        if (totals[i] > rep.clip_bound)
            for (const AdaptedLinear& m : scaled[i].linears())
                for (int64_t j = 0; j < m.out * 2; ++j) scaled[i].b(m)[j] *= float(rep.clip_bound / totals[i]);
        clipped_in.push_back(&scaled[i]);
    }
    CHECK(distance_from_mean(c, clipped_in, {1, 1, 1, 1, 1}) < 1e-5);
    // update_norms is ||s B A||_F of the dense update.
    for (std::size_t k = 0; k < ads[0].linears().size(); ++k) {
        const std::vector<float> d = dense_update(ads[0], ads[0].linears()[k]);
        double s2 = 0.0;
        for (float x : d) s2 += double(x) * x;
        CHECK(update_norms(ads[0])[k] == Approx(std::sqrt(s2)).epsilon(1e-5));
    }
    // A bound above every norm clips nothing.
    clip.clip = ClipMode::kBound;
    clip.clip_norm = 1e9;
    average_adapters(in, {}, clip, &rep);
    CHECK(rep.clipped == 0);
    CHECK(rep.clip_bound == 1e9);
}

TEST_CASE("average: the C API", "[coord][average][capi]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* base = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &base) == PG_OK);
    pg_lora_config lc;
    pg_lora_config_default(&lc);
    lc.rank = 2;
    pg_lora_adapter* a = nullptr;
    pg_lora_adapter* b = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &lc, &a) == PG_OK);
    lc.rank = 3;
    lc.init_seed = 5;
    REQUIRE(pg_lora_adapter_create(base, &lc, &b) == PG_OK);
    // Give the B factors something (a fresh adapter's B is zero).
    for (pg_lora_adapter* ad : {a, b}) {
        int32_t nt = 0;
        REQUIRE(pg_lora_adapter_num_tensors(ad, &nt) == PG_OK);
        for (int32_t t = 0; t < nt; ++t) {
            pg_tensor_info ti{};
            ti.struct_size = sizeof ti;
            REQUIRE(pg_lora_adapter_tensor_info(ad, t, &ti) == PG_OK);
            float* d = nullptr;
            REQUIRE(pg_lora_adapter_tensor_data_mutable(ad, t, &d) == PG_OK);
            for (int64_t j = 0; j < ti.numel; ++j) d[j] += 0.01f * float((j * 7 + t) % 11);
        }
    }
    const pg_lora_adapter* in[2] = {a, b};
    const double w[2] = {1.0, 3.0};
    pg_lora_average_config cfg;
    pg_lora_average_config_default(&cfg);
    CHECK(cfg.method == PG_LORA_AVERAGE_FEDAVG_FACTORS);
    pg_lora_adapter* out = reinterpret_cast<pg_lora_adapter*>(1);
    CHECK(pg_lora_average(in, 2, w, &cfg, &out, nullptr) == PG_ERR_GEOMETRY);  // ranks 2 and 3
    CHECK(out == nullptr);
    CHECK(std::string(pg_last_error()).find("rank") != std::string::npos);
    cfg.method = PG_LORA_AVERAGE_CAT;
    pg_lora_average_report rep{};
    rep.struct_size = sizeof rep;
    REQUIRE(pg_lora_average(in, 2, w, &cfg, &out, &rep) == PG_OK);
    CHECK(rep.rank == 5);
    CHECK(rep.relative_error < 1e-6);
    pg_lora_config got;
    got.struct_size = sizeof got;
    REQUIRE(pg_lora_adapter_get_config(out, &got) == PG_OK);
    CHECK(got.rank == 5);
    pg_lora_adapter_free(out);
    cfg.method = PG_LORA_AVERAGE_SVD;
    cfg.svd_rank = 2;
    REQUIRE(pg_lora_average(in, 2, nullptr, &cfg, &out, &rep) == PG_OK);
    CHECK(rep.rank == 2);
    CHECK(rep.svd_residual > 0.0);
    pg_lora_adapter_free(out);
    // The robust methods and clipping (one vote each: weights refused).
    cfg.method = PG_LORA_AVERAGE_MEDIAN;
    cfg.clip = PG_LORA_CLIP_MEDIAN;
    REQUIRE(pg_lora_average(in, 2, nullptr, &cfg, &out, &rep) == PG_OK);
    CHECK(rep.clipped == 1);
    CHECK(rep.clip_bound > 0.0);
    pg_lora_adapter_free(out);
    CHECK(pg_lora_average(in, 2, w, &cfg, &out, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("pass no weights"));
    cfg.method = PG_LORA_AVERAGE_TRIMMED_MEAN;
    cfg.trim_fraction = 0.5;
    CHECK(pg_lora_average(in, 2, nullptr, &cfg, &out, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("trim_fraction"));
    cfg.trim_fraction = 0.25;
    cfg.clip = PG_LORA_CLIP_BOUND;
    CHECK(pg_lora_average(in, 2, nullptr, &cfg, &out, &rep) == PG_ERR_INVALID_ARGUMENT);  // clip_norm 0
    CHECK_THAT(pg_last_error(), Catch::Contains("clip_norm"));
    cfg.clip = static_cast<pg_lora_clip_mode>(7);
    CHECK(pg_lora_average(in, 2, nullptr, &cfg, &out, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK_THAT(pg_last_error(), Catch::Contains("config->clip"));
    cfg.clip = PG_LORA_CLIP_NONE;
    cfg.method = static_cast<pg_lora_average_method>(9);
    CHECK(pg_lora_average(in, 2, nullptr, &cfg, &out, &rep) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_average(in, 0, nullptr, nullptr, &out, nullptr) == PG_ERR_INVALID_ARGUMENT);
    const pg_lora_adapter* with_null[2] = {a, nullptr};
    CHECK(pg_lora_average(with_null, 2, nullptr, nullptr, &out, nullptr) == PG_ERR_INVALID_ARGUMENT);
    pg_lora_adapter_free(a);
    pg_lora_adapter_free(b);
    pg_model_free(base);
}
