// The structs behind pg_lora_adapter and pg_lora_trainer (beside handles.hpp, which holds the
// model-side handles): the adapter, its HandleId for the per-thread error table, and the
// trainer's own message (capi/boundary.hpp).
#pragma once

#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "lora/adapter.hpp"
#include "lora/lora_trainer.hpp"

// Read-only to every call that takes it const (merging, saving, signing, averaging).
struct pg_lora_adapter {
    explicit pg_lora_adapter(pg::lora::Adapter a) : impl(std::move(a)) {}
    pg::lora::Adapter impl;
    pg::HandleId id;
};

struct pg_lora_trainer {
    pg_lora_adapter* adapter = nullptr;  // borrowed
    std::unique_ptr<pg::lora::LoraTrainer> impl;
    pg::HandleId id;
    pg::HandleMessage last_error;  // written by the calls that take the trainer non-const
};

namespace pg::capi {

// The trainer of a handle that pg_lora_trainer_create or pg_lora_trainer_resume filled.
inline lora::LoraTrainer& lora_trainer_of(pg_lora_trainer* t, const char* fn) {
    PG_REQUIRE_NOT_NULL(fn, t);
    require_arg(t->impl != nullptr, fn, "trainer has no state");
    return *t->impl;
}
inline const lora::LoraTrainer& lora_trainer_of(const pg_lora_trainer* t, const char* fn) {
    return lora_trainer_of(const_cast<pg_lora_trainer*>(t), fn);
}

}  // namespace pg::capi
