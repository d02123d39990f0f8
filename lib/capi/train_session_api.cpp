// C API: training sessions (train/train_session.hpp) over a full-training Trainer or a LoRA
// trainer, each checkpointed by the same writer as pg_trainer_save / pg_lora_trainer_save, and
// the training memory plan (train/memory_plan.hpp) their creation checks a budget with.
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "capi/lora_handles.hpp"
#include "capi/train_boundary.hpp"
#include "core/struct_fields.hpp"
#include "io/checkpoint.hpp"
#include "lora/adapter_file.hpp"
#include "train/memory_plan.hpp"
#include "train/train_session.hpp"
#include "train/trainer.hpp"

struct pg_train_session {
    pg_model* model = nullptr;  // full training: counted in model->n_trainers while the session lives
    pg_lora_adapter* adapter = nullptr;  // LoRA: borrowed
    std::unique_ptr<pg::TrainSession> impl;
    pg::HandleId id;
    pg::HandleMessage last_error;
    ~pg_train_session() {
        impl.reset();
        if (model) --model->n_trainers;
    }
};

namespace {

pg::ErrorTarget err(const pg_train_session* s) { return pg::shared_errors(s); }
pg::ErrorTarget err(pg_train_session* s) { return pg::owned_errors(s); }

pg::TrainSession& impl(pg_train_session* s, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, s);
    pg::require_arg(s->impl != nullptr, fn, "session has no state");
    return *s->impl;
}

pg_train_session_config full_default_config() {
    pg_train_session_config c = pg::blank_c_struct<pg_train_session_config>();
    const pg::SessionPolicy p;
    const pg::SessionLimits l;
    c.max_steps = 0;
    c.time_budget_ms = 0;
    c.checkpoint_every_steps = 50;
    c.checkpoint_every_ms = 30000;
    c.memory_budget_bytes = 0;
    c.throughput_window_ms = l.throughput_window_ms;
    c.throttle_thermal = p.throttle_thermal;
    c.throttle_threads = p.throttle_threads;
    c.throttle_sleep_ms = p.throttle_sleep_ms;
    c.pause_thermal = p.pause_thermal;
    c.battery_floor_percent = p.battery_floor_percent;
    c.pause_unless_charging = p.pause_unless_charging ? 1 : 0;
    return c;
}

void require_field(bool ok, const char* fn, const std::string& what) {
    pg::require_arg(ok, fn, ("config->" + what).c_str());
}

struct SessionSettings {
    pg::SessionLimits limits;
    pg::SessionPolicy policy;
    int64_t memory_budget = 0;
};

SessionSettings settings_from_c(const pg_train_session_config* config, int64_t total_steps, const char* fn) {
    pg_train_session_config c = full_default_config();
    if (config) pg::read_options(config, &c, fn);
    auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
    const int64_t big = int64_t(1) << 50;
    require_field(in(c.max_steps, 0, big), fn, "max_steps " + std::to_string(c.max_steps) + " is negative");
    require_field(in(c.time_budget_ms, 0, big), fn, "time_budget_ms " + std::to_string(c.time_budget_ms) + " is negative");
    require_field(in(c.checkpoint_every_steps, 0, big), fn,
                  "checkpoint_every_steps " + std::to_string(c.checkpoint_every_steps) + " is negative");
    require_field(in(c.checkpoint_every_ms, 0, big), fn,
                  "checkpoint_every_ms " + std::to_string(c.checkpoint_every_ms) + " is negative");
    require_field(in(c.memory_budget_bytes, 0, big), fn,
                  "memory_budget_bytes " + std::to_string(c.memory_budget_bytes) + " is negative");
    require_field(in(c.throughput_window_ms, 1, big), fn,
                  "throughput_window_ms " + std::to_string(c.throughput_window_ms) + " is not positive");
    require_field(in(c.throttle_thermal, 0, 6), fn,
                  "throttle_thermal " + std::to_string(c.throttle_thermal) + " is not a pg_thermal_status (0..6)");
    require_field(in(c.pause_thermal, c.throttle_thermal, 7), fn,
                  "pause_thermal " + std::to_string(c.pause_thermal) + " is not in [throttle_thermal, 7] (7: never)");
    require_field(in(c.throttle_threads, 1, 1024), fn,
                  "throttle_threads " + std::to_string(c.throttle_threads) + " is not in [1, 1024]");
    require_field(in(c.throttle_sleep_ms, 0, 3600000), fn,
                  "throttle_sleep_ms " + std::to_string(c.throttle_sleep_ms) + " is not in [0, 3600000]");
    require_field(in(c.battery_floor_percent, 0, 100), fn,
                  "battery_floor_percent " + std::to_string(c.battery_floor_percent) + " is not in [0, 100]");
    require_field(in(c.pause_unless_charging, 0, 1), fn,
                  "pause_unless_charging must be 0 or 1, not " + std::to_string(c.pause_unless_charging));
    SessionSettings s;
    s.limits.max_steps = c.max_steps > 0 ? c.max_steps : total_steps;
    s.limits.time_budget_ms = c.time_budget_ms;
    s.limits.checkpoint_every_steps = c.checkpoint_every_steps;
    s.limits.checkpoint_every_ms = c.checkpoint_every_ms;
    s.limits.throughput_window_ms = c.throughput_window_ms;
    s.policy.throttle_thermal = c.throttle_thermal;
    s.policy.throttle_threads = c.throttle_threads;
    s.policy.throttle_sleep_ms = c.throttle_sleep_ms;
    s.policy.pause_thermal = c.pause_thermal;
    s.policy.battery_floor_percent = c.battery_floor_percent;
    s.policy.pause_unless_charging = c.pause_unless_charging == 1;
    s.memory_budget = c.memory_budget_bytes;
    return s;
}

bool file_exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

// A resumed run keeps the file's configuration: the caller's must be the same run's (its
// n_threads aside, which the session applies).
void require_same_run(const pg::TrainConfig& file, pg::TrainConfig given, const std::string& path) {
    given.n_threads = file.n_threads;
    const pg_train_config a = pg::train_config_to_c(file), b = pg::train_config_to_c(given);
    if (const char* field = pg::first_differing_field(a, b))
        throw pg::Error(PG_ERR_STATE, "\"" + path + "\" continues a run whose train config differs in " + field +
                                          " (delete the file to start a new run, or pass the run's config)");
}

class FullTarget final : public pg::SessionTarget {
public:
    FullTarget(pg::Model& model, std::unique_ptr<pg::Trainer> trainer, std::string path)
        : model_(model), trainer_(std::move(trainer)), path_(std::move(path)) {}
    pg::StepResult step() override { return trainer_->step(); }
    int64_t step_count() const override { return trainer_->step_count(); }
    int threads() const override { return trainer_->threads(); }
    void set_threads(int n) override { trainer_->set_threads(n); }
    std::vector<pg::CpuCore> pinned_cores() const override { return trainer_->pinned_cores(); }
    void save_checkpoint() override {
        const pg::TrainerState state = trainer_->state();
        pg::io::save_checkpoint(model_, &state, pg::io::CheckpointOptions{}, path_);
    }
    pg::Trainer& trainer() { return *trainer_; }

private:
    pg::Model& model_;
    std::unique_ptr<pg::Trainer> trainer_;
    std::string path_;
};

class LoraTarget final : public pg::SessionTarget {
public:
    LoraTarget(std::unique_ptr<pg::lora::LoraTrainer> trainer, std::string path)
        : trainer_(std::move(trainer)), path_(std::move(path)) {}
    pg::StepResult step() override { return trainer_->step(); }
    int64_t step_count() const override { return trainer_->step_count(); }
    int threads() const override { return trainer_->threads(); }
    void set_threads(int n) override { trainer_->set_threads(n); }
    std::vector<pg::CpuCore> pinned_cores() const override { return trainer_->pinned_cores(); }
    void save_checkpoint() override { pg::lora::save_adapter_training(trainer_->adapter(), trainer_->state(), path_); }
    pg::lora::LoraTrainer& trainer() { return *trainer_; }

private:
    std::unique_ptr<pg::lora::LoraTrainer> trainer_;
    std::string path_;
};

// Full training: a new trainer, or the checkpoint's weights and state.
std::unique_ptr<pg::Trainer> full_trainer(pg::Model& model, const pg::TrainConfig& cfg, const std::string& path) {
    if (!file_exists(path)) return std::make_unique<pg::Trainer>(model, cfg);
    pg::io::FileSource src(path);
    pg::io::CheckpointHeader header = pg::io::read_checkpoint_header(src);
    if (!header.has_train_state)
        throw pg::Error(PG_ERR_STATE, "\"" + path + "\" holds no training state (it was saved with pg_model_save)");
    const pg_model_config file_geometry = pg::model_config_to_c(header.config);
    const pg_model_config geometry = pg::model_config_to_c(model.config());
    if (const char* field = pg::first_differing_field(file_geometry, geometry))
        throw pg::Error(PG_ERR_GEOMETRY, "\"" + path + "\" holds a model whose " + field +
                                             " differs from the session's model");
    pg::Model stored = pg::io::make_model_for(header);
    pg::TrainerState state;
    pg::io::read_checkpoint_data(src, header, stored, &state);
    require_same_run(state.config, pg::resolve_train_config(model.config(), cfg), path);
    auto trainer = std::make_unique<pg::Trainer>(model, std::move(state));  // checks before any write
    std::copy(stored.params(), stored.params() + stored.num_params(), model.params());
    model.set_provenance(stored.provenance());
    trainer->set_threads(cfg.n_threads);
    return trainer;
}

// The same adapter shape: rank, scale, targets, layers and the frozen factor.
void require_same_adapter(const pg::lora::Adapter& file, const pg::lora::Adapter& given, const std::string& path) {
    const auto& f = file.config();
    const auto& g = given.config();
    const bool same = f.rank == g.rank && f.alpha == g.alpha && f.use_rslora == g.use_rslora &&
                      f.dropout == g.dropout && f.target_modules == g.target_modules && f.layers == g.layers &&
                      f.freeze_a == g.freeze_a && file.num_params() == given.num_params();
    if (!same)
        throw pg::Error(PG_ERR_GEOMETRY, "\"" + path + "\" holds an adapter whose configuration (rank " +
                                             std::to_string(f.rank) + ", " + std::to_string(file.num_params()) +
                                             " parameters) differs from the session's adapter (rank " +
                                             std::to_string(g.rank) + ", " + std::to_string(given.num_params()) +
                                             " parameters)");
}

std::unique_ptr<pg::lora::LoraTrainer> lora_trainer(const pg_model& base, pg_lora_adapter& adapter,
                                                    const pg::TrainConfig& cfg, const std::string& path) {
    if (!file_exists(path))
        return std::make_unique<pg::lora::LoraTrainer>(base.impl, adapter.impl, cfg, base.allow_untrained_base);
    pg::TrainerState state;
    pg::lora::Adapter stored = pg::lora::load_adapter_training(path, state);
    require_same_adapter(stored, adapter.impl, path);
    pg::lora::check_adapter_matches_base(stored, base.impl);
    require_same_run(state.config, pg::resolve_train_config(base.impl.config(), cfg), path);
    // Every check on the stored pair before the caller's adapter is replaced.
    pg::lora::LoraTrainer(base.impl, stored, state, base.allow_untrained_base);
    adapter.impl = std::move(stored);
    auto trainer = std::make_unique<pg::lora::LoraTrainer>(base.impl, adapter.impl, std::move(state),
                                                           base.allow_untrained_base);
    trainer->set_threads(cfg.n_threads);
    return trainer;
}

void write_report(const pg::SessionReport& r, pg_train_session_report* out, const char* fn) {
    if (!out) return;
    pg_train_session_report full = pg::blank_c_struct<pg_train_session_report>();
    full.stop = pg_train_stop(int(r.stop));
    full.step = r.step;
    full.steps_run = r.steps_run;
    full.last_loss = r.last_loss;
    full.checkpoints = r.checkpoints;
    full.checkpoint_step = r.checkpoint_step;
    full.tokens_per_second = r.tokens_per_second;
    full.threads = r.threads;
    full.paused = r.paused ? 1 : 0;
    full.paused_ms = r.paused_ms;
    pg::write_result(full, out, fn);
}

pg::AdapterShape adapter_shape(const pg::lora::Adapter& a) {
    pg::AdapterShape s;
    s.params = a.num_params();
    s.rank = a.config().rank;
    s.dropout = a.config().dropout > 0.0f;
    return s;
}

void write_plan(const pg::TrainingMemoryPlan& p, pg_memory_plan* out, const char* fn) {
    pg_memory_plan full = pg::blank_c_struct<pg_memory_plan>();
    full.weights_bytes = p.weights_bytes;
    full.adapter_bytes = p.trained_bytes;
    full.gradient_bytes = p.gradient_bytes;
    full.optimizer_bytes = p.optimizer_bytes;
    full.activation_bytes = p.activation_bytes;
    full.checkpoint_bytes = p.checkpoint_bytes;
    full.data_bytes = p.data_bytes;
    full.runtime_bytes = p.runtime_bytes;
    full.peak_bytes = p.peak_bytes;
    full.batch_size = p.batch_size;
    pg::write_result(full, out, fn);
}

// The plan's inputs from the C arguments; `shape` is filled for an adapter (lora non-NULL).
struct PlanInputs {
    pg::ModelConfig model;
    pg::WeightStorage storage = pg::WeightStorage::fp32;
    pg::TrainConfig train;
    pg::AdapterShape shape;
    bool has_adapter = false;
};

PlanInputs plan_inputs(const pg_model_config* model, int32_t storage, const pg_lora_config* lora,
                       const pg_train_config* train, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, model);
    PG_REQUIRE_NOT_NULL(fn, train);
    PlanInputs in;
    in.model = pg::model_config_from_c(*model);
    pg::require_arg(storage >= PG_WEIGHTS_FP32 && storage <= PG_WEIGHTS_Q4_0, fn,
                    ("storage " + std::to_string(storage) + " is not a pg_weight_storage (0..6)").c_str());
    // The deprecated _ARITHMETIC spellings hold the values of their plain storage.
    in.storage = storage == PG_WEIGHTS_FP16_ARITHMETIC   ? pg::WeightStorage::fp16
                 : storage == PG_WEIGHTS_BF16_ARITHMETIC ? pg::WeightStorage::bf16
                                                         : pg::WeightStorage(storage);
    in.train = pg::train_config_from_c(*train);
    if (lora) {
        pg::lora::BaseIdentity base;
        base.config = in.model;
        const pg::lora::Adapter shape_only(pg::lora::lora_config_from_c(*lora), base);  // small: the factors only
        in.shape = adapter_shape(shape_only);
        in.has_adapter = true;
    }
    return in;
}

void refuse_over_budget(const pg::TrainingMemoryPlan& plan, int64_t budget, const char* fn) {
    if (budget <= 0 || plan.peak_bytes <= budget) return;
    throw pg::Error(PG_ERR_OUT_OF_MEMORY, std::string(fn) + ": the predicted peak of " +
                                              pg::describe_memory_plan(plan) + " exceeds memory_budget_bytes " +
                                              std::to_string(budget) + " (" + pg::mib_text(budget) + ")");
}

}  // namespace

extern "C" {

void pg_train_session_config_default(pg_train_session_config* config) {
    if (config) *config = full_default_config();
}

void pg_device_conditions_default(pg_device_conditions* conditions) {
    if (!conditions) return;
    pg_device_conditions c = pg::blank_c_struct<pg_device_conditions>();
    c.battery_percent = -1;
    c.charging = 1;
    c.thermal_status = PG_THERMAL_NONE;
    *conditions = c;
}

pg_status pg_train_memory_plan(const pg_model_config* model, pg_weight_storage storage, const pg_lora_config* lora,
                               const pg_train_config* train, int64_t n_data_tokens, pg_memory_plan* plan) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_train_memory_plan";
        PG_REQUIRE_NOT_NULL(fn, plan);
        pg::check_struct_size(*plan, fn);
        const PlanInputs in = plan_inputs(model, pg::enum_code(storage), lora, train, fn);
        pg::TrainingMemoryPlan p;
        pg::named(fn, [&] {
            p = pg::plan_training_memory(in.model, in.storage, in.has_adapter ? &in.shape : nullptr, in.train,
                                         n_data_tokens);
        });
        write_plan(p, plan, fn);
    });
}

pg_status pg_train_memory_max_batch(const pg_model_config* model, pg_weight_storage storage, const pg_lora_config* lora,
                                    const pg_train_config* train, int64_t n_data_tokens, int64_t budget_bytes,
                                    pg_memory_plan* plan) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_train_memory_max_batch";
        PG_REQUIRE_NOT_NULL(fn, plan);
        pg::check_struct_size(*plan, fn);
        const PlanInputs in = plan_inputs(model, pg::enum_code(storage), lora, train, fn);
        pg::TrainingMemoryPlan p;
        pg::named(fn, [&] {
            p = pg::largest_batch_within(in.model, in.storage, in.has_adapter ? &in.shape : nullptr, in.train,
                                         n_data_tokens, budget_bytes);
        });
        write_plan(p, plan, fn);
    });
}

pg_status pg_train_session_create(pg_model* model, const pg_train_config* train,
                                  const pg_train_session_config* config, const char* checkpoint_path,
                                  pg_train_session** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_train_session_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, model);
        PG_REQUIRE_NOT_NULL(fn, train);
        PG_REQUIRE_NOT_NULL(fn, checkpoint_path);
        const pg::TrainConfig cfg = pg::train_config_from_c(*train);
        const SessionSettings s = settings_from_c(config, cfg.total_steps, fn);
        if (s.memory_budget > 0)
            refuse_over_budget(pg::plan_training_memory(model->impl.config(), pg::WeightStorage::fp32, nullptr, cfg, 0),
                               s.memory_budget, fn);
        auto handle = std::make_unique<pg_train_session>();
        pg::named(fn, [&] {
            auto trainer = full_trainer(model->impl, cfg, checkpoint_path);
            handle->model = model;
            ++model->n_trainers;
            handle->impl = std::make_unique<pg::TrainSession>(
                std::make_unique<FullTarget>(model->impl, std::move(trainer), checkpoint_path), s.limits, s.policy);
        });
        *out = handle.release();
    });
}

pg_status pg_train_session_create_lora(const pg_model* base, pg_lora_adapter* adapter, const pg_train_config* train,
                                       const pg_train_session_config* config, const char* checkpoint_path,
                                       pg_train_session** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_train_session_create_lora";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        PG_REQUIRE_NOT_NULL(fn, base);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        PG_REQUIRE_NOT_NULL(fn, train);
        PG_REQUIRE_NOT_NULL(fn, checkpoint_path);
        const pg::TrainConfig cfg = pg::train_config_from_c(*train);
        const SessionSettings s = settings_from_c(config, cfg.total_steps, fn);
        if (s.memory_budget > 0) {
            const pg::AdapterShape shape = adapter_shape(adapter->impl);
            refuse_over_budget(pg::plan_training_memory(base->impl.config(), base->impl.storage(), &shape, cfg, 0),
                               s.memory_budget, fn);
        }
        auto handle = std::make_unique<pg_train_session>();
        pg::named(fn, [&] {
            auto trainer = lora_trainer(*base, *adapter, cfg, checkpoint_path);
            handle->adapter = adapter;
            handle->impl = std::make_unique<pg::TrainSession>(
                std::make_unique<LoraTarget>(std::move(trainer), checkpoint_path), s.limits, s.policy);
        });
        *out = handle.release();
    });
}

void pg_train_session_free(pg_train_session* session) { delete session; }

const char* pg_train_session_last_error(const pg_train_session* session) {
    return session ? pg::handle_last_error(session->id, &session->last_error) : "session is NULL";
}

pg_status pg_train_session_set_data(pg_train_session* session, const int32_t* tokens, size_t n) {
    return pg::guarded(err(session), [&] {
        const char* fn = "pg_train_session_set_data";
        pg::TrainSession& s = impl(session, fn);
        PG_REQUIRE_NOT_NULL(fn, tokens);
        pg::named(fn, [&] {
            pg::SessionTarget& t = s.target();
            if (auto* full = dynamic_cast<FullTarget*>(&t)) full->trainer().set_data(tokens, n);
            else static_cast<LoraTarget&>(t).trainer().set_data(tokens, n);
        });
    });
}

pg_status pg_train_session_run(pg_train_session* session, pg_train_session_report* report) {
    return pg::guarded(err(session), [&] {
        const char* fn = "pg_train_session_run";
        pg::TrainSession& s = impl(session, fn);
        if (report) pg::check_struct_size(*report, fn);  // before the run, which cannot be undone
        pg::SessionReport r;
        pg::named(fn, [&] { r = s.run(); });
        write_report(r, report, fn);
    });
}

pg_status pg_train_session_cancel(pg_train_session* session) {
    return pg::guarded(err(static_cast<const pg_train_session*>(session)), [&] {
        impl(session, "pg_train_session_cancel").cancel();
    });
}

pg_status pg_train_session_set_conditions(pg_train_session* session, const pg_device_conditions* conditions) {
    return pg::guarded(err(static_cast<const pg_train_session*>(session)), [&] {
        const char* fn = "pg_train_session_set_conditions";
        pg::TrainSession& s = impl(session, fn);
        PG_REQUIRE_NOT_NULL(fn, conditions);
        pg_device_conditions c;
        pg_device_conditions_default(&c);
        pg::read_options(conditions, &c, fn);
        pg::require_arg(c.battery_percent >= -1 && c.battery_percent <= 100, fn,
                        ("conditions->battery_percent " + std::to_string(c.battery_percent) +
                         " is not in [0, 100] or -1 (unknown)").c_str());
        pg::require_arg(c.charging == 0 || c.charging == 1, fn,
                        ("conditions->charging must be 0 or 1, not " + std::to_string(c.charging)).c_str());
        pg::require_arg(c.thermal_status >= PG_THERMAL_NONE && c.thermal_status <= PG_THERMAL_SHUTDOWN, fn,
                        ("conditions->thermal_status " + std::to_string(c.thermal_status) +
                         " is not a pg_thermal_status (0..6)").c_str());
        s.set_conditions({c.battery_percent, c.charging == 1, c.thermal_status});
    });
}

pg_status pg_train_session_get_report(pg_train_session* session, pg_train_session_report* report) {
    return pg::guarded(err(static_cast<const pg_train_session*>(session)), [&] {
        const char* fn = "pg_train_session_get_report";
        pg::TrainSession& s = impl(session, fn);
        PG_REQUIRE_NOT_NULL(fn, report);
        write_report(s.report(), report, fn);
    });
}

pg_status pg_train_session_core_rates(pg_train_session* session, int32_t* capacities, double* tokens_per_second,
                                      int32_t capacity, int32_t* n) {
    return pg::guarded(err(static_cast<const pg_train_session*>(session)), [&] {
        const char* fn = "pg_train_session_core_rates";
        pg::TrainSession& s = impl(session, fn);
        PG_REQUIRE_NOT_NULL(fn, n);
        const std::vector<pg::CoreClassRate> rates = s.core_class_rates();
        *n = int32_t(rates.size());
        if (rates.empty()) return;
        pg::require(capacity >= int32_t(rates.size()), PG_ERR_BUFFER_TOO_SMALL,
                    std::string(fn) + ": capacity " + std::to_string(capacity) + " is below the " +
                        std::to_string(rates.size()) + " core classes");
        PG_REQUIRE_NOT_NULL(fn, capacities);
        PG_REQUIRE_NOT_NULL(fn, tokens_per_second);
        for (std::size_t i = 0; i < rates.size(); ++i) {
            capacities[i] = rates[i].capacity;
            tokens_per_second[i] = rates[i].tokens_per_second;
        }
    });
}

}  // extern "C"
