// The structs behind the opaque C handles. Only lib/capi sees them; they hold the internal
// objects plus what the C boundary needs (the per-handle last-error message).
#pragma once

#include <memory>
#include <string>

#include "eval/session.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {
class Trainer;
}

struct pg_tokenizer {
    std::unique_ptr<pg::Tokenizer> impl;
    mutable std::string last_error;
};

struct pg_model {
    explicit pg_model(const pg::ModelConfig& cfg) : impl(cfg) {}
    pg::Model impl;
    // Handle view of impl.tokenizer(), created on demand by pg_model_get_tokenizer and
    // dropped when the tokenizer is replaced.
    std::unique_ptr<pg_tokenizer> tokenizer_handle;
    // pg_model_allow_untrained_base: LoRA may train on / validate against this handle's
    // weights even if they were never trained. Never saved.
    bool allow_untrained_base = false;
    mutable std::string last_error;
};

struct pg_trainer {
    pg_model* model = nullptr;  // borrowed
    std::unique_ptr<pg::Trainer> impl;
    mutable std::string last_error;
};

struct pg_session {
    pg_session(const pg_model* m, const pg::SessionOptions& options) : model(m), impl(m->impl, options) {}
    const pg_model* model;  // borrowed
    pg::Session impl;
    // The attached adapter's hook (session_lora_api.cpp); the adapter is borrowed.
    std::unique_ptr<pg::LinearHook> hook;
    const pg_lora_adapter* adapter = nullptr;
    std::string last_error;
};
