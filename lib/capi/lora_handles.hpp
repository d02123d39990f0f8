// The struct behind pg_lora_adapter (beside handles.hpp, which holds the model-side handles):
// the adapter plus the per-handle last-error message.
#pragma once

#include <string>

#include "lora/adapter.hpp"

struct pg_lora_adapter {
    explicit pg_lora_adapter(pg::lora::Adapter a) : impl(std::move(a)) {}
    pg::lora::Adapter impl;
    mutable std::string last_error;
};
