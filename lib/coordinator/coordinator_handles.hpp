// The structs behind the coordinator's handles (pg_signing_key, pg_trusted_keys), shared by
// coordinator_api.cpp (keys, signing, averaging) and validate_api.cpp (the validator).
#pragma once

#include "lora/sign.hpp"

struct pg_signing_key {
    explicit pg_signing_key(pg::lora::SigningKey k) : impl(std::move(k)) {}
    pg::lora::SigningKey impl;
};

struct pg_trusted_keys {
    pg::lora::TrustedKeys impl;
};
