// phonegpt export: a native checkpoint's weights as an llm.c or safetensors file.
#include "interop.hpp"
#include "core/file_io.hpp"

namespace cli {

pg_interop_format interop_format(const Options& opt) {
    if (!opt.has("format")) throw UsageError{"--format llmc|safetensors|hf is required"};
    const std::string f = opt.text("format", "");
    if (f == "llmc") return PG_FORMAT_LLMC;
    if (f == "safetensors") return PG_FORMAT_SAFETENSORS;
    if (f == "hf") return PG_FORMAT_HF_FOLDER;
    throw UsageError{"--format must be llmc, safetensors or hf, got \"" + f + "\""};
}

int cmd_export(int argc, char** argv) {
    Options opt("export",
                {
                    {"checkpoint", "PATH", "the native model to export (a model.bin or trainer.bin)"},
                    {"format", "KIND",
                     "llmc (llm.c model file), safetensors (Hugging Face GPT-2) or hf (a Hugging Face model "
                     "folder: config.json + model.safetensors, any family)"},
                    {"out", "PATH", "the file to write (safetensors: config.json is written beside it; hf: the folder)"},
                    {"json", nullptr, "print one JSON object of results on stdout"},
                    {"help", nullptr, "this help"},
                },
                argc, argv);
    if (opt.handle_help_and_output("--checkpoint PATH --format llmc|safetensors|hf --out PATH",
                                   "Writes a checkpoint's weights in llm.c's or Hugging Face's format. llm.c's\n"
                                   "file has no room for the tokenizer; safetensors keeps it in its metadata."))
        return 0;
    if (!opt.has("checkpoint")) throw UsageError{"--checkpoint PATH is required"};
    if (!opt.has("out")) throw UsageError{"--out PATH is required"};
    const pg_interop_format format = interop_format(opt);
    const std::string ckpt = opt.text("checkpoint", ""), out = opt.text("out", "");

    ModelPtr model = load_model(ckpt);
    const double t0 = now_seconds();
    check(pg_model_export(model.get(), format, out.c_str()), "pg_model_export");
    const double seconds = now_seconds() - t0;
    say("exported %s to %s (%s)%s\n", ckpt.c_str(), out.c_str(), opt.text("format", "").c_str(),
        format == PG_FORMAT_SAFETENSORS ? (", config.json in " + pg::io::parent_folder(out)).c_str() : "");
    if (g_output.json) {
        Json j;
        j.boolean("ok", true).str("command", "export").str("checkpoint", ckpt).str("format", opt.text("format", ""))
            .str("out", out).object("model", model_json(model.get())).num("seconds", seconds);
        print_result(j);
    }
    return 0;
}

}  // namespace cli
