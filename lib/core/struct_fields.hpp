// The one mechanism for the public API's size-prefixed structs. Their fields are listed once, in
// core/c_struct_fields.def; from that list this header
//  - checks at compile time that the list matches every struct's layout in phonegpt.h (no
//    field missing, none extra, same order), so the list cannot drift from the header;
//  - reads a caller's struct of any struct_size over the full-size defaults: a field that the
//    caller's struct_size covers completely is the caller's, every other field keeps its
//    default (a caller compiled against an older, shorter header);
//  - writes a full-size result into a caller's struct, field by field, as far as its
//    struct_size reaches;
//  - makes the library's own full-size, zeroed structs.
// The Python binding generates its config and result classes from the same list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "phonegpt/phonegpt.h"
#include "phonegpt/phonegpt_coordinator.h"  // the list covers both tiers' structs

namespace pg {

// The vocabulary of core/c_struct_fields.def (the enumerators carry the list's own spelling).
enum class StructRole { PG_OPTIONS, PG_RESULT };
enum class FieldKind { PG_VALUE, PG_FLAG, PG_ENUM, PG_CALLBACK, PG_USER, PG_STRINGS, PG_INTS, PG_COUNT, PG_TEXT, PG_SHAPE, PG_DATA };

struct FieldInfo {
    const char* name;
    std::size_t offset, size, align;
    std::size_t scalars;  // values an aggregate initializer gives it (an array's length)
    FieldKind kind;
};

// Specialised for every struct of the list; a struct that is not listed has no definition, so
// using it with the functions below does not compile.
template <class S>
struct CStruct;

// A struct_size above this is not a size but an unset field.
constexpr uint32_t kMaxStructSize = 1u << 16;

namespace detail {

// Converts to anything: counts how many initializers an aggregate takes (brace elision makes
// an array member take one per element, which FieldInfo::scalars accounts for).
struct AnyValue {
    template <class T>
    operator T() const;  // unevaluated only
};
template <class S, class Seq, class = void>
struct takes_initializers : std::false_type {};
template <class S, std::size_t... I>
struct takes_initializers<S, std::index_sequence<I...>, std::void_t<decltype(S{(void(I), AnyValue{})...})>>
    : std::true_type {};
template <class S, std::size_t N>
constexpr bool takes_n = takes_initializers<S, std::make_index_sequence<N>>::value;

constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// The listed fields follow struct_size without gaps other than alignment and end where the
// struct does.
template <class S>
constexpr bool list_matches_layout() {
    if (offsetof(S, struct_size) != 0 || sizeof(std::declval<S&>().struct_size) != sizeof(uint32_t))
        return false;
    std::size_t end = sizeof(uint32_t);
    for (const FieldInfo& f : CStruct<S>::fields) {
        if (f.offset != align_up(end, f.align)) return false;
        end = f.offset + f.size;
    }
    return align_up(end, alignof(S)) == sizeof(S);
}

// Initializers the listed fields take, struct_size included.
template <class S>
constexpr std::size_t listed_scalars() {
    std::size_t n = 1;
    for (const FieldInfo& f : CStruct<S>::fields) n += f.scalars;
    return n;
}

// The layout matches and S takes exactly as many initializers as the list accounts for: no
// field of S can be missing from the list, none can be extra, and the order is the header's.
template <class S>
constexpr bool list_is_complete = list_matches_layout<S>() && takes_n<S, listed_scalars<S>()> &&
                                  !takes_n<S, listed_scalars<S>() + 1>;

template <class T>
constexpr std::size_t scalar_count() {
    return std::is_array_v<T> ? std::extent_v<T> : 1;
}

}  // namespace detail

#define PG_STRUCT(S, python_name, struct_role)                             \
    template <>                                                            \
    struct CStruct<S> {                                                    \
        static constexpr const char* name = #S;                            \
        static constexpr StructRole role = StructRole::struct_role;        \
        static constexpr FieldInfo fields[] = {
#define PG_FIELD(S, field, field_kind)                                                             \
    FieldInfo{#field, offsetof(S, field), sizeof(std::declval<S&>().field),                        \
              alignof(decltype(std::declval<S&>().field)),                                         \
              detail::scalar_count<decltype(std::declval<S&>().field)>(), FieldKind::field_kind},
#define PG_STRUCT_END(S)                                                                           \
    };                                                                                             \
    }                                                                                              \
    ;                                                                                              \
    static_assert(detail::list_is_complete<S>,                                                \
                  "core/c_struct_fields.def does not list the fields of " #S " as phonegpt.h declares them");
#include "core/c_struct_fields.def"

// Throws PG_ERR_INVALID_ARGUMENT naming `where` unless s.struct_size covers at least the
// struct's first field and is not absurdly large (an unset field).
template <class S>
void check_struct_size(const S& s, const char* where) {
    const std::size_t first_end = CStruct<S>::fields[0].offset + CStruct<S>::fields[0].size;
    if (s.struct_size >= first_end && s.struct_size <= kMaxStructSize) return;
    std::string how = std::string("set it to sizeof(") + CStruct<S>::name + ")";
    if (CStruct<S>::role == StructRole::PG_OPTIONS) how += " with " + std::string(CStruct<S>::name) + "_default()";
    throw Error(PG_ERR_INVALID_ARGUMENT, std::string(where) + ": " + CStruct<S>::name + ".struct_size = " +
                                             std::to_string(s.struct_size) + " is not set (" + how + ")");
}

// The caller's struct `in` read over `defaults` (full size): the fields in's struct_size covers
// completely come from `in`, the others from `defaults`. Bytes past in.struct_size are never read.
template <class S>
S read_c_struct(const S& in, S defaults, const char* where) {
    check_struct_size(in, where);
    const auto* src = reinterpret_cast<const unsigned char*>(&in);
    auto* dst = reinterpret_cast<unsigned char*>(&defaults);
    for (const FieldInfo& f : CStruct<S>::fields)
        if (f.offset + f.size <= in.struct_size) std::memcpy(dst + f.offset, src + f.offset, f.size);
    defaults.struct_size = sizeof(S);
    return defaults;
}

// Writes the full-size `full` into the caller's `out`: every field its struct_size covers
// completely; nothing past it, and out->struct_size stays the caller's.
template <class S>
void write_c_struct(const S& full, S* out, const char* where) {
    check_struct_size(*out, where);
    const auto* src = reinterpret_cast<const unsigned char*>(&full);
    auto* dst = reinterpret_cast<unsigned char*>(out);
    const std::size_t room = out->struct_size;
    for (const FieldInfo& f : CStruct<S>::fields)
        if (f.offset + f.size <= room) std::memcpy(dst + f.offset, src + f.offset, f.size);
}

// The name of the first field whose bytes differ between a and b (nullptr: none differs).
template <class S>
const char* first_differing_field(const S& a, const S& b) {
    const auto* x = reinterpret_cast<const unsigned char*>(&a);
    const auto* y = reinterpret_cast<const unsigned char*>(&b);
    for (const FieldInfo& f : CStruct<S>::fields)
        if (std::memcmp(x + f.offset, y + f.offset, f.size) != 0) return f.name;
    return nullptr;
}

// Every field zero and struct_size = the full size: what the library fills in before handing a
// result or a default back.
template <class S>
S blank_c_struct() {
    static_assert(sizeof(CStruct<S>::fields) > 0, "a struct of core/c_struct_fields.def");
    S s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

}  // namespace pg
