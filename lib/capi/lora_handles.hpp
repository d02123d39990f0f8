// The structs behind pg_lora_adapter and pg_lora_trainer (beside handles.hpp, which holds the model-side handles):
// the adapter plus the per-handle last-error message.
#pragma once

#include <string>

#include <memory>

#include "lora/adapter.hpp"
#include "lora/lora_trainer.hpp"

struct pg_lora_adapter {
    explicit pg_lora_adapter(pg::lora::Adapter a) : impl(std::move(a)) {}
    pg::lora::Adapter impl;
    mutable std::string last_error;
};

struct pg_lora_trainer {
    pg_lora_adapter* adapter = nullptr;  // borrowed
    std::unique_ptr<pg::lora::LoraTrainer> impl;
    mutable std::string last_error;
};
