#include "train/train_config.hpp"

#include <cmath>
#include <cstddef>
#include <string>

#include "core/error.hpp"
#include "core/struct_fields.hpp"

namespace pg {

namespace {

// Upper bounds that keep B*T*accum and the activation sizes far from overflow.
constexpr int kMaxBatch = 1 << 16;
constexpr int kMaxAccum = 1 << 16;
constexpr int kMaxThreads = 1024;

// Floats in messages as people write them ("0.002", not "0.002000").
[[noreturn]] void bad(const std::string& what) {
    throw Error(PG_ERR_INVALID_ARGUMENT, "train config: " + what);
}
void int_range(const char* field, long long v, long long lo, long long hi) {
    if (v < lo || v > hi)
        bad(std::string(field) + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) +
            ", " + std::to_string(hi) + "]");
}
// lo <= v < hi (hi_open) or lo <= v <= hi, and finite.
void float_range(const char* field, float v, double lo, double hi, bool hi_open) {
    bool ok = std::isfinite(v) && v >= lo && (hi_open ? v < hi : v <= hi);
    if (!ok)
        bad(std::string(field) + " = " + message_number(v) + " is outside [" + message_number(lo) + ", " +
            message_number(hi) + (hi_open ? ")" : "]"));
}
}  // namespace

TrainConfig train_config_from_c(const pg_train_config& caller) {
    const pg_train_config c = read_c_struct(caller, train_config_to_c(TrainConfig{}), "train config");
    // Enumerations and flags are read as integers: a C caller can put any value into them.
    int_range("schedule", static_cast<int>(c.schedule), PG_LR_CONSTANT, PG_LR_LINEAR);
    int_range("decay_embeddings", c.decay_embeddings, 0, 1);
    int_range("recompute_activations", c.recompute_activations, 0, 1);
    int_range("optimizer", static_cast<int>(c.optimizer), PG_OPTIMIZER_ADAMW, PG_OPTIMIZER_MUON);
    TrainConfig t;
    t.batch_size = c.batch_size;
    t.seq_len = c.seq_len;
    t.grad_accum_steps = c.grad_accum_steps;
    t.schedule = c.schedule;
    t.lr_max = c.lr_max;
    t.lr_min = c.lr_min;
    t.warmup_steps = c.warmup_steps;
    t.total_steps = c.total_steps;
    t.beta1 = c.beta1;
    t.beta2 = c.beta2;
    t.eps = c.eps;
    t.weight_decay = c.weight_decay;
    t.decay_embeddings = c.decay_embeddings != 0;
    t.grad_clip = c.grad_clip;
    t.dropout = c.dropout;
    t.seed = c.seed;
    t.n_threads = c.n_threads;
    t.recompute_activations = c.recompute_activations != 0;
    t.optimizer = c.optimizer;
    t.muon_momentum = c.muon_momentum;
    t.muon_lr_scale = c.muon_lr_scale;
    t.dropout_ramp_steps = c.dropout_ramp_steps;
    t.arithmetic = c.arithmetic;
    validate_train_config(t);
    return t;
}

pg_train_config train_config_to_c(const TrainConfig& t) {
    pg_train_config out = blank_c_struct<pg_train_config>();
    out.batch_size = t.batch_size;
    out.seq_len = t.seq_len;
    out.grad_accum_steps = t.grad_accum_steps;
    out.schedule = t.schedule;
    out.lr_max = t.lr_max;
    out.lr_min = t.lr_min;
    out.warmup_steps = t.warmup_steps;
    out.total_steps = t.total_steps;
    out.beta1 = t.beta1;
    out.beta2 = t.beta2;
    out.eps = t.eps;
    out.weight_decay = t.weight_decay;
    out.decay_embeddings = t.decay_embeddings ? 1 : 0;
    out.grad_clip = t.grad_clip;
    out.dropout = t.dropout;
    out.seed = t.seed;
    out.n_threads = t.n_threads;
    out.recompute_activations = t.recompute_activations ? 1 : 0;
    out.optimizer = t.optimizer;
    out.muon_momentum = t.muon_momentum;
    out.muon_lr_scale = t.muon_lr_scale;
    out.dropout_ramp_steps = t.dropout_ramp_steps;
    out.arithmetic = t.arithmetic;
    return out;
}

void validate_train_config(const TrainConfig& t) {
    int_range("batch_size", t.batch_size, 1, kMaxBatch);
    int_range("seq_len", t.seq_len, 0, 1 << 16);  // checked against n_ctx by the trainer
    int_range("grad_accum_steps", t.grad_accum_steps, 1, kMaxAccum);
    int_range("schedule", t.schedule, PG_LR_CONSTANT, PG_LR_LINEAR);
    float_range("lr_max", t.lr_max, 0.0, 1e3, false);
    float_range("lr_min", t.lr_min, 0.0, 1e3, false);
    if (t.lr_min > t.lr_max)
        bad("lr_min = " + message_number(t.lr_min) + " is above lr_max = " + message_number(t.lr_max));
    int_range("warmup_steps", t.warmup_steps, 0, 1LL << 30);
    int_range("total_steps", t.total_steps, 1, 1LL << 50);
    float_range("beta1", t.beta1, 0.0, 1.0, true);
    float_range("beta2", t.beta2, 0.0, 1.0, true);
    if (!(std::isfinite(t.eps) && t.eps > 0.0f && t.eps <= 1.0f))
        bad("eps = " + message_number(t.eps) + " must be in (0, 1]");
    float_range("weight_decay", t.weight_decay, 0.0, 1e3, false);
    float_range("grad_clip", t.grad_clip, 0.0, 1e30, false);
    float_range("dropout", t.dropout, 0.0, 1.0, true);
    int_range("dropout_ramp_steps", t.dropout_ramp_steps, 0, 1LL << 30);
    int_range("n_threads", t.n_threads, -(1LL << 31), kMaxThreads);
    int_range("optimizer", t.optimizer, PG_OPTIMIZER_ADAMW, PG_OPTIMIZER_MUON);
    int_range("arithmetic", t.arithmetic, PG_ARITHMETIC_EXACT, PG_ARITHMETIC_INT8);
    float_range("muon_momentum", t.muon_momentum, 0.0, 1.0, true);
    if (!(std::isfinite(t.muon_lr_scale) && t.muon_lr_scale > 0.0f && t.muon_lr_scale <= 1e3f))
        bad("muon_lr_scale = " + message_number(t.muon_lr_scale) + " must be in (0, 1000]");
}

}  // namespace pg
