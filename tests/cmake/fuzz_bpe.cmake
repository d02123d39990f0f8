# libFuzzer targets of the byte-level BPE tokenizer (owner: bpe), beside tests/cmake/fuzz.cmake's
# (this file sorts after it, so pg_fuzz_all exists): every BPE loader, and decode(encode(x)) == x
# on arbitrary bytes for the three pre-tokenizers. Same build and smoke runs (label "fuzz").
if(PG_FUZZ)
  pg_add_fuzzer(bpe_loaders 4096)
  pg_add_fuzzer(bpe_roundtrip 4096)
endif()
