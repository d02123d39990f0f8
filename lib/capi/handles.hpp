// The structs behind the opaque C handles. Only lib/capi sees them; they hold the internal
// objects plus what the C boundary needs: the HandleId under which failures are kept per thread
// and, for the handles that calls change, their own message (capi/boundary.hpp).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/model_args.hpp"
#include "eval/session.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {
class Trainer;
}

// Read-only after creation: encode and decode may run on many threads at once.
struct pg_tokenizer {
    std::unique_ptr<pg::Tokenizer> impl;
    pg::HandleId id;
};

// Read-only to every call that takes it const (evaluation, sampling, sessions, saving), so many
// threads may read one model at once.
struct pg_model {
    explicit pg_model(const pg::ModelConfig& cfg) : impl(cfg) {}
    explicit pg_model(pg::Model&& m) : impl(std::move(m)) {}  // a 16-bit or mapped model
    pg::Model impl;
    // The handle pg_model_get_tokenizer returns: a view of impl.tokenizer() built whenever the
    // tokenizer changes (set_tokenizer / sync_tokenizer_handle), never by a reader.
    std::unique_ptr<pg_tokenizer> tokenizer_handle;
    pg::HandleId id;

    // Installs `tok` (NULL = none). Precondition: its vocabulary equals the model's vocab_size
    // (checked at the boundary by pg::capi::require_tokenizer_fits, or by the checkpoint
    // reader for a tokenizer read from a file).
    void set_tokenizer(std::unique_ptr<pg::Tokenizer> tok) {
        impl.set_tokenizer(std::move(tok));
        sync_tokenizer_handle();
    }
    // Rebuilds tokenizer_handle after impl's tokenizer was set by internal code (a merge).
    void sync_tokenizer_handle() {
        tokenizer_handle.reset();
        if (!impl.tokenizer()) return;
        auto h = std::make_unique<pg_tokenizer>();
        h->impl = impl.tokenizer()->clone();
        tokenizer_handle = std::move(h);
    }
    // pg_model_allow_untrained_base: LoRA may train on / validate against this handle's
    // weights even if they were never trained. Never saved.
    bool allow_untrained_base = false;
    // The pg_trainers that live on this model: each keeps a pointer into its fp32 weights, so
    // pg_model_set_weight_storage, which would free them, is refused while any lives.
    std::atomic<int> n_trainers{0};
};

struct pg_trainer {
    pg_trainer() = default;
    pg_trainer(const pg_trainer&) = delete;
    pg_trainer& operator=(const pg_trainer&) = delete;
    ~pg_trainer();  // trainer_api.cpp (pg::Trainer is complete there): uncounts the trainer
    // Borrows `m` and counts this trainer in m->n_trainers until it is freed.
    void attach(pg_model* m) {
        model = m;
        ++m->n_trainers;
    }
    pg_model* model = nullptr;  // borrowed (attach)
    std::unique_ptr<pg::Trainer> impl;
    pg::HandleId id;
    pg::HandleMessage last_error;  // written by the calls that take the trainer non-const
};

struct pg_session {
    pg_session(const pg_model* m, const pg::SessionOptions& options) : model(m), impl(m->impl, options) {}
    const pg_model* model;  // borrowed
    pg::Session impl;
    pg::HandleId id;
    pg::HandleMessage last_error;  // written by the calls that take the session non-const
    // The attached adapter's hook (session_lora_api.cpp); the adapter is borrowed.
    std::unique_ptr<pg::LinearHook> hook;
    const pg_lora_adapter* adapter = nullptr;
};
