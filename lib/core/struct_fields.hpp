// Reading size-prefixed option structs from callers compiled against an older header: a field
// is present only if the caller's struct_size reaches its end.
#pragma once

#include <cstddef>
#include <type_traits>

// True when the struct `s` (which starts with uint32_t struct_size) contains `field`.
#define PG_STRUCT_HAS_FIELD(s, field)                                                       \
    (static_cast<std::size_t>((s).struct_size) >=                                           \
     offsetof(std::remove_cv_t<std::remove_reference_t<decltype(s)>>, field) + sizeof((s).field))
