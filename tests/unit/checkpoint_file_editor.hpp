// A native checkpoint taken apart and put back together (docs/formats.md), for the corruption
// tests: change one section, one table entry or one byte of a good file, with the header
// checksum recomputed (unless told otherwise).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "core/checksum.hpp"

namespace ckpt_test {

struct Section {
    std::string tag;
    uint32_t flags = 0;
    std::vector<uint8_t> payload;
};

struct TableEntry {
    std::string name;
    uint8_t dtype = 1;
    std::vector<uint64_t> shape;
    uint64_t offset = 0, nbytes = 0, checksum = 0;
};

// A native checkpoint taken apart (docs/formats.md) so a test can change one thing and put it
// back together with a correct header checksum (unless told otherwise).
struct File {
    uint8_t magic[8];
    uint16_t major = 0, minor = 0;
    uint32_t flags = 0;
    std::vector<Section> sections;
    std::vector<uint8_t> data;
    bool fix_checksum = true;
    uint64_t header_size_override = 0;  // 0 = the real size
    uint64_t header_shortfall = 0;      // the prelude declares (and hashes) this many bytes less

    static uint64_t u64(const uint8_t* p) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }

    explicit File(const std::vector<uint8_t>& b) {
        std::memcpy(magic, b.data(), 8);
        std::memcpy(&major, &b[8], 2);
        std::memcpy(&minor, &b[10], 2);
        std::memcpy(&flags, &b[12], 4);
        const uint64_t header = u64(&b[16]);
        std::size_t at = 32;
        while (at < 32 + header) {
            Section s;
            s.tag.assign(reinterpret_cast<const char*>(&b[at]), 4);
            std::memcpy(&s.flags, &b[at + 4], 4);
            const uint64_t len = u64(&b[at + 8]);
            s.payload.assign(b.begin() + long(at + 16), b.begin() + long(at + 16 + len));
            sections.push_back(std::move(s));
            at += 16 + len;
        }
        data.assign(b.begin() + long(at), b.end());
    }

    Section& section(const std::string& tag) {
        for (Section& s : sections)
            if (s.tag == tag) return s;
        FAIL("no section " << tag);
        throw 0;
    }
    void remove(const std::string& tag) {
        sections.erase(std::remove_if(sections.begin(), sections.end(), [&](const Section& s) { return s.tag == tag; }),
                       sections.end());
    }

    std::vector<TableEntry> table() {
        const std::vector<uint8_t>& p = section("TENS").payload;
        std::vector<TableEntry> out;
        uint32_t n;
        std::memcpy(&n, p.data(), 4);
        std::size_t at = 4;
        for (uint32_t i = 0; i < n; ++i) {
            TableEntry e;
            uint16_t len;
            std::memcpy(&len, &p[at], 2);
            e.name.assign(reinterpret_cast<const char*>(&p[at + 2]), len);
            at += 2 + len;
            e.dtype = p[at];
            const int dims = p[at + 1];
            at += 2;
            for (int d = 0; d < dims; ++d, at += 8) e.shape.push_back(u64(&p[at]));
            e.offset = u64(&p[at]);
            e.nbytes = u64(&p[at + 8]);
            e.checksum = u64(&p[at + 16]);
            at += 24;
            out.push_back(std::move(e));
        }
        return out;
    }
    void set_table(const std::vector<TableEntry>& entries, uint32_t count_override = 0) {
        pg::io::ByteWriter w;
        w.put<uint32_t>(count_override ? count_override : uint32_t(entries.size()));
        for (const TableEntry& e : entries) {
            w.put<uint16_t>(uint16_t(e.name.size()));
            w.put_bytes(e.name.data(), e.name.size());
            w.put<uint8_t>(e.dtype);
            w.put<uint8_t>(uint8_t(e.shape.size()));
            for (uint64_t s : e.shape) w.put<uint64_t>(s);
            w.put<uint64_t>(e.offset);
            w.put<uint64_t>(e.nbytes);
            w.put<uint64_t>(e.checksum);
        }
        section("TENS").payload = w.bytes();
    }

    std::vector<uint8_t> bytes() const {
        pg::io::ByteWriter header;
        for (const Section& s : sections) {
            header.put_bytes(s.tag.data(), 4);
            header.put<uint32_t>(s.flags);
            header.put<uint64_t>(s.payload.size());
            header.put_bytes(s.payload.data(), s.payload.size());
        }
        pg::io::ByteWriter w;
        w.put_bytes(magic, 8);
        w.put<uint16_t>(major);
        w.put<uint16_t>(minor);
        w.put<uint32_t>(flags);
        w.put<uint64_t>(header_size_override ? header_size_override : header.size() - header_shortfall);
        pg::io::Xxh64 h;
        h.update(w.bytes().data(), 24);
        h.update(header.bytes().data(), header.size() - header_shortfall);
        w.put<uint64_t>(fix_checksum ? h.digest() : h.digest() ^ 1);
        w.put_bytes(header.bytes().data(), header.size());
        w.put_bytes(data.data(), data.size());
        return w.bytes();
    }
};

// The table entry of tensor `name` (a test failure if there is none).
inline TableEntry& entry(std::vector<TableEntry>& t, const std::string& name) {
    for (TableEntry& e : t)
        if (e.name == name) return e;
    FAIL("no tensor " << name);
    throw 0;
}

template <class T>
inline void poke(std::vector<uint8_t>& bytes, std::size_t at, T value) {
    std::memcpy(&bytes[at], &value, sizeof value);
}

// Builders of a bad file from a good one: through File (a section or the table changed, the
// header checksum correct), or its bytes as they are.
using Build = std::function<std::vector<uint8_t>()>;
inline Build edit(const std::vector<uint8_t>& base, std::function<void(File&)> f) {
    return [base, f] {
        File file(base);
        f(file);
        return file.bytes();
    };
}
inline Build raw(const std::vector<uint8_t>& base, std::function<void(std::vector<uint8_t>&)> f) {
    return [base, f] {
        std::vector<uint8_t> b = base;
        f(b);
        return b;
    };
}
inline Build table_edit(const std::vector<uint8_t>& base, std::function<void(std::vector<TableEntry>&)> f) {
    return edit(base, [f](File& file) {
        auto t = file.table();
        f(t);
        file.set_table(t);
    });
}


}  // namespace ckpt_test
