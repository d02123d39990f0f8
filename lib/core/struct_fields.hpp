// Size-prefixed C structs of the public API: reading those of callers compiled against an older
// header (a field is present only if the caller's struct_size reaches its end), and making the
// library's own full-size ones.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>

// True when the struct `s` (which starts with uint32_t struct_size) contains `field`.
#define PG_STRUCT_HAS_FIELD(s, field)                                                       \
    (static_cast<std::size_t>((s).struct_size) >=                                           \
     offsetof(std::remove_cv_t<std::remove_reference_t<decltype(s)>>, field) + sizeof((s).field))

namespace pg {

// Every field zero and struct_size = the full size: what the library fills in before handing a
// result or a default back (capi's write_result copies the caller's share of it).
template <class S>
S blank_c_struct() {
    S s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

}  // namespace pg
