// phonegpt import: an llm.c or safetensors model (or a native checkpoint, to re-save it) into a
// native checkpoint, with a tokenizer carried by the file, copied from a checkpoint, built from a
// text, or none; optionally with 16-bit or quantized weights or the mapping layout (pg_save_options).
#include "interop.hpp"

namespace cli {

int cmd_import(int argc, char** argv) {
    Options opt("import",
                {
                    {"format", "KIND",
                     "llmc (llm.c model file), safetensors (Hugging Face GPT-2), hf (a Hugging Face model folder: "
                     "Llama, Qwen2, Qwen3 or GPT-2) or native (a checkpoint, re-saved)"},
                    {"in", "PATH",
                     "the file to read (safetensors: with its config.json beside it; hf: the folder, whose "
                     "tokenizer.json is carried when present)"},
                    {"out", "PATH", "the native checkpoint to write (e.g. model.bin)"},
                    {"tokenizer-from", "PATH", "copy the tokenizer of this native checkpoint"},
                    {"vocab-text", "PATH", "build the character tokenizer from this text (as train does)"},
                    {"weights", "KIND",
                     "fp32 (default; hf: as the folder stores its matrices), fp16, bf16, q8_0 or q4_0: the frozen "
                     "base's storage in the file (16-bit and quantized files are mappable; hf reads 16-bit weights "
                     "without an fp32 copy; native quantizes a raw fp32 checkpoint while reading it)"},
                    {"align-for-mapping", nullptr, "write the mapping layout (lora train --map-base maps such a file)"},
                    {"json", nullptr, "print one JSON object of results on stdout"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    if (opt.handle_help_and_output("--format llmc|safetensors|hf|native --in PATH --out PATH [options]",
                                   "Reads an llm.c, safetensors or Hugging Face model into a native checkpoint.\n"
                                   "llm.c files\n"
                                   "hold no tokenizer (safetensors files written by phonegpt do): give one with\n"
                                   "--tokenizer-from or --vocab-text, or the checkpoint has none (eval and\n"
                                   "sample then refuse it)."))
        return 0;
    const bool native = opt.text("format", "") == "native";
    const pg_interop_format format = native ? PG_FORMAT_LLMC : interop_format(opt);
    int32_t weights = -1;
    if (opt.has("weights")) weights = weight_storage_named(opt.text("weights", ""), true, "weights");
    if (weights == PG_WEIGHTS_FP16_ARITHMETIC || weights == PG_WEIGHTS_BF16_ARITHMETIC)
        throw UsageError{"--weights: a file holds fp32, fp16, bf16, q8_0 or q4_0 weights (the arithmetic is chosen "
                         "when the model is used: --arithmetic)"};
    const bool quantized = weights == PG_WEIGHTS_Q8_0 || weights == PG_WEIGHTS_Q4_0;
    if (!opt.has("in")) throw UsageError{"--in PATH is required"};
    if (!opt.has("out")) throw UsageError{"--out PATH is required"};
    if (opt.has("tokenizer-from") && opt.has("vocab-text"))
        throw UsageError{"--tokenizer-from and --vocab-text are alternatives: give one"};
    const std::string in = opt.text("in", ""), out = opt.text("out", "");
    if (opt.has("vocab-text") && !file_exists(opt.text("vocab-text", "")))
        throw UsageError{"--vocab-text: no file at \"" + opt.text("vocab-text", "") + "\""};

    pg_model* m = nullptr;
    // A Hugging Face folder is read straight into the storage asked for, then saved as held.
    const bool hf = !native && format == PG_FORMAT_HF_FOLDER;
    if (native) {
        pg_load_options lo;
        pg_load_options_default(&lo);
        if (quantized) lo.weight_storage = weights;  // quantized while reading
        check(pg_model_load_with(in.c_str(), &lo, &m), "pg_model_load_with");
    } else {
        pg_load_options lo;
        pg_load_options_default(&lo);
        if (hf) lo.weight_storage = weights;
        check(pg_model_import_with(format, in.c_str(), &lo, &m), "pg_model_import");
    }
    ModelPtr model(m);
    if (quantized && !native && !hf) check(pg_model_set_weight_storage(model.get(), pg_weight_storage(weights)), "pg_model_set_weight_storage");
    if (hf || quantized) weights = -1;  // saved as held
    // This library's safetensors files carry the tokenizer in their metadata; llm.c files never do.
    const pg_tokenizer* carried = nullptr;
    check(pg_model_get_tokenizer(model.get(), &carried), "pg_model_get_tokenizer");
    std::string tokenizer_source = carried ? (hf ? "the folder's tokenizer" : "the imported file") : "none";
    if (opt.has("tokenizer-from")) {
        const std::string donor_path = opt.text("tokenizer-from", "");
        ModelPtr donor = load_model(donor_path);
        const pg_tokenizer* tok = nullptr;
        check(pg_model_get_tokenizer(donor.get(), &tok), "pg_model_get_tokenizer");
        if (!tok)
            throw RuntimeError{"--tokenizer-from: \"" + donor_path + "\" has no tokenizer", "PG_ERR_STATE",
                               std::nullopt};
        check(pg_model_set_tokenizer(model.get(), tok), "pg_model_set_tokenizer");
        tokenizer_source = donor_path;
    } else if (opt.has("vocab-text")) {
        const std::string text = read_file(opt.text("vocab-text", ""));
        pg_tokenizer* built = nullptr;
        check(pg_tokenizer_create_char(text.data(), text.size(), &built), "pg_tokenizer_create_char");
        TokenizerPtr owned(built);
        check(pg_model_set_tokenizer(model.get(), built), "pg_model_set_tokenizer");
        tokenizer_source = opt.text("vocab-text", "");
    }
    pg_save_options so;
    pg_save_options_default(&so);
    so.weight_storage = weights;
    so.align_for_mapping = opt.has("align-for-mapping") ? 1 : 0;
    check(pg_model_save(model.get(), out.c_str(), &so), "pg_model_save");
    say("imported %s (%s) to %s; tokenizer: %s\n", in.c_str(), opt.text("format", "").c_str(), out.c_str(),
        tokenizer_source == "none" ? "none (give --tokenizer-from or --vocab-text to add one)"
                                   : tokenizer_source.c_str());
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "import").str("format", opt.text("format", "")).str("in", in)
            .str("out", out).object("model", model_json(model.get()))
            .boolean("has_tokenizer", tokenizer_source != "none").str("tokenizer_from", tokenizer_source);
        print_result(j);
    }
    return 0;
}

}  // namespace cli
