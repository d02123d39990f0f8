// The struct behind pg_trusted_keys, shared by coordinator_api.cpp (verifying signatures) and
// validate_api.cpp (the validator's copy of the keys).
#pragma once

#include "phonegpt/phonegpt_coordinator.h"
#include "coordinator/verify.hpp"

struct pg_trusted_keys {
    pg::lora::TrustedKeys impl;
};
